#!/usr/bin/env bats
# Races: while launches run, the caller's own user (gpurun-test in user mode,
# root in root mode) swaps a path gpurun uses between a real directory and a
# symlink to a host "canary" directory, atomically and in a tight loop
# (renameat2 RENAME_EXCHANGE).  Each launch tries to write through every
# path it was given.  Whatever the timing: nothing is created, written or
# mounted on the host outside what the launch legitimately owns, and every
# launch either runs inside (0) or fails with one clean line (125).
#
# What is legitimate, and so what the canary may see:
#   - the image path and a -v source are the caller's own paths: a symlink
#     there is followed when gpurun opens it (as bwrap --bind does), so a
#     launch may run *on* the canary.  The image root is then the lower
#     layer of an overlay whose upper layer is the run's tmpfs, so writes to
#     the root never reach the canary; a volume is given :ro, so a launch
#     bound on the canary cannot write it either.  The canary stays as it
#     was, byte for byte;
#   - a path *inside* the image (a mount target, the workdir) is image
#     content: a symlink there is followed only inside the container root
#     (openat2 RESOLVE_IN_ROOT), so a swap to a link naming the host's canary
#     must never place a mount or a directory on the host.
#
# Counts: each test launches until it has seen every outcome it names
# (each tree a launch may run in, and the clean failures that show a swap
# landing inside gpurun's own steps: "changed since it was read" between
# two looks at the same path, "Not a directory" where a file was swapped
# in) and has run RACE_ENOUGH (100) launches, each under a thousand swaps
# or so; then it stops.  In CI runs of 500 launches each of those outcomes
# came at least once in seventeen launches, so a hundred miss one of them
# about once in 500 runs (and then the test goes on until it comes); the
# other 400 launches repeated them, bar one message seen one to three times
# in 450 (the bind source "Is a directory"), for up to 16 s of a CPU spent
# on the swapper, per test and mode.  When an outcome is slow to come,
# RACE_SECONDS (20) bound the test once RACE_MIN (20) launches have run,
# and RACE_LAUNCHES (500) bounds it in any case, so that a loaded machine
# runs fewer launches instead of running out of time.

load lib/common
load lib/swap

LAUNCHES=${RACE_LAUNCHES:-500}
RACE_SECONDS=${RACE_SECONDS:-20}
RACE_MIN=${RACE_MIN:-20}
RACE_ENOUGH=${RACE_ENOUGH:-100}

setup_file() {
	require_gpurun
	common_images
}

setup() {
	R=$BATS_TEST_TMPDIR/race
	CANARY=$BATS_TEST_TMPDIR/canary
	OUT=$BATS_TEST_TMPDIR/out
	mkdir -p "$R" "$OUT"
}

teardown() {
	stop_swapper
}

# tree_state DIR: everything about DIR a write would change: names, types,
# modes, sizes, mtimes, link targets, and the content of every file.
tree_state() {
	(cd "$1" && find . -printf '%p %y %m %s %T@ %l\n' | LC_ALL=C sort &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0r sha256sum)
}

# launches N IMAGE ARG...: launches one after the other, until RACE_ENOUGH
# have run and each pattern of the caller's array WANT has matched an
# outcome: the first line of stdout for a launch that exited 0, "STATUS:
# STDERR" for one that failed; never more than N, and no more once
# RACE_SECONDS have passed after RACE_MIN of them.  Launch i leaves
# $OUT/i.rc, $OUT/i.out and $OUT/i.err, and LAUNCHED says how many ran.
# Whether each outcome is a sound one is for assert_outcomes to say.
launches() {
	local n=$1 i rc outcome w missing end=$((SECONDS + RACE_SECONDS))
	local -A seen=()
	shift
	for ((i = 0; i < n; i++)); do
		((i >= RACE_MIN && SECONDS >= end)) && break
		if ((i >= RACE_ENOUGH)); then
			missing=0
			for w in "${WANT[@]}"; do [[ -n ${seen[$w]:-} ]] || missing=1; done
			((missing)) || break
		fi
		rc=0
		"$GPURUN" "$@" >"$OUT/$i.out" 2>"$OUT/$i.err" </dev/null || rc=$?
		echo "$rc" >"$OUT/$i.rc"
		if [[ $rc == 0 ]]; then
			outcome=$(head -n1 "$OUT/$i.out")
		else
			outcome="$rc: $(cat "$OUT/$i.err")"
		fi
		# shellcheck disable=SC2053 # each WANT is a pattern
		for w in "${WANT[@]}"; do [[ $outcome == $w ]] && seen[$w]=1; done
	done
	LAUNCHED=$i
}

