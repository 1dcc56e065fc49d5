# tests/lib/cve.bash — what tests/cve.bats replays its escapes with (load
# after lib/common and lib/gpu): the images of the attacks, the canaries
# they aim at, the swapper that races gpurun's setup, the "naive launcher"
# namespaces where an attack is replayed without gpurun's protection, and
# the test build of gpurun with RESOLVE_IN_ROOT taken out.

# What a canary holds: an attack that brings it into a container shows it.
CANARY_SECRET=gpurun-cve-canary-secret

# cve_setup_file: CVEPROBE (tests/cve/cveprobe.c, static), PROBE, the images
# and the fake drivers (FAKE4 empty when they cannot be had here).
cve_setup_file() {
	require_gpurun
	common_images
	PROBE=$(fixture probe)
	CVEPROBE=$BATS_FILE_TMPDIR/cveprobe
	gcc -static -std=gnu11 -O2 -Wall -Wextra -Werror -o "$CVEPROBE" "$TESTS_DIR/cve/cveprobe.c" ||
		fail "cannot build tests/cve/cveprobe.c (gcc -static needs libc6-dev)"
	GLIBC_DIR=$(fixture glibc)
	FAKE4=$(fake_driver four) || FAKE4=
	export PROBE CVEPROBE GLIBC_DIR FAKE4
}

need_fake_driver() {
	[[ -n "$FAKE4" ]] || skip "no fake NVIDIA driver in $TESTS_BUILD (build it as root: tests/run-bats.sh)"
}

# cve_canaries BASE: a host directory and a host file under BASE that an
# attack aims at, both holding CANARY_SECRET, and their state to compare
# with.
cve_canaries() {
	CANARY_DIR=$1/canary-dir
	CANARY_FILE=$1/canary-file
	mkdir -p "$CANARY_DIR"
	echo "$CANARY_SECRET" >"$CANARY_DIR/keep"
	echo "$CANARY_SECRET" >"$CANARY_FILE"
	canary_state >"$BATS_TEST_TMPDIR/canary.before"
}

canary_state() {
	(cd "$CANARY_DIR" && find . -printf '%p %y %m %s %T@ %l\n' | LC_ALL=C sort)
	stat -c '%s %Y %i' "$CANARY_FILE"
	sha256sum <"$CANARY_FILE"
	sha256sum <"$CANARY_DIR/keep"
}

assert_canaries_untouched() {
	canary_state >"$BATS_TEST_TMPDIR/canary.after"
	run diff -u "$BATS_TEST_TMPDIR/canary.before" "$BATS_TEST_TMPDIR/canary.after"
	[[ $status -eq 0 ]] || fail "a host canary changed: $output"
}

# cve_image BASE DIR: a private copy of the fixture BASE (busybox, glibc)
# at DIR with /bin/cveprobe and the marker /.cveprobe-image-root.
cve_image() {
	image_copy "$1" "$2" >/dev/null || return 1
	cp "$CVEPROBE" "$2/bin/cveprobe" && touch "$2/.cveprobe-image-root"
}

# naive_ns SCRIPT ARG...: SCRIPT run by sh in a mount namespace of its own
# (private propagation; unprivileged, with a user namespace mapping the
# caller to root): where a launcher without gpurun's protections acts, and
# what it does there stays there.  $0 of SCRIPT is "naive".
naive_ns() {
	local script=$1
	shift
	if [[ $GPURUN_TEST_MODE == root ]]; then
		unshare -m --propagation private sh -c "$script" naive "$@"
	else
		unshare -Urm --propagation private sh -c "$script" naive "$@"
	fi
}

# exchange A B: swap two names atomically, once (renameat2 RENAME_EXCHANGE):
# the attacker's move between a launcher's check and its use.
exchange() {
	python3 -c 'import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:
    sys.exit("renameat2: " + os.strerror(ctypes.get_errno()))' "$1" "$2"
}

# race_launches N EXPECTED ARG...: N launches of gpurun ARG... one after
# the other while the swapper runs; then every launch either ran and
# printed exactly EXPECTED (its last line "done"), or failed with exactly
# one "gpurun: " line (status 125); at least one ran.  The tally goes to
# the TAP stream.
race_launches() {
	local n=$1 want=$2 i rc out err ran=0 failed=0 bad=""
	shift 2
	for ((i = 0; i < n; i++)); do
		rc=0
		out=$("$GPURUN" "$@" 2>"$BATS_TEST_TMPDIR/launch.err" </dev/null) || rc=$?
		err=$(cat "$BATS_TEST_TMPDIR/launch.err")
		if [[ $rc == 0 && $out == "$want" ]]; then
			ran=$((ran + 1))
		elif [[ $rc == 125 && -z $out && $err == "gpurun: "* && $err != *$'\n'* ]]; then
			failed=$((failed + 1))
		else
			bad+="launch $i: status $rc, stdout: $out, stderr: $err"$'\n'
		fi
	done
	stop_swapper
	echo "# $ran ran, $failed failed cleanly, $(cat "$BATS_TEST_TMPDIR/swaps") swaps" >&3
	[[ -z $bad ]] || fail "launches neither ran cleanly nor failed cleanly:"$'\n'"$bad"
	((ran > 0)) || fail "no launch ran at all"
}

# build_unsafe_gpurun: UNSAFE_GPURUN, a gpurun built for these tests only
# with -DGPURUN_TEST_NO_RESOLVE_IN_ROOT (base/file.c): paths inside the
# root resolved as plain paths, as launchers did before the CVE-2024-0132
# fixes.  Empty where the sources are not at hand (need_unsafe_gpurun
# skips then).  Call from setup_file.
build_unsafe_gpurun() {
	local src=$TESTS_DIR/.. cflags libs
	UNSAFE_GPURUN=
	if [[ -f $src/base/file.c && -f $src/libgpurun.a && -f $src/gpurun.o && -f $src/Makefile ]]; then
		# The Makefile's own flags and libraries, not a copy of them.
		cflags=$(make -s -C "$src" --no-print-directory --eval 'cve-flags: ; $(info $(ALL_CFLAGS))' cve-flags) &&
			libs=$(make -s -C "$src" --no-print-directory --eval 'cve-libs: ; $(info $(HARDEN_LDFLAGS) $(LIBS))' \
				cve-libs) || fail "cannot read the build flags from $src/Makefile"
		eval "cflags=($cflags) libs=($libs)"
		# This base/file.c takes the place of the one in libgpurun.a: it
		# defines every symbol that one does, so the linker never pulls
		# the archive's copy in.
		cc "${cflags[@]}" -DGPURUN_TEST_NO_RESOLVE_IN_ROOT -c -o "$BATS_FILE_TMPDIR/file-unsafe.o" \
			"$src/base/file.c" &&
			cc "${cflags[@]}" -o "$BATS_FILE_TMPDIR/gpurun-unsafe" "$src/gpurun.o" \
				"$BATS_FILE_TMPDIR/file-unsafe.o" "$src/libgpurun.a" "${libs[@]}" ||
			fail "cannot build the test gpurun without RESOLVE_IN_ROOT"
		UNSAFE_GPURUN=$BATS_FILE_TMPDIR/gpurun-unsafe
	fi
	export UNSAFE_GPURUN
}

need_unsafe_gpurun() {
	[[ -n "$UNSAFE_GPURUN" ]] || skip "the test build of gpurun needs the sources and 'make gpurun' output"
}
