#!/usr/bin/env bats
# `gpurun start NAME` (docs/containers.md): a kept container run again
# from the image its kept.json records, exactly as `gpurun run --name NAME
# IMAGE` would run it: pyxis's --container-name without --container-image.
# The kept layers are on the disk, where a user's cache is:
# run-bats: on-disk

load lib/common
load lib/containers

setup_file() {
	require_gpurun
	common_images
}

setup() {
	containers_setup
}

teardown() {
	containers_teardown
}

@test "gpurun start NAME runs from the kept layer: it sees what the first run wrote" {
	run --separate-stderr "$GPURUN" --name dev "$IMG" sh -c 'echo tmux > /root/installed'
	assert_success
	run --separate-stderr "$GPURUN" start dev sh -c 'cat /root/installed; echo more >> /root/installed'
	assert_success
	assert_equal "$stderr" ""
	assert_output tmux
	# Its changes are kept too, for the next run of the name.
	run --separate-stderr "$GPURUN" --name dev "$IMG" cat /root/installed
	assert_success
	assert_output "tmux
more"
}

@test "gpurun start NAME takes run's options and the flags of --name" {
	run "$GPURUN" --name dev "$IMG" true
	assert_success
	run --separate-stderr "$GPURUN" start -e GREETING=hi -w /etc dev:no_exec sh -c 'echo "$GREETING $PWD"'
	assert_success
	assert_output "hi /etc"
	run --separate-stderr "$GPURUN" start dev:create true
	assert_gpurun_error 125 "--name dev:create: container dev exists already (gpurun rm dev first)"
}

@test "gpurun start NAME uses the recorded image, from any directory" {
	local dir=$BATS_TEST_TMPDIR/images
	mkdir "$dir"
	cp "$IMG" "$dir/img.tar"
	(cd "$dir" && "$GPURUN" --name dev img.tar touch /made) || fail "the first run failed"
	run jq -r .image "$GPURUN_CACHE/containers/dev/kept.json"
	assert_output "$dir/img.tar"
	cd /
	run --separate-stderr "$GPURUN" start dev ls /made
	assert_success
	assert_output /made
}

@test "gpurun start NAME of a multi-image archive runs the recorded NAME:TAG" {
	local two
	two=$(oci_fixture docker-two.tar)
	run --separate-stderr "$GPURUN" --gpus void --name dev "$two@gpurun/two:2"
	assert_success
	assert_output two
	run --separate-stderr "$GPURUN" start --gpus void dev
	assert_success
	assert_output two
}

@test "gpurun start NAME is refused when the recorded image file is now another image" {
	cp "$IMG" "$BATS_TEST_TMPDIR/img.tar"
	run "$GPURUN" --name dev "$BATS_TEST_TMPDIR/img.tar" true
	assert_success
	cp "$(fixture glibc.tar)" "$BATS_TEST_TMPDIR/img.tar"
	run --separate-stderr "$GPURUN" start dev true
	assert_gpurun_error 125 "container dev was made from the image $BATS_TEST_TMPDIR/img.tar (sha256:" "gpurun rm dev"
}

@test "gpurun start of a name never made is refused in one line, naming it" {
	run --separate-stderr "$GPURUN" start never true
	assert_gpurun_error 125 "start: no container never (gpurun ps lists them); gpurun run --name never IMAGE makes one"
	[[ ! -e "$GPURUN_CACHE/containers/never" ]] || fail "a refused start made the container"
	run --separate-stderr "$GPURUN" start
	assert_equal "$status" 125
	assert_equal "${stderr_lines[0]}" "gpurun: start: missing NAME"
	run --separate-stderr "$GPURUN" start --name dev dev true
	assert_equal "$status" 125
	assert_equal "${stderr_lines[0]}" "gpurun: start: the container is NAME, after the options, not --name dev"
}

@test "gpurun start joins a running container as run --name does" {
	local out=$BATS_TEST_TMPDIR/out
	"$GPURUN" --name dev "$IMG" sh -c 'echo in > /tmp/x; probe ns pid; exec probe wait-signal' >"$out" 2>&1 &
	LAUNCHED+=("$!")
	wait_for_line "$out" ready
	run --separate-stderr "$GPURUN" start dev sh -c 'cat /tmp/x; probe ns pid'
	assert_success
	assert_line --index 0 in
	assert_equal "$(grep '^pid ' <<<"$output")" "$(grep '^pid ' "$out")"
}

@test "gpurun start --dry-run prints the run's plan, from the recorded image" {
	run "$GPURUN" --name dev "$IMG" true
	assert_success
	run --separate-stderr "$GPURUN" --dry-run --name dev "$IMG" cat /etc/os-release
	assert_success
	local want=$output
	run --separate-stderr "$GPURUN" start --dry-run dev cat /etc/os-release
	assert_success
	assert_line "# image $IMG: 1 layer, from the cache"
	assert_equal "$output" "$want"
}
