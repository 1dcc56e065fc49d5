# tests/lib/swap.bash — the attacker of the race tests (races.bats,
# cve.bats): a path swapped between objects while launches run.  Loaded
# after lib/common; stop_swapper belongs in the suite's teardown.

# swapper NAME OTHER...: in the background, exchange NAME with a random
# OTHER, atomically (renameat2 RENAME_EXCHANGE), until
# $BATS_TEST_TMPDIR/stop exists.  NAME always exists; it holds each
# of the objects in turn.  Prints the number of exchanges at the end.
swapper() {
	python3 - "$BATS_TEST_TMPDIR/stop" "$@" >"$BATS_TEST_TMPDIR/swaps" 2>&1 <<-'PY' &
		import ctypes, os, random, sys
		libc = ctypes.CDLL(None, use_errno=True)
		AT_FDCWD, RENAME_EXCHANGE = -100, 2
		stop, name, others = sys.argv[1], sys.argv[2].encode(), [o.encode() for o in sys.argv[3:]]
		n = 0
		while not os.path.exists(stop):
		    if libc.renameat2(AT_FDCWD, name, AT_FDCWD, random.choice(others), RENAME_EXCHANGE) != 0:
		        e = ctypes.get_errno()
		        sys.exit("renameat2: " + os.strerror(e))
		    n += 1
		print(n)
	PY
	SWAPPER_PID=$! SWAPPER_RAN=1
}

stop_swapper() {
	if [[ -n "${SWAPPER_PID:-}" ]]; then
		touch "$BATS_TEST_TMPDIR/stop"
		wait "$SWAPPER_PID" || fail "the swapper failed: $(cat "$BATS_TEST_TMPDIR/swaps")"
		SWAPPER_PID=
	fi
}
