#!/usr/bin/env bats
# C unit tests of the library code that needs no namespace: the baseline
# layout of a container checked as plan ops, and the launch's steps around
# them with the process that takes each (tests/unit/layout_test.c), what
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

# The unit binaries, tests/build/unit_NAME (tests/unit/NAME_test.c).
UNITS=(layout arch source handoff gzip slurm gpuspec require ref cdi user)

setup() {
	local u
	for u in "${UNITS[@]}"; do
		[[ -x "$TESTS_BUILD/unit_$u" ]] || fail "$TESTS_BUILD/unit_$u is missing: run 'make unit'"
	done
}

# unit NAME CASE: the case CASE of the unit binary NAME passes.
unit() {
	run "$TESTS_BUILD/unit_$1" "$2"
	assert_success
}

# cases_match NAME: the binary's cases are exactly those this file runs
# with `unit NAME`.
cases_match() {
	run "$TESTS_BUILD/unit_$1" --list
	assert_success
	local listed mine
	listed=$(sort <<<"$output")
	mine=$(grep -o "{ unit $1 [a-z][a-z-]*;" "$BATS_TEST_FILENAME" | tr -d ';' | cut -d' ' -f4 | sort)
	[[ "$listed" == "$mine" ]] || fail "cases in unit_$1 and in unit.bats differ: $(diff <(echo "$listed") <(echo "$mine"))"
}

@test "every unit case is run by this file" {
	local u
	for u in "${UNITS[@]}"; do
		cases_match "$u"
	done
}

