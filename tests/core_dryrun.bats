#!/usr/bin/env bats
# --dry-run prints the plan as the equivalent shell commands and does
# nothing; --verbose prints each step ("+ ...") on stderr as it is done.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

@test "--dry-run prints the plan as shell commands and exits 0" {
	run --separate-stderr "$GPURUN" --dry-run "$BUSYBOX_TGZ" /bin/true
	assert_success
	assert_output --partial "unshare"
	assert_output --partial "mount -t proc"
	assert_output --partial "pivot_root"
}

@test "--dry-run shows the user switch as setpriv's ids and groups" {
	run --separate-stderr "$GPURUN" --dry-run -u 1000:1000 "$BUSYBOX_DIR" /bin/true
	assert_success
	if [[ $GPURUN_TEST_MODE == root ]]; then
		assert_output --partial "setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=\"\$CAPS\" --reuid=1000 --regid=1000 --groups=1000 -- env -i "
	else
		# One id mapped: a user namespace of the command's own maps its ids.
		assert_output --partial "unshare --user --map-user=1000 --map-group=1000 --keep-caps setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=\"\$CAPS\" -- env -i "
	fi
}

@test "--dry-run names the command it would run" {
	run --separate-stderr "$GPURUN" --dry-run "$BUSYBOX_DIR" probe exit 42
	assert_success
	assert_output --partial "probe exit 42"
}

@test "--dry-run shows --hostname and --net none" {
	run --separate-stderr "$GPURUN" --dry-run --hostname dry-box --net none "$BUSYBOX_DIR" /bin/true
	assert_success
	assert_output --partial "dry-box"
	assert_output --regexp "unshare[^"$'\n'"]*--uts"
	assert_output --regexp "unshare[^"$'\n'"]*--net"
}

@test "--dry-run does not run the command" {
	local vol=$BATS_TEST_TMPDIR/vol
	mkdir -p "$vol"
	run --separate-stderr "$GPURUN" --dry-run -v "$vol:/out" "$BUSYBOX_DIR" /bin/sh -c 'touch /out/ran'
	assert_success
	assert_not_exist "$vol/ran"
}

@test "--dry-run changes nothing on the host" {
	run --separate-stderr "$GPURUN" --dry-run "$BUSYBOX_TGZ" touch /x
	assert_success
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "--verbose prints each step on stderr as '+ ' lines and runs the command" {
	run --separate-stderr "$GPURUN" --verbose "$BUSYBOX_DIR" echo ran
	assert_success
	assert_output "ran"
	local line plus=0
	for line in "${stderr_lines[@]}"; do
		[[ $line == "+ "* ]] && plus=$((plus + 1))
	done
	[[ $plus -ge 3 ]] || fail "want '+ ' step lines on stderr, got: $stderr"
	[[ "$stderr" == *"mount -t proc"* ]] || fail "no 'mount -t proc' step: $stderr"
	[[ "$stderr" == *"pivot_root"* ]] || fail "no pivot_root step: $stderr"
}

@test "--verbose leaves the host as it was" {
	run --separate-stderr "$GPURUN" --verbose "$BUSYBOX_TGZ" /bin/true
	assert_success
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}