# assert_outcomes N RAN...: every launch of $OUT either exited 0 with its
# first line one of RAN (where it ran) and "done" last, or exited 125 with
# nothing on stdout and exactly one "gpurun: " line on stderr.  At least one
# launch ran.  The tally goes to the TAP stream.
assert_outcomes() {
	local n=$1 i k rc first ok ran=0 failed=0 bad=""
	shift
	declare -A seen=()
	for ((i = 0; i < n; i++)); do
		rc=$(cat "$OUT/$i.rc")
		if [[ $rc == 0 ]]; then
			first=$(head -n1 "$OUT/$i.out")
			ok=0
			for want in "$@"; do [[ $first == "$want" ]] && ok=1; done
			if ((ok)) && [[ $(tail -n1 "$OUT/$i.out") == done ]]; then
				ran=$((ran + 1))
				seen[$first]=$((${seen[$first]:-0} + 1))
				continue
			fi
		elif [[ $rc == 125 && ! -s "$OUT/$i.out" && $(wc -l <"$OUT/$i.err") == 1 ]] &&
			grep -q '^gpurun: ' "$OUT/$i.err"; then
			failed=$((failed + 1))
			k="125: $(sed "s|$BATS_TEST_TMPDIR|T|g" "$OUT/$i.err")"
			seen[$k]=$((${seen[$k]:-0} + 1))
			continue
		fi
		bad+="launch $i: status $rc, stdout: $(cat "$OUT/$i.out"), stderr: $(cat "$OUT/$i.err")"$'\n'
	done
	# The tally, in the TAP stream: how the launches fell.
	{
		echo "# $ran ran, $failed failed cleanly${SWAPPER_RAN:+, $(cat "$BATS_TEST_TMPDIR/swaps") swaps}"
		for k in "${!seen[@]}"; do echo "#   $k (${seen[$k]})"; done
	} >&3
	[[ -z $bad ]] || fail "launches neither ran nor failed cleanly:"$'\n'"$bad"
	((ran > 0)) || fail "no launch ran at all"
}

# The canary: a root file system of its own (so a launch that followed the
# link runs there), plus a regular file to swap in where a directory is
# expected.
make_canary() {
	image_copy busybox "$CANARY" >/dev/null
	echo canary >"$CANARY/which"
	echo canary >"$BATS_TEST_TMPDIR/canary-file"
	tree_state "$CANARY" >"$BATS_TEST_TMPDIR/canary.before"
	sha256sum "$BATS_TEST_TMPDIR/canary-file" >"$BATS_TEST_TMPDIR/canary-file.before"
}

assert_canary_untouched() {
	tree_state "$CANARY" >"$BATS_TEST_TMPDIR/canary.after"
	run diff -u "$BATS_TEST_TMPDIR/canary.before" "$BATS_TEST_TMPDIR/canary.after"
	[[ $status -eq 0 ]] || fail "the host's canary directory changed: $output"
	run sha256sum -c "$BATS_TEST_TMPDIR/canary-file.before"
	assert_success
}

@test "a directory image swapped with links to a host directory: each launch runs in one tree or fails cleanly; the host tree is never written" {
	make_canary
	image_copy busybox "$R/img" >/dev/null
	echo image >"$R/img/which"
	ln -s "$CANARY" "$R/link-dir"
	ln -s "$BATS_TEST_TMPDIR/canary-file" "$R/link-file"
	# An OCI layout of two images: gpurun refuses it without @NAME:TAG.
	# Taken for a root file system, it would have no /bin/sh (127).
	ln -s "$(oci_fixture oci-two)" "$R/link-layout"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	swapper "$R/img" "$R/link-dir" "$R/link-file" "$R/link-layout"
	local WANT=(image canary "125: *changed since it was read" "125: *Not a directory")
	launches "$LAUNCHES" "$R/img" sh -c 'cat /which
		touch /pwned; echo pwned >/which; rm -f /etc/passwd; mkdir /newdir; echo done' 2>/dev/null
	stop_swapper
	assert_outcomes "$LAUNCHED" image canary
	assert_canary_untouched
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
	# The image itself is overlaid too: nothing of the runs in it.
	local img
	img=$(find "$R" -maxdepth 1 -type d -name '*' ! -path "$R" | head -n1)
	assert_equal "$(cat "$img/which")" image
	assert_not_exist "$img/pwned"
	assert_file_exists "$img/etc/passwd"
}

