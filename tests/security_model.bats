#!/usr/bin/env bats
# What gpurun does NOT isolate, as the README's "Security model" says: each
# limit is shown here, so that the section stays true (a change that adds
# isolation fails a test here and must update the README with it).

load lib/common

setup_file() {
	require_gpurun
	common_images
}

setup() {
	VOL=$BATS_TEST_TMPDIR/vol
	mkdir -p "$VOL"
	chmod 0777 "$VOL"
}

@test "no cgroup: the command stays in gpurun's own cgroup, with no limit added" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" cat /proc/self/cgroup
	assert_success
	assert_output "$(cat /proc/self/cgroup)"
}

@test "no cgroup namespace: the command sees the host's cgroup namespace" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe ns cgroup
	assert_success
	assert_output "$(host_ns cgroup)"
}

@test "as root, what root writes into a volume is owned by root on the host" {
	skip_unless_root "an unprivileged caller's root inside is its own uid outside"
	run --separate-stderr "$GPURUN" -v "$VOL:/data" "$BUSYBOX_DIR" touch /data/by-root
	assert_success
	assert_equal "$(stat -c %u "$VOL/by-root")" 0
}

@test "unprivileged, what root inside writes into a volume belongs to the caller" {
	skip_unless_user
	run --separate-stderr "$GPURUN" -v "$VOL:/data" "$BUSYBOX_DIR" touch /data/by-root
	assert_success
	assert_equal "$(stat -c %u "$VOL/by-root")" "$(id -u)"
}

@test "a device node reached through a volume cannot be opened (volumes are nodev)" {
	run --separate-stderr "$GPURUN" -v /dev:/hostdev:ro "$BUSYBOX_DIR" probe open /hostdev/null
	assert_success
	assert_output --partial "EACCES"
}

@test "the network is shared by default: the host's interfaces are there" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" cat /proc/net/dev
	assert_success
	assert_output "$(cat /proc/net/dev)"
}

@test "the host's /sys is readable inside (read-only): hardware details are not hidden" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" cat /sys/devices/system/cpu/possible
	assert_success
	assert_output "$(cat /sys/devices/system/cpu/possible)"
}
