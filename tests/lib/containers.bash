# tests/lib/containers.bash — what the named containers' suites share
# (containers.bats, containers_start.bats): a cache of the test's own on
# the disk, the runs they launch in the background, and their cleanup.

containers_setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	IMG=$BUSYBOX_TAR
	LAUNCHED=()
}

containers_teardown() {
	local p
	for p in "${LAUNCHED[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null
	done
	# A subordinate user's directory: its cache holds files of its ranges.
	[[ -z ${SUBDIR:-} ]] || rm -rf "$SUBDIR"
	return 0
}

# launch NAME OUT [ARGS...] -- CMD...: a named run in the background, its
# output in OUT; its pid (gpurun's, P0) is added to LAUNCHED.
launch() {
	local name=$1 out=$2
	shift 2
	"$GPURUN" --name "$name" "$@" >"$out" 2>&1 &
	LAUNCHED+=("$!")
}

# wait_running NAME: until `gpurun ps` shows NAME running (its record is
# written once the command has started).
wait_running() {
	local i
	for ((i = 0; i < 600; i++)); do
		"$GPURUN" ps | grep -qE "^$1 +running " && return 0
		sleep 0.05
	done
	"$GPURUN" ps >&2
	fail "container $1 is not running after 30 s"
}

# stop_all: end every launched run (SIGTERM reaches the probe, which exits)
# and wait for it.
stop_all() {
	local p
	for p in "${LAUNCHED[@]}"; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	LAUNCHED=()
}
