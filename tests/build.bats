#!/usr/bin/env bats
# The project's layout (the top level stays small), `make install` with
# PREFIX and DESTDIR, and `make demo`'s script running the demo image.

load lib/common

setup_file() {
	require_gpurun
}

REPO="$BATS_TEST_DIRNAME/.."

@test "the layout of the tree is in place" {
	for f in Makefile README.md LICENSE gpurun.c .ci/run; do
		assert_file_exists "$REPO/$f"
	done
	for d in base ns gpu rootfs examples tests; do
		assert_dir_exists "$REPO/$d"
	done
	assert_file_executable "$REPO/.ci/run"
	run grep -c 'Permission is hereby granted' "$REPO/LICENSE"
	assert_output 1
}

@test "the README gives the two commands" {
	run grep -c -e '^    make demo' -e '^    make check' "$REPO/README.md"
	assert_output 2
}

@test "the binary is hardened: PIE, full RELRO, no executable stack, libc its only shared library" {
	command -v readelf >/dev/null || skip "readelf (binutils) is not installed"
	run readelf -dW "$GPURUN"
	assert_success
	assert_line --regexp '\(FLAGS_1\) +Flags: .*NOW.*PIE'
	assert_line --regexp '\(FLAGS\) +BIND_NOW'
	# The loader itself is named as NEEDED where the toolchain links it.
	local needed
	needed=$(sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' <<<"$output" | grep -v '^ld-linux')
	assert_equal "$needed" 'libc.so.6'
	run readelf -lW "$GPURUN"
	assert_line --regexp '^ +GNU_RELRO '
	assert_line --regexp '^ +GNU_STACK +.* RW  '
}

@test "make install honours PREFIX and DESTDIR" {
	skip_unless_root "writes into the checkout's build outputs"
	local dest="$BATS_TEST_TMPDIR/dest"
	run make -C "$REPO" -s install PREFIX=/opt/gpurun-test DESTDIR="$dest"
	assert_success
	assert_file_executable "$dest/opt/gpurun-test/bin/gpurun"
	assert_file_not_exists /opt/gpurun-test/bin/gpurun
	run "$dest/opt/gpurun-test/bin/gpurun" --version
	assert_success
	assert_output --regexp '^gpurun [0-9]+\.[0-9]+\.[0-9]+$'
}

@test "the demo builds its image offline and runs the main job in it" {
	skip_unless_root "the demo builds into examples/build and the fake driver needs mknod"
	cd "$REPO"
	run sh examples/demo.sh
	assert_success
	assert_output --partial 'hello from demo'
	# The GPU part: the real driver, or the test suite's fake one, GPU 0 only.
	assert_output --regexp 'GPU 0: [^\n]*\(UUID: GPU-'
	refute_output --partial 'GPU 1:'
}
