# tests/lib/subuser.bash — the second unprivileged user, the one with
# subordinate id ranges in /etc/subuid and /etc/subgid that tests/run-bats.sh
# creates (GPURUN_TEST_SUBUSER, default gpurun-test-sub), as the root suites
# run it: packages.bats (apt, the cache's areas) and subid.bats (a pull).

SUBUSER=${GPURUN_TEST_SUBUSER:-gpurun-test-sub}

# subuser_need: skip unless root can run SUBUSER with ranges and Debian's
# uidmap; sets SUB_START, SUB_COUNT, SUBG_START and SUBG_COUNT (its first
# ranges).
subuser_need() {
	skip_unless_root "runs a second unprivileged user, which takes root to start"
	id "$SUBUSER" >/dev/null 2>&1 || skip "no user $SUBUSER (tests/run-bats.sh creates it)"
	grep -q "^$SUBUSER:" /etc/subuid || skip "$SUBUSER has no range in /etc/subuid"
	[[ -x /usr/bin/newuidmap && -x /usr/bin/newgidmap ]] || skip "Debian's uidmap is not installed"
	SUB_START=$(grep "^$SUBUSER:" /etc/subuid | head -n1 | cut -d: -f2)
	SUB_COUNT=$(grep "^$SUBUSER:" /etc/subuid | head -n1 | cut -d: -f3)
	SUBG_START=$(grep "^$SUBUSER:" /etc/subgid | head -n1 | cut -d: -f2)
	SUBG_COUNT=$(grep "^$SUBUSER:" /etc/subgid | head -n1 | cut -d: -f3)
}

# subuser_run DIR [VAR=VALUE...] CMD...: CMD as SUBUSER in DIR (made, and
# given to it), with a clean environment: PATH, LANG, its cache DIR/cache,
# TMPDIR DIR, and the VAR=VALUE given.
subuser_run() {
	local d=$1
	shift
	mkdir -p "$d" && chown "$SUBUSER:" "$d"
	(cd "$d" && runuser -u "$SUBUSER" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
		GPURUN_CACHE="$d/cache" TMPDIR="$d" "$@")
}