@test "an archive root keeps owners as root, in a private tmpfs" { unit layout archive-root; }
@test "an unprivileged archive root drops owners and setuid bits" { unit layout archive-user; }
@test "a directory image is an overlay" { unit layout directory-root; }
@test "an unprivileged overlay uses userxattr, and the printed line says so" { unit layout directory-user; }
@test "/dev is a private tmpfs with six checked device nodes, devpts and shm" { unit layout dev; }
@test "--net none and --hostname give lo, a fresh sysfs and no host network files" { unit layout net-none-hostname; }
@test "volumes: flags, file or directory, and every malformed spec refused" { unit layout volumes; }
@test "workdir before the pivot, ldconfig after it, read-only last" { unit layout finish; }
@test "a run of library binds is one step over lines of at most 150 characters, its comment on the last" { unit layout group-lines; }
@test "the remounts below /sys name a mount's directory once, and the directory mounts that head none share" { unit layout remount-below; }
@test "the plan is the whole launch in one list, in the order it is taken, each entry with the process that takes it" { unit layout actors; }
@test "with one id mapped, --user's command sheds its privileges after the go-ahead" { unit layout steps-late; }
@test "HOME is decided once, with the credentials, and printed as the command gets it" { unit layout home-once; }
@test "every fresh mount prints its type, flags and data" { unit layout mount-data-printed; }
@test "the read-only /proc paths are printed" { unit layout proc-readonly-printed; }
@test "\$LIBDIR expands by the Debian rule; only per-mount flags become attributes" { unit layout libdir; }
@test "\$LIBDIR32 follows nvidia-container-cli's 32-bit rule and \$LIBDIR never swallows it" { unit layout libdir-compat; }
@test "ld.so.cache entries count for the host's architecture only: x86-64 0x0303, AArch64 0x0a03, their 32-bit kin" { unit arch ldcache-flags; }
@test "the Debian lib dir follows the architecture: /usr/lib/aarch64-linux-gnu on aarch64 hosts" { unit arch libdir; }
@test "a regular file is mapped from its offset, which ends where read() would leave it" { unit source maps-from-offset; }
@test "a range of a file is mapped; a range past its end is left to read()" { unit source range; }
@test "a pipe, or a file with nothing left, is read and not mapped" { unit source not-mappable; }
@test "a file cut short under the decoder stops it with an error, not a SIGBUS" { unit source shrinks-under-the-reader; }
@test "a file cut short before the decoder reads on is seen without a signal" { unit source shrinks-before-the-read; }
@test "reading a mapped 48 MiB file leaves the resident size under 8 MiB larger" { unit source resident-size-stays-small; }
@test "a file cut short under the tar reader reads as zeros past the cut, and the cut is reported" { unit source watched-shrinks-under-the-reader; }
@test "a watched file left whole is not reported; one cut after it was read is" { unit source watched-whole-and-shrunk-after; }
@test "a skip through a mapping lands on the next member, and stops at the end of a cut file" { unit source mapped-skip-stops-at-the-end; }
@test "decompressed blocks reach the extracting thread whole and in order" { unit handoff in-order; }
@test "a block given back is the next filled: a reader that keeps up uses the first two blocks" { unit handoff reuses-the-block-given-back; }
@test "the decompressor fills the whole pool ahead of the reader, then waits for a block back" { unit handoff backlog-then-wait; }
@test "a reader that stops early frees the decompressor waiting for room" { unit handoff reader-gone-frees-the-writer; }
@test "a block's mark reaches the reader with it, an empty marked block is no end" { unit handoff marks; }
@test "three gzip members arriving 1 byte to 1 MiB at a time inflate whole: every header and trailer cut" { unit gzip members-in-pieces; }
@test "bytes after the last gzip member that start no member end the stream quietly" { unit gzip bytes-after-the-last-member; }
@test "a gzip member whose CRC-32 does not match is refused by the extracting side, first or last member" { unit gzip wrong-crc; }
@test "a gzip member whose length field does not match is refused" { unit gzip wrong-length; }
@test "gzip input cut inside a trailer or inside deflate data is truncated" { unit gzip truncated; }
@test "SLURM_STEP_GPUS lists: indexes and ranges, nothing malformed" { unit slurm indexes; }
@test "Slurm host lists match names with ranges and zero padding" { unit slurm hostlist; }
@test "gres.conf File= lists expand in order, brackets and commas" { unit slurm files; }
@test "gres.conf: this node's GPU files in order; AutoDetect, Count without File, MultipleFiles, Include refused" { unit slurm gres; }
@test "a host's short name is the part before the first dot" { unit slurm short-name; }
@test "within a Slurm ceiling, all, indexes, UUIDs and bus ids resolve to allocated GPUs only" { unit slurm resolve; }
@test "a MIG item's GPU index counts within the allocation" { unit slurm mig-item; }
@test "device specs: void over none over all anywhere in the list, void and none in lower case only" { unit gpuspec keywords; }
@test "device items: indexes, GPU-<uuid>, PCI bus ids and MIG devices; anything else refused by name" { unit gpuspec items; }
@test "PCI bus ids normalise to NVML's form; a device over 0x1f or a function over 7 is none" { unit gpuspec busids; }
@test "docker's --gpus CSV: count=, device= quoted or not, capabilities=, driver=nvidia, and each bad field refused" { unit gpuspec docker; }
@test "a device spec resolves to GPUs of the table by index, UUID in any case or bus id, or names the unknown device" { unit gpuspec resolve; }
@test "an unknown device's hint names a GPU without a UUID and the GPUs the driver excludes" { unit gpuspec resolve-hints; }
@test "driver capabilities: lower-case names, spaces and empty items ignored, what each injects" { unit gpuspec caps; }
@test "NVIDIA_REQUIRE_* syntax: keys in any case, six operators, brands only = and !=, every bad term named" { unit require syntax; }
@test "requirements: terms by commas all hold, alternatives by spaces one holds, the first one named when none does" { unit require eval; }
@test "an unknown requirement fact satisfies, except the arch of a GPU gpurun cannot name" { unit require unknown-facts; }
@test "versions compare per component as numbers of any length, trailing zeros ignored" { unit require versions; }
@test "a requirement names the cuda and arch keys it uses" { unit require uses; }
@test "image references normalise as docker's: docker.io, library/, latest, registries by dot, port or localhost" { unit ref normalise; }
@test "image reference tags, sha256 digests and repository names, each bad one refused with its message" { unit ref tags-digests; }
@test "image reference registry hosts: names, ports and IPv6; credentials refused and never echoed" { unit ref registries; }
@test "image references longer than docker allows are refused; the message cuts the input" { unit ref lengths; }
@test "an image reference's canonical string is registry/repo with its tag, its digest or both" { unit ref canonical; }
@test "WWW-Authenticate: the first challenge's scheme, realm, service, scope and error; malformed ones refused" { unit ref challenges; }
@test "platforms are os/arch[/variant] of short, plain parts" { unit ref platforms; }
@test "CDI specs in YAML and JSON parse to their devices and every containerEdits field" { unit cdi accepted; }
@test "a CDI spec's version, kind, devices and fields are checked, each refusal naming its line" { unit cdi spec-refused; }
@test "CDI containerEdits: relative paths, bad nodes, mounts, hooks and env refused; additionalGIDs, intelRdt, netDevices named" { unit cdi edits-refused; }
@test "CDI specs: no YAML aliases, one document, bounded nesting, strings, lists and size" { unit cdi yaml-refused; }
@test "--device names are vendor.com/class=name, checked as the spec's" { unit cdi qualified-names; }
@test "a user's supplementary groups: exact member names, bad lines skipped, the primary and duplicates left out" { unit user memberships; }
@test "supplementary groups come only without a group in --user, for a user with a passwd entry; past the cap is one line" { unit user lookup; }
