#!/usr/bin/env bats
# C unit tests of the library code that needs no namespace: the baseline
# layout of a container checked as plan ops (tests/unit/layout_test.c), what
# differs between host architectures (arch_test.c), the decoders' mapped
# input (source_test.c), the blocks between the decompressor and the
# extracting thread (handoff_test.c) and gzip through that thread with ISA-L
# (gzip_test.c), a Slurm step's GPU ceiling (slurm_test.c), and the pure
# parsers beside their fuzz targets: device specs and capabilities
# (gpuspec_test.c), NVIDIA_REQUIRE_* expressions (require_test.c), image
# references, challenges and platforms (ref_test.c) and CDI specs
# (cdi_test.c), and a --user's supplementary groups from the image's
# /etc/group (user_test.c), built under ASan/UBSan by `make unit`.
# A missing binary is a failure.  The units launch no container and need no
# privilege, so tests/run-bats.sh runs this suite once.
# run-bats: mode-independent

load lib/common

UNIT_LAYOUT="$TESTS_BUILD/unit_layout"
UNIT_ARCH="$TESTS_BUILD/unit_arch"
UNIT_SOURCE="$TESTS_BUILD/unit_source"
UNIT_HANDOFF="$TESTS_BUILD/unit_handoff"
UNIT_GZIP="$TESTS_BUILD/unit_gzip"
UNIT_SLURM="$TESTS_BUILD/unit_slurm"
UNIT_GPUSPEC="$TESTS_BUILD/unit_gpuspec"
UNIT_REQUIRE="$TESTS_BUILD/unit_require"
UNIT_REF="$TESTS_BUILD/unit_ref"
UNIT_CDI="$TESTS_BUILD/unit_cdi"
UNIT_USER="$TESTS_BUILD/unit_user"

setup() {
	[[ -x "$UNIT_LAYOUT" ]] || fail "$UNIT_LAYOUT is missing: run 'make unit'"
	[[ -x "$UNIT_ARCH" ]] || fail "$UNIT_ARCH is missing: run 'make unit'"
	[[ -x "$UNIT_SOURCE" ]] || fail "$UNIT_SOURCE is missing: run 'make unit'"
	[[ -x "$UNIT_HANDOFF" ]] || fail "$UNIT_HANDOFF is missing: run 'make unit'"
	[[ -x "$UNIT_GZIP" ]] || fail "$UNIT_GZIP is missing: run 'make unit'"
	[[ -x "$UNIT_SLURM" ]] || fail "$UNIT_SLURM is missing: run 'make unit'"
	[[ -x "$UNIT_GPUSPEC" ]] || fail "$UNIT_GPUSPEC is missing: run 'make unit'"
	[[ -x "$UNIT_REQUIRE" ]] || fail "$UNIT_REQUIRE is missing: run 'make unit'"
	[[ -x "$UNIT_REF" ]] || fail "$UNIT_REF is missing: run 'make unit'"
	[[ -x "$UNIT_CDI" ]] || fail "$UNIT_CDI is missing: run 'make unit'"
	[[ -x "$UNIT_USER" ]] || fail "$UNIT_USER is missing: run 'make unit'"
}

unit_case() {
	run "$UNIT_LAYOUT" "$1"
	assert_success
}

arch_case() {
	run "$UNIT_ARCH" "$1"
	assert_success
}

source_case() {
	run "$UNIT_SOURCE" "$1"
	assert_success
}

handoff_case() {
	run "$UNIT_HANDOFF" "$1"
	assert_success
}

gzip_case() {
	run "$UNIT_GZIP" "$1"
	assert_success
}

slurm_case() {
	run "$UNIT_SLURM" "$1"
	assert_success
}

gpuspec_case() {
	run "$UNIT_GPUSPEC" "$1"
	assert_success
}

require_case() {
	run "$UNIT_REQUIRE" "$1"
	assert_success
}

ref_case() {
	run "$UNIT_REF" "$1"
	assert_success
}

cdi_case() {
	run "$UNIT_CDI" "$1"
	assert_success
}

user_case() {
	run "$UNIT_USER" "$1"
	assert_success
}

