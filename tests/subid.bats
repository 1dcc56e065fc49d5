#!/usr/bin/env bats
# A caller with subordinate id ranges pulling from a registry: the layers
# are unpacked under the full id map a launch of that caller gets
# (rootfs/unpack/unpack.c's child of the map), while this process still streams,
# decompresses and verifies each blob as it arrives.  Run by the root suite
# as GPURUN_TEST_SUBUSER (tests/run-bats.sh gives it ranges), against a
# plain-HTTP registry on 127.0.0.1 (tests/lib/registry.bash).  The apt and
# cache tests of such a caller are in packages.bats.

load lib/common
load lib/registry
load lib/subuser

setup_file() {
	require_gpurun
	[[ $GPURUN_TEST_MODE == root ]] || return 0
	registry_require_tools
	REGISTRY_WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-subid.XXXXXX")
	chmod 0755 "$REGISTRY_WORK"
	export REGISTRY_WORK
	registry_start P plain
	registry_push P "oci:$(oci_fixture oci):latest" gpurun/test:latest
}

teardown_file() {
	registry_stop_all
	[[ -z ${REGISTRY_WORK:-} ]] || rm -rf "$REGISTRY_WORK"
}

# as_subuser CMD...: CMD as the subordinate user (lib/subuser.bash), with a
# cache and TMPDIR of the test's own.
as_subuser() {
	subuser_run "$REGISTRY_WORK/subuser-$BATS_TEST_NUMBER" GPURUN_INSECURE_REGISTRIES="$REG_P_HOST" "$@"
}

need_subuser() {
	subuser_need
	as_subuser test -x "$GPURUN" || skip "$SUBUSER cannot run $GPURUN"
}

@test "with subordinate ranges, an image pulled from a registry keeps its owners inside" {
	need_subuser
	local before=$BATS_TEST_TMPDIR/host.before
	host_snapshot "$before"
	# The fixture's /home/alice is 1000:1000.
	run as_subuser "$GPURUN" --gpus void --entrypoint '' "docker://$REG_P_HOST/gpurun/test:latest" \
		stat -c '%u:%g' /home/alice
	assert_success
	assert_output "1000:1000"
	# In the cache, it belongs to the id of the range that is 1000 inside.
	run find "$REGISTRY_WORK/subuser-$BATS_TEST_NUMBER/cache/idmaps" -path '*/home/alice' -printf '%U:%G\n'
	assert_success
	assert_output "$((SUB_START + 999)):$((SUBG_START + 999))"
	run as_subuser "$GPURUN" cache prune --max-size 0
	assert_success
	assert_host_unchanged "$before"
}

@test "with subordinate ranges, --userns keep-id: the caller's ids inside, and the image's owners kept" {
	need_subuser
	local before=$BATS_TEST_TMPDIR/host.before uid gid
	uid=$(id -u "$SUBUSER") gid=$(id -g "$SUBUSER")
	host_snapshot "$before"
	# The fixture's /home/alice is 1000:1000, its /etc root's.
	run as_subuser "$GPURUN" --gpus void --userns keep-id --entrypoint '' "docker://$REG_P_HOST/gpurun/test:latest" \
		sh -c 'id -u; id -g; stat -c %u:%g /home/alice /etc'
	assert_success
	assert_output "$uid
$gid
1000:1000
0:0"
	# Its own cache area, made under the keep-id map: root of the image is
	# the range's first id, and the caller is only its own uid.
	run find "$REGISTRY_WORK/subuser-$BATS_TEST_NUMBER/cache/idmaps" -maxdepth 1 -mindepth 1 -printf '%f\n'
	assert_output "u$SUB_START-$SUB_COUNT-g$SUBG_START-$SUBG_COUNT-k$uid-$gid"
	run as_subuser "$GPURUN" cache prune --max-size 0
	assert_success
	assert_host_unchanged "$before"
}

@test "with subordinate ranges, --userns keep-id: a file made in a volume belongs to the caller on the host" {
	need_subuser
	local d=$REGISTRY_WORK/subuser-$BATS_TEST_NUMBER
	as_subuser mkdir vol
	run as_subuser "$GPURUN" --gpus void --userns keep-id -v "$d/vol:/w" --entrypoint '' \
		"docker://$REG_P_HOST/gpurun/test:latest" sh -c 'echo made >/w/new'
	assert_success
	assert_equal "$(stat -c %u:%g "$d/vol/new")" "$(id -u "$SUBUSER"):$(id -g "$SUBUSER")"
}

@test "with subordinate ranges, the plan of --userns keep-id says why it cannot run as a script" {
	need_subuser
	run as_subuser "$GPURUN" --dry-run --gpus void --userns keep-id --entrypoint '' \
		"docker://$REG_P_HOST/gpurun/test:latest" true
	assert_success
	assert_line --regexp "^echo 'gpurun plan: cannot run as a script: --userns keep-id with subordinate ranges maps three ranges, where util-linux'.''s unshare --map-users writes one' >&2; exit 125\$"
}

@test "with subordinate ranges, gpurun doctor makes the map and says the cache unpacks under it" {
	need_subuser
	as_subuser mkdir cache
	run as_subuser "$GPURUN" doctor
	assert_line --regexp "^ok +cache: .* free; images are unpacked under your subordinate ids $SUB_START\+$SUB_COUNT, in idmaps/u$SUB_START-$SUB_COUNT-g$SUBG_START-$SUBG_COUNT$"
	run as_subuser env GPURUN_NO_SUBID=1 "$GPURUN" doctor
	assert_line --regexp "^ok +cache: .* free$"
}
