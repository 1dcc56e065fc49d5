#!/usr/bin/env bats
# -v/--volume SRC:DST[:OPTS]: host paths bound into the container, created
# inside the root safely.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

setup() {
	VOL=$BATS_TEST_TMPDIR/vol
	mkdir -p "$VOL"
	echo "from the host" >"$VOL/hello"
}

@test "-v SRC:DST makes a host directory visible inside" {
	run --separate-stderr "$GPURUN" -v "$VOL:/data" "$BUSYBOX_DIR" cat /data/hello
	assert_success
	assert_output "from the host"
}

@test "-v SRC:DST is writable and writes reach the host" {
	run --separate-stderr "$GPURUN" -v "$VOL:/data" "$BUSYBOX_DIR" /bin/sh -c 'echo from-inside >/data/new'
	assert_success
	assert_file_exist "$VOL/new"
	assert_equal "$(cat "$VOL/new")" "from-inside"
}

@test "-v SRC:DST:ro is read-only: a write fails and the host is unchanged" {
	run --separate-stderr "$GPURUN" -v "$VOL:/data:ro" "$BUSYBOX_DIR" /bin/sh -c 'echo x >/data/hello'
	assert_failure
	assert_stderr_partial "Read-only file system"
	assert_equal "$(cat "$VOL/hello")" "from the host"
	assert_not_exist "$VOL/new"
}

@test "docker's :z, :Z, :cached and :delegated are accepted alone and with ro or rw, and change nothing else" {
	run --separate-stderr "$GPURUN" -v "$VOL:/a:z" -v "$VOL:/b:Z" -v "$VOL:/c:cached" -v "$VOL:/d:delegated" \
		-v "$VOL:/e:ro,z" -v "$VOL:/f:Z,rw" "$BUSYBOX_DIR" \
		sh -c 'for d in a b c d e f; do echo x 2>/dev/null >/$d/new-$d && echo $d rw || echo $d ro; done'
	assert_success
	assert_output $'a rw\nb rw\nc rw\nd rw\ne ro\nf rw'
}

@test "a named volume (-v myvol:/data) is refused saying gpurun binds host paths only, 125" {
	cd "$BATS_TEST_TMPDIR"
	run -125 --separate-stderr "$GPURUN" -v myvol:/data "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "volume source 'myvol': no such path here, and gpurun has no named volumes: it binds host paths only (-v /path/to/dir:/data, or ./myvol:/data for one here)"
}

@test "--volume can bind a single file" {
	run --separate-stderr "$GPURUN" --volume "$VOL/hello:/etc/greeting" "$BUSYBOX_DIR" cat /etc/greeting
	assert_success
	assert_output "from the host"
}

@test "-v creates a missing DST inside the root (parents included)" {
	run --separate-stderr "$GPURUN" -v "$VOL:/new/deep/data" "$BUSYBOX_TGZ" cat /new/deep/data/hello
	assert_success
	assert_output "from the host"
}

@test "-v can be repeated" {
	mkdir -p "$BATS_TEST_TMPDIR/vol2"
	echo two >"$BATS_TEST_TMPDIR/vol2/f"
	run --separate-stderr "$GPURUN" -v "$VOL:/a" -v "$BATS_TEST_TMPDIR/vol2:/b:ro" "$BUSYBOX_DIR" cat /a/hello /b/f
	assert_success
	assert_output $'from the host\ntwo'
}

@test "file volumes in one directory, with a directory volume over it between them, land where their paths say" {
	# gpurun keeps the directory of the file binds in a row (a GPU's
	# libraries); a directory mount in between must make it look again.
	mkdir -p "$BATS_TEST_TMPDIR/d"
	echo one >"$BATS_TEST_TMPDIR/f1"
	echo two >"$BATS_TEST_TMPDIR/f2"
	echo three >"$BATS_TEST_TMPDIR/f3"
	run --separate-stderr "$GPURUN" -v "$BATS_TEST_TMPDIR/f1:/opt/a/f1" -v "$BATS_TEST_TMPDIR/f2:/opt/a/f2" \
		-v "$BATS_TEST_TMPDIR/d:/opt/a" -v "$BATS_TEST_TMPDIR/f3:/opt/a/f3" "$BUSYBOX_TGZ" \
		sh -c 'cat /opt/a/f3; ls /opt/a'
	assert_success
	assert_output $'three\nf3'
	# The later directory volume covers the first two, as the order says;
	# f3's mount point was made in that volume.
	assert_file_exist "$BATS_TEST_TMPDIR/d/f3"
}

@test "a volume on a directory image does not touch the image" {
	local img
	img=$(image_copy busybox)
	run --separate-stderr "$GPURUN" -v "$VOL:/mnt/data" "$img" cat /mnt/data/hello
	assert_success
	assert_not_exist "$img/mnt/data"
}

# planted_symlink_probe LINKTEXT: the image has /evil -> LINKTEXT, which
# names the host directory $HOSTDIR when followed on the host.  A volume at
# /evil/x must land inside the container root, never in $HOSTDIR.
planted_symlink_probe() {
	local img
	HOSTDIR=$BATS_TEST_TMPDIR/hostside
	mkdir -p "$HOSTDIR"
	echo canary >"$HOSTDIR/canary"
	img=$(image_copy busybox)
	ln -s "$1" "$img/evil"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	run --separate-stderr "$GPURUN" -v "$VOL:/evil/x" "$img" /bin/true
	if [[ -e "$HOSTDIR/x" ]]; then echo "RISK: $HOSTDIR/x created on the host"; else echo "SAFE"; fi
	[[ ! -e "$HOSTDIR/x" ]] || fail "the volume landed on the host: $HOSTDIR/x"
	assert_equal "$(ls -A "$HOSTDIR")" "canary"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "an absolute image symlink cannot send a volume onto the host" {
	planted_symlink_probe "$BATS_TEST_TMPDIR/hostside"
}

@test "a ../../.. image symlink cannot send a volume onto the host" {
	planted_symlink_probe "../../../../../../../../../../../..$BATS_TEST_TMPDIR/hostside"
}

@test "an image symlink mnt -> /etc keeps the volume inside the container" {
	local img
	img=$(image_copy busybox)
	rmdir "$img/mnt"
	ln -s /etc "$img/mnt"
	run --separate-stderr "$GPURUN" -v "$VOL:/mnt/gpurun-vol" "$img" cat /etc/gpurun-vol/hello
	if [[ -e /etc/gpurun-vol ]]; then
		rmdir /etc/gpurun-vol 2>/dev/null
		fail "RISK: /etc/gpurun-vol was created on the host"
	fi
	assert_success
	assert_output "from the host"
}
