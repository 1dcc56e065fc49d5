# tests/lib/fingerprint.bash — running one launch both ways, with gpurun
# and with the plan it prints, and comparing the fingerprint each container
# gives of itself (tests/lib/fingerprint.sh), for tests/plan_run.bats and
# tests/slurm.bats.  The caller exports GPURUN and FINGERPRINT (the text of
# fingerprint.sh).  `inside` is plain bash, so that an srun step can source
# this file and call it; host_same and assert_same_fingerprint need bats
# (load after lib/common).

# inside gpurun|plan OUT ARGS...: in a throw-away set of namespaces (as
# root; with RUNAS set, as the user of the caller's as_subuser instead), run
# gpurun with the fingerprint as its command, or print that launch's plan
# to OUT.sh and run it; the fingerprint's output goes to OUT.
# The caller's namespaces are handed to the fingerprint.  ENTRY: what
# comes before the fingerprint ("/bin/sh -c" unless the image's Entrypoint
# is that already: ENTRY=" ").
inside() {
	local what=$1 out=$2
	shift 2
	local wrap=()
	if [[ -n ${RUNAS:-} ]]; then
		wrap=(as_subuser env GPURUN="$GPURUN" FINGERPRINT="$FINGERPRINT" ENTRY="${ENTRY:-}")
	elif [[ $(id -u) -eq 0 ]]; then
		wrap=(unshare --mount --uts --ipc --pid --fork)
	fi
	"${wrap[@]}" bash -c '
		what=$1 out=$2; shift 2
		ns=$(readlink /proc/self/ns/*)
		if [[ $what == gpurun ]]; then
			# shellcheck disable=SC2086
			exec "$GPURUN" "$@" ${ENTRY:-/bin/sh -c} "$FINGERPRINT" sh $ns >"$out"
		fi
		# shellcheck disable=SC2086
		"$GPURUN" --dry-run "$@" ${ENTRY:-/bin/sh -c} "$FINGERPRINT" sh $ns >"$out.sh" || exit 99
		cd / && exec sh "$out.sh" >"$out"' bash "$what" "$out" "$@"
}

# host_same BEFORE: assert_host_unchanged, where of the entries of /tmp
# only the plan's own (gpurun-plan.*) count: the helpers' parallel builds
# and suites come and go there.
host_same() {
	local before=$1 f
	host_snapshot "$before.now"
	for f in "$before" "$before.now"; do
		awk '/^## /{sec=$0} sec !~ /^## \/tmp/ || /^## / || /^gpurun-plan\./' "$f" >"$f.f"
	done
	run diff -u "$before.f" "$before.now.f"
	if [[ $status -ne 0 ]] && grep -q '^+[^+]' <<<"$output"; then
		fail "the run left something behind on the host: $output"
	fi
}

# assert_same_fingerprint GPURUN-OUT PLAN-OUT: the two containers described
# themselves alike, and the plan's did describe itself.
assert_same_fingerprint() {
	run diff -u "$1" "$2"
	assert_success
	grep -q '^== mounts' "$2" || fail "no fingerprint"
}