# cases_match BINARY FUNCTION: the binary's cases are exactly those this
# file runs through FUNCTION.
cases_match() {
	run "$1" --list
	assert_success
	local listed mine
	listed=$(sort <<<"$output")
	mine=$(grep -o "$2 [a-z][a-z-]*;" "$BATS_TEST_FILENAME" | tr -d ';' | cut -d' ' -f2 | sort)
	[[ "$listed" == "$mine" ]] || fail "cases in $1 and in unit.bats differ: $(diff <(echo "$listed") <(echo "$mine"))"
}

@test "every unit case is run by this file" {
	cases_match "$UNIT_LAYOUT" unit_case
	cases_match "$UNIT_ARCH" arch_case
	cases_match "$UNIT_SOURCE" source_case
	cases_match "$UNIT_HANDOFF" handoff_case
	cases_match "$UNIT_GZIP" gzip_case
	cases_match "$UNIT_SLURM" slurm_case
	cases_match "$UNIT_GPUSPEC" gpuspec_case
	cases_match "$UNIT_REQUIRE" require_case
	cases_match "$UNIT_REF" ref_case
	cases_match "$UNIT_CDI" cdi_case
	cases_match "$UNIT_USER" user_case
}

@test "an archive root keeps owners as root, in a private tmpfs" { unit_case archive-root; }
@test "an unprivileged archive root drops owners and setuid bits" { unit_case archive-user; }
@test "a directory image is an overlay" { unit_case directory-root; }
@test "an unprivileged overlay uses userxattr, and the printed line says so" { unit_case directory-user; }
@test "/dev is a private tmpfs with six checked device nodes, devpts and shm" { unit_case dev; }
@test "--net none and --hostname give lo, a fresh sysfs and no host network files" { unit_case net-none-hostname; }
@test "volumes: flags, file or directory, and every malformed spec refused" { unit_case volumes; }
@test "workdir before the pivot, ldconfig after it, read-only last" { unit_case finish; }
@test "every fresh mount prints its type, flags and data" { unit_case mount-data-printed; }
@test "the read-only /proc paths are printed" { unit_case proc-readonly-printed; }
@test "\$LIBDIR expands by the Debian rule; only per-mount flags become attributes" { unit_case libdir; }
@test "\$LIBDIR32 follows nvidia-container-cli's 32-bit rule and \$LIBDIR never swallows it" { unit_case libdir-compat; }
@test "ld.so.cache entries count for the host's architecture only: x86-64 0x0303, AArch64 0x0a03, their 32-bit kin" { arch_case ldcache-flags; }
@test "the Debian lib dir follows the architecture: /usr/lib/aarch64-linux-gnu on aarch64 hosts" { arch_case libdir; }
@test "a regular file is mapped from its offset, which ends where read() would leave it" { source_case maps-from-offset; }
@test "a range of a file is mapped; a range past its end is left to read()" { source_case range; }
@test "a pipe, or a file with nothing left, is read and not mapped" { source_case not-mappable; }
@test "a file cut short under the decoder stops it with an error, not a SIGBUS" { source_case shrinks-under-the-reader; }
@test "a file cut short before the decoder reads on is seen without a signal" { source_case shrinks-before-the-read; }
@test "reading a mapped 48 MiB file leaves the resident size under 8 MiB larger" { source_case resident-size-stays-small; }
@test "a file cut short under the tar reader reads as zeros past the cut, and the cut is reported" { source_case watched-shrinks-under-the-reader; }
@test "a watched file left whole is not reported; one cut after it was read is" { source_case watched-whole-and-shrunk-after; }
@test "a skip through a mapping lands on the next member, and stops at the end of a cut file" { source_case mapped-skip-stops-at-the-end; }
@test "decompressed blocks reach the extracting thread whole and in order" { handoff_case in-order; }
@test "a block given back is the next filled: a reader that keeps up uses the first two blocks" { handoff_case reuses-the-block-given-back; }
@test "the decompressor fills the whole pool ahead of the reader, then waits for a block back" { handoff_case backlog-then-wait; }
@test "a reader that stops early frees the decompressor waiting for room" { handoff_case reader-gone-frees-the-writer; }
@test "a block's mark reaches the reader with it, an empty marked block is no end" { handoff_case marks; }
@test "three gzip members arriving 1 byte to 1 MiB at a time inflate whole: every header and trailer cut" { gzip_case members-in-pieces; }
@test "bytes after the last gzip member that start no member end the stream quietly" { gzip_case bytes-after-the-last-member; }
@test "a gzip member whose CRC-32 does not match is refused by the extracting side, first or last member" { gzip_case wrong-crc; }
@test "a gzip member whose length field does not match is refused" { gzip_case wrong-length; }
@test "gzip input cut inside a trailer or inside deflate data is truncated" { gzip_case truncated; }
@test "SLURM_STEP_GPUS lists: indexes and ranges, nothing malformed" { slurm_case indexes; }
@test "Slurm host lists match names with ranges and zero padding" { slurm_case hostlist; }
@test "gres.conf File= lists expand in order, brackets and commas" { slurm_case files; }
@test "gres.conf: this node's GPU files in order; AutoDetect, Count without File, MultipleFiles, Include refused" { slurm_case gres; }
@test "a host's short name is the part before the first dot" { slurm_case short-name; }
@test "within a Slurm ceiling, all, indexes, UUIDs and bus ids resolve to allocated GPUs only" { slurm_case resolve; }
@test "a MIG item's GPU index counts within the allocation" { slurm_case mig-item; }
@test "device specs: void over none over all anywhere in the list, void and none in lower case only" { gpuspec_case keywords; }
@test "device items: indexes, GPU-<uuid>, PCI bus ids and MIG devices; anything else refused by name" { gpuspec_case items; }
@test "PCI bus ids normalise to NVML's form; a device over 0x1f or a function over 7 is none" { gpuspec_case busids; }
@test "docker's --gpus CSV: count=, device= quoted or not, capabilities=, driver=nvidia, and each bad field refused" { gpuspec_case docker; }
@test "a device spec resolves to GPUs of the table by index, UUID in any case or bus id, or names the unknown device" { gpuspec_case resolve; }
@test "an unknown device's hint names a GPU without a UUID and the GPUs the driver excludes" { gpuspec_case resolve-hints; }
@test "driver capabilities: lower-case names, spaces and empty items ignored, what each injects" { gpuspec_case caps; }
@test "NVIDIA_REQUIRE_* syntax: keys in any case, six operators, brands only = and !=, every bad term named" { require_case syntax; }
@test "requirements: terms by commas all hold, alternatives by spaces one holds, the first one named when none does" { require_case eval; }
@test "an unknown requirement fact satisfies, except the arch of a GPU gpurun cannot name" { require_case unknown-facts; }
@test "versions compare per component as numbers of any length, trailing zeros ignored" { require_case versions; }
@test "a requirement names the cuda and arch keys it uses" { require_case uses; }
@test "image references normalise as docker's: docker.io, library/, latest, registries by dot, port or localhost" { ref_case normalise; }
@test "image reference tags, sha256 digests and repository names, each bad one refused with its message" { ref_case tags-digests; }
@test "image reference registry hosts: names, ports and IPv6; credentials refused and never echoed" { ref_case registries; }
@test "image references longer than docker allows are refused; the message cuts the input" { ref_case lengths; }
@test "an image reference's canonical string is registry/repo with its tag, its digest or both" { ref_case canonical; }
@test "WWW-Authenticate: the first challenge's scheme, realm, service, scope and error; malformed ones refused" { ref_case challenges; }
@test "platforms are os/arch[/variant] of short, plain parts" { ref_case platforms; }
@test "CDI specs in YAML and JSON parse to their devices and every containerEdits field" { cdi_case accepted; }
@test "a CDI spec's version, kind, devices and fields are checked, each refusal naming its line" { cdi_case spec-refused; }
@test "CDI containerEdits: relative paths, bad nodes, mounts, hooks and env refused; additionalGIDs, intelRdt, netDevices named" { cdi_case edits-refused; }
@test "CDI specs: no YAML aliases, one document, bounded nesting, strings, lists and size" { cdi_case yaml-refused; }
@test "--device names are vendor.com/class=name, checked as the spec's" { cdi_case qualified-names; }
@test "a user's supplementary groups: exact member names, bad lines skipped, the primary and duplicates left out" { user_case memberships; }
@test "supplementary groups come only without a group in --user, for a user with a passwd entry; past the cap is one line" { user_case lookup; }
