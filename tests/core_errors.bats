#!/usr/bin/env bats
# Every failure is one line "gpurun: <what>: <object>: <reason>" on stderr,
# exit 125 (126/127 for the command itself), and leaves the host as it was.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

teardown() {
	chmod -R u+rwX "$BATS_TEST_TMPDIR" 2>/dev/null || true
}

# gpurun_fails STATUS FRAGMENT... -- GPURUN ARGS: run gpurun, expect the
# error, then the host must be unchanged.
gpurun_fails() {
	local want=$1 frags=()
	shift
	while [[ $1 != -- ]]; do
		frags+=("$1")
		shift
	done
	shift
	run "-$want" --separate-stderr "$GPURUN" "$@" </dev/null
	assert_gpurun_error "$want" "${frags[@]}"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# ---- the image ----------------------------------------------------------------

@test "a missing image: 'gpurun: image PATH: No such file or directory', 125" {
	gpurun_fails 125 -- /nonexistent.tar /bin/true
	assert_equal "${stderr_lines[0]}" "gpurun: image /nonexistent.tar: No such file or directory"
}

@test "an unreadable image: Permission denied, 125" {
	skip_unless_user "root reads any file"
	cp "$BUSYBOX_TGZ" "$BATS_TEST_TMPDIR/secret.tar.gz"
	chmod 0000 "$BATS_TEST_TMPDIR/secret.tar.gz"
	gpurun_fails 125 "$BATS_TEST_TMPDIR/secret.tar.gz" "Permission denied" -- \
		"$BATS_TEST_TMPDIR/secret.tar.gz" /bin/true
}

@test "an unreadable directory image: Permission denied, 125" {
	skip_unless_user "root reads any directory"
	mkdir -p "$BATS_TEST_TMPDIR/locked/img"
	chmod 0000 "$BATS_TEST_TMPDIR/locked"
	gpurun_fails 125 "Permission denied" -- "$BATS_TEST_TMPDIR/locked/img" /bin/true
}

@test "unprivileged, / as an image is refused in one line naming the mounts under it, 125" {
	skip_unless_user "as root / is overlaid like any directory image"
	slash_overlay_refused || skip "this kernel lets a user namespace stack an overlay on /"
	# What the launch sees under /: this test's mount table, which it copies.
	local subs list
	mapfile -t subs < <(awk '$5 != "/" { print $5 }' /proc/self/mountinfo | LC_ALL=C sort -u)
	list="${subs[0]}, ${subs[1]}, ${subs[2]}"
	((${#subs[@]} > 3)) && list+=" and $((${#subs[@]} - 3)) more"
	gpurun_fails 125 -- / /bin/true
	assert_equal "$stderr" "gpurun: image /: unprivileged, overlayfs cannot stack on a directory with other file systems mounted under it ($list: this user namespace may not look past them); run as root, or give an image archive or a directory with nothing mounted under it"
}

@test "an empty file: 'empty file', 125" {
	: >"$BATS_TEST_TMPDIR/empty.tar"
	gpurun_fails 125 "$BATS_TEST_TMPDIR/empty.tar" "empty file" -- "$BATS_TEST_TMPDIR/empty.tar" /bin/true
}

@test "random bytes are not an image: 125, the image named" {
	head -c 65536 /dev/urandom >"$BATS_TEST_TMPDIR/random.tar"
	gpurun_fails 125 "$BATS_TEST_TMPDIR/random.tar" -- "$BATS_TEST_TMPDIR/random.tar" /bin/true
}

@test "a text file is not an image: 125, the image named" {
	printf 'just some text\n%.0s' {1..100} >"$BATS_TEST_TMPDIR/notes.txt"
	gpurun_fails 125 "$BATS_TEST_TMPDIR/notes.txt" -- "$BATS_TEST_TMPDIR/notes.txt" /bin/true
}

@test "a zip archive is refused: 125, the image named" {
	/usr/bin/python3 -c '
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("bin/sh", "#!/bin/true\n")
    z.writestr("etc/hostname", "zip\n")' "$BATS_TEST_TMPDIR/image.zip"
	gpurun_fails 125 "$BATS_TEST_TMPDIR/image.zip" -- "$BATS_TEST_TMPDIR/image.zip" /bin/true
}

@test "a 7z archive is refused: 125, the image named" {
	# The 7z signature and start header, then garbage.
	{
		printf '7z\xbc\xaf\x27\x1c\x00\x04'
		head -c 4096 /dev/urandom
	} >"$BATS_TEST_TMPDIR/image.7z"
	gpurun_fails 125 "$BATS_TEST_TMPDIR/image.7z" -- "$BATS_TEST_TMPDIR/image.7z" /bin/true
}

# cut_in_half IN OUT: the first half (plus a bit, so the cut is mid-block).
cut_in_half() {
	head -c $(($(stat -c %s "$1") / 2 + 77)) "$1" >"$2"
}

@test "a truncated .tar.gz: 'unpack', 125" {
	cut_in_half "$BUSYBOX_TGZ" "$BATS_TEST_TMPDIR/half.tar.gz"
	gpurun_fails 125 "unpack" -- "$BATS_TEST_TMPDIR/half.tar.gz" /bin/true
}

@test "a truncated plain .tar: 'unpack', 125" {
	cut_in_half "$BUSYBOX_TAR" "$BATS_TEST_TMPDIR/half.tar"
	gpurun_fails 125 "unpack" -- "$BATS_TEST_TMPDIR/half.tar" /bin/true
}

@test "a tar with a corrupt header in the middle: 125, the image named" {
	local tar=$BATS_TEST_TMPDIR/corrupt.tar offsets hdr
	cp "$BUSYBOX_TAR" "$tar"
	# The tenth header: its "ustar" magic is at offset 257.
	mapfile -t offsets < <(grep -obUa 'ustar' "$tar" | cut -d: -f1)
	hdr=$((offsets[10] - 257))
	# Garbage over the size and checksum fields.
	printf 'XXXXXXXXXXXX@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@' |
		dd of="$tar" bs=1 seek=$((hdr + 124)) conv=notrunc status=none
	gpurun_fails 125 "$tar" -- "$tar" /bin/true
}

@test "a corrupt gzip stream: 'unpack', 125" {
	local tgz=$BATS_TEST_TMPDIR/corrupt.tar.gz
	cp "$BUSYBOX_TGZ" "$tgz"
	head -c 4096 /dev/urandom | dd of="$tgz" bs=1 seek=$(($(stat -c %s "$tgz") / 2)) conv=notrunc status=none
	gpurun_fails 125 "unpack" -- "$tgz" /bin/true
}

# ---- the command ------------------------------------------------------------------

@test "a command that is not found: 127, 'not found', host unchanged" {
	gpurun_fails 127 "/bin/nope" "not found" -- "$BUSYBOX_TGZ" /bin/nope
}

@test "a command that is not executable: 126, host unchanged" {
	gpurun_fails 126 "/etc/passwd" -- "$BUSYBOX_TGZ" /etc/passwd
}

@test "an image without /bin/sh and no command: 127" {
	local img
	img=$(image_copy busybox)
	rm "$img/bin/sh"
	gpurun_fails 127 "/bin/sh" -- "$img"
}

# ---- options ---------------------------------------------------------------------

@test "no IMAGE: a usage error, 125" {
	gpurun_fails 125 -- --verbose
	[[ "$stderr" =~ [Uu]sage|IMAGE ]] || fail "no usage hint: $stderr"
}

@test "no arguments at all: the usage on stderr, 125" {
	run -125 --separate-stderr "$GPURUN" </dev/null
	assert_output ""
	[[ "$stderr" == *"gpurun [run] [OPTIONS] IMAGE"* ]] || fail "no usage on stderr: $stderr"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "an unknown option names it: --frobnicate, 125" {
	gpurun_fails 125 "--frobnicate" -- --frobnicate "$BUSYBOX_DIR" /bin/true
}

@test "--net with an unknown value names --net, 125" {
	gpurun_fails 125 "--net" -- --net foo "$BUSYBOX_DIR" /bin/true
}

@test "--gpus with garbage, 125" {
	gpurun_fails 125 "gpurun-garbage" -- --gpus gpurun-garbage "$BUSYBOX_DIR" /bin/true
}

@test "-u with an empty value, 125" {
	gpurun_fails 125 -- -u '' "$BUSYBOX_DIR" /bin/true
	[[ "${stderr_lines[0]}" =~ -u|--user|user ]] || fail "the option is not named: $stderr"
}

@test "an option missing its value (--hostname at the end), 125" {
	gpurun_fails 125 "--hostname" -- --hostname
}

# ---- volumes ---------------------------------------------------------------------

@test "-v with a source that does not exist names it, 125" {
	gpurun_fails 125 "/nonexistent-gpurun-src" -- -v /nonexistent-gpurun-src:/x "$BUSYBOX_DIR" /bin/true
}

@test "-v with a relative destination, 125" {
	gpurun_fails 125 "$BATS_TEST_TMPDIR:x" -- -v "$BATS_TEST_TMPDIR:x" "$BUSYBOX_DIR" /bin/true
}

@test "-v with / as the destination, 125" {
	gpurun_fails 125 "$BATS_TEST_TMPDIR:/" -- -v "$BATS_TEST_TMPDIR:/" "$BUSYBOX_DIR" /bin/true
}

@test "-v with an empty spec ':', 125" {
	gpurun_fails 125 -- -v : "$BUSYBOX_DIR" /bin/true
	[[ "${stderr_lines[0]}" =~ -v|--volume|volume ]] || fail "the option is not named: $stderr"
}

@test "-v with an unknown mode (:bogus), 125" {
	gpurun_fails 125 "bogus" -- -v "$BATS_TEST_TMPDIR:/x:bogus" "$BUSYBOX_DIR" /bin/true
}