@test "a read-only -v source swapped with links to a host directory: each launch binds one of them or fails cleanly; the host directory is never written" {
	make_canary
	mkdir "$R/src"
	echo source >"$R/src/which"
	tree_state "$R/src" >"$BATS_TEST_TMPDIR/src.before"
	ln -s "$CANARY" "$R/link-dir"
	ln -s "$BATS_TEST_TMPDIR/canary-file" "$R/link-file"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	swapper "$R/src" "$R/link-dir" "$R/link-file"
	local WANT=(source canary "125: *Not a directory")
	launches "$LAUNCHES" -v "$R/src:/vol:ro" "$BUSYBOX_DIR" sh -c '{ cat /vol/which || cat /vol; } 2>/dev/null
		touch /vol/pwned; echo pwned >/vol/which; echo pwned >/vol; rm -f /vol/etc/passwd; mkdir /vol/newdir; echo done' 2>/dev/null
	stop_swapper
	# canary: the directory's /which, or the file itself bound at /vol.
	assert_outcomes "$LAUNCHED" source canary
	assert_canary_untouched
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
	local src
	src=$(find "$R" -maxdepth 1 -type d ! -path "$R" | head -n1)
	tree_state "$src" >"$BATS_TEST_TMPDIR/src.after"
	run diff -u "$BATS_TEST_TMPDIR/src.before" "$BATS_TEST_TMPDIR/src.after"
	assert_success
}

# The target side: inside the image, /vol is swapped between a directory
# and links naming the host's canary (absolute, and as ../../..), while a
# volume is bound at /vol/x and the workdir is /vol/wd.  Followed inside
# the root, both links name a path in the image; the canary never gets x
# or wd, and the volume is what the launch sees at /vol/x.
@test "a mount target inside a directory image swapped with links to a host directory: the volume and the workdir never land on the host" {
	make_canary
	image_copy busybox "$R/img" >/dev/null
	mkdir "$R/img/vol" "$R/src"
	echo source >"$R/src/which"
	ln -s "$CANARY" "$R/img/vol.abs"
	ln -s "../../../../../../../../../../..$CANARY" "$R/img/vol.rel"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	swapper "$R/img/vol" "$R/img/vol.abs" "$R/img/vol.rel"
	local WANT=(source)
	launches "$LAUNCHES" -v "$R/src:/vol/x" -w /vol/wd "$R/img" sh -c 'cat /vol/x/which
		touch /vol/pwned /vol/x/mine; mkdir /vol/newdir; echo done' 2>/dev/null
	stop_swapper
	assert_outcomes "$LAUNCHED" source
	# Every launch ran: whichever object /vol is, resolved inside the root
	# it names a directory gpurun may make in the image.  A gpurun built
	# without RESOLVE_IN_ROOT follows the links out of the image, to paths
	# that do not exist where it resolves them, and fails those launches
	# (cleanly: only this line tells it from the safe one).
	assert_equal "$(sort -u "$OUT"/*.rc)" 0
	assert_canary_untouched
	assert_not_exist "$CANARY/x"
	assert_not_exist "$CANARY/wd"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# The same on an unpacked archive: the image's /vol is a link to the host's
# canary in the archive itself, and the launches race each other on the
# cache import (a cold cache) rather than on a swap.
@test "launches racing on the import of an image whose mount target links to the host never land on the host" {
	make_canary
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	mkdir "$R/src"
	echo source >"$R/src/which"
	mktar "$R/img.tar" --base "$BUSYBOX_TAR" "s|vol|$CANARY" "s|rel|../../../../../..$CANARY"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	local i rc pids=()
	for i in $(seq 0 19); do
		"$GPURUN" -v "$R/src:/vol/x" -v "$R/src:/rel/y:ro" -w /rel/wd "$R/img.tar" \
			sh -c 'cat /vol/x/which; cat /rel/y/which; echo done' >"$OUT/$i.out" 2>"$OUT/$i.err" </dev/null &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		rc=0
		wait "${pids[i]}" || rc=$?
		echo "$rc" >"$OUT/$i.rc"
	done
	assert_outcomes 20 source
	for i in $(seq 0 19); do
		assert_equal "$(cat "$OUT/$i.rc")" 0
		assert_equal "$(sed -n 2p "$OUT/$i.out")" source
	done
	assert_canary_untouched
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
	assert_cache_consistent
}
