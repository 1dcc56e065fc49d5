#!/bin/sh
# tests/fuzz/run.sh — run libFuzzer targets: each over its seed corpus, then
# fuzzing for a bounded time.  Used by `make sanitize` and `make fuzz`.
#
#   sh tests/fuzz/run.sh SECONDS BIN...
#
# BIN is a fuzz binary such as tests/build/fuzz_unpack; its seeds are
# tests/fuzz/corpus/fuzz_unpack/ (created when missing) and are never
# written to: new inputs go to a temporary directory, removed afterwards
# unless FUZZ_KEEP=1.  SECONDS=0 runs the seeds only.  An optional
# tests/fuzz/<name>.options may set "max_len = N" (default 4096).
# Prints one line per target; exits 1 when any target crashed, leaked, hung
# or ran out of memory, and keeps that target's log and reproducer.
set -u

usage() {
	echo "usage: sh tests/fuzz/run.sh SECONDS BIN..." >&2
	exit 2
}
[ $# -ge 2 ] || usage
secs=$1
shift
case $secs in
'' | *[!0-9]*) usage ;;
esac

here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-fuzz.XXXXXX") || exit 1
# A sanitizer report must end the run, with a stack.
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"

# The value of a libFuzzer stat line ("stat::name: N") in a log, or "?".
fuzz_stat() {
	v=$(sed -n "s/^stat::$2: *//p" "$1" | tail -n 1)
	echo "${v:-?}"
}

failed=0
for bin in "$@"; do
	name=$(basename "$bin")
	if [ ! -x "$bin" ]; then
		echo "$name: FAILED: $bin is not an executable (build it with make)"
		failed=1
		continue
	fi
	seeds="$here/corpus/$name"
	mkdir -p "$seeds"
	nseeds=$(find "$seeds" -type f | wc -l)
	max_len=4096
	if [ -f "$here/$name.options" ]; then
		v=$(sed -n 's/^[[:space:]]*max_len[[:space:]]*=[[:space:]]*\([0-9][0-9]*\).*/\1/p' "$here/$name.options")
		[ -n "$v" ] && max_len=$v
	fi
	dir="$work/$name"
	mkdir -p "$dir/new" "$dir/tmp"
	log="$dir/log"
	# Targets that write files (fuzz_unpack) do so under TMPDIR.
	common="-rss_limit_mb=2048 -timeout=30 -max_len=$max_len -artifact_prefix=$dir/ -print_final_stats=1"

	# shellcheck disable=SC2086
	TMPDIR="$dir/tmp" "$bin" $common -runs=0 "$seeds" >"$log" 2>&1
	rc=$?
	runs=0
	if [ $rc -eq 0 ] && [ "$secs" -gt 0 ]; then
		# shellcheck disable=SC2086
		TMPDIR="$dir/tmp" "$bin" $common -max_total_time="$secs" "$dir/new" "$seeds" >>"$log" 2>&1
		rc=$?
		runs=$(fuzz_stat "$log" number_of_executed_units)
	fi
	nnew=$(find "$dir/new" -type f | wc -l)
	cov=$(sed -n 's/.*cov: \([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
	if [ $rc -ne 0 ]; then
		failed=1
		repro=$(find "$dir" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
			-o -name 'oom-*' -o -name 'slow-unit-*' \) | head -n 1)
		echo "$name: FAILED (exit $rc) after $nseeds seeds + ${runs} runs; log $log${repro:+, reproducer $repro}"
		grep -E '^(==[0-9]+==|SUMMARY|.*runtime error|fuzz_)' "$log" | head -n 8 | sed 's/^/    /'
	else
		echo "$name: ok: $nseeds seeds, $runs runs in ${secs}s, cov ${cov:-?}, $nnew new inputs (max_len $max_len)"
		[ "${FUZZ_KEEP:-0}" = 1 ] || rm -rf "$dir"
	fi
done

if [ $failed -eq 0 ] && [ "${FUZZ_KEEP:-0}" != 1 ]; then
	rm -rf "$work"
else
	echo "fuzz work directory kept: $work"
fi
exit $failed
