#!/usr/bin/env bats
# Text from outside is data, never code: every string an image, a registry,
# a driver root or the command line gives gpurun is printed through the one
# quoting function (base/str.c), so that it can end neither a quote nor a
# comment of the plan, and no byte a terminal would act on reaches stdout or
# stderr.  The quoted form is read back by dash, bash and busybox sh; an
# image whose every string is hostile (tests/lib/hostile_images.py
# hostile-strings) is planned, run, listed and named in errors.

load lib/common

setup_file() {
	require_gpurun
	common_images
	QUOTE_PRINT=$BATS_FILE_TMPDIR/shquote-print
	gcc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$QUOTE_PRINT" "$TESTS_DIR/quoting/shquote_print.c" \
		"$TESTS_DIR/../libgpurun.a"
	HOSTILE=$(oci_fixture hostile-hostile-strings.tar)
	export QUOTE_PRINT HOSTILE
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	export GPURUN_CANARY=$BATS_TEST_TMPDIR/canary
}

# assert_no_terminal_bytes FILE...: no C0 control but newline and tab, no
# DEL, no C1 control (raw or as UTF-8) in any of the files.
assert_no_terminal_bytes() {
	local f
	for f in "$@"; do
		if LC_ALL=C grep -naP '[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]|(?<![\xc0-\xf4])[\x80-\x9f]' "$f" >&2; then
			fail "$f holds bytes a terminal acts on (lines above)"
		fi
	done
}

@test "dash, bash and busybox sh read back exactly the bytes gpurun quoted" {
	local inputs=$BATS_TEST_TMPDIR/inputs f sh
	mkdir "$inputs"
	cp "$TESTS_DIR"/fuzz/corpus/fuzz_shquote/* "$inputs/"
	python3 - "$inputs" <<-'PY'
		import os, random, sys
		rng = random.Random(20261128)
		alphabet = [b for b in range(1, 256)]
		for i in range(300):
		    n = rng.randrange(0, 24)
		    data = bytes(rng.choice(alphabet) for _ in range(n))
		    if i % 4 == 0:
		        data += b"\n" * rng.randrange(1, 3)
		    with open(os.path.join(sys.argv[1], "random-%03d" % i), "wb") as f:
		        f.write(data)
	PY
	for f in "$inputs"/*; do
		"$QUOTE_PRINT" "$f" >"$BATS_TEST_TMPDIR/cmd.sh"
		for sh in dash bash "busybox sh"; do
			$sh "$BATS_TEST_TMPDIR/cmd.sh" >"$BATS_TEST_TMPDIR/out" ||
				fail "$sh failed on the quoting of $f: $(cat -v "$BATS_TEST_TMPDIR/cmd.sh")"
			cmp -s "$f" "$BATS_TEST_TMPDIR/out" ||
				fail "$sh read back other bytes for $f: $(cat -v "$BATS_TEST_TMPDIR/cmd.sh")"
		done
	done
	assert_file_not_exists "$GPURUN_CANARY"
}

@test "an image's config cannot end a comment of the plan" {
	run --separate-stderr "$GPURUN" --dry-run "$HOSTILE"
	assert_success
	local header
	header=$(sed -n '/^set -eu$/q;p' <<<"$output")
	[[ -n "$header" ]] || fail "the plan has no lines before its first command: $output"
	run grep -vn '^#' <<<"$header"
	assert_failure # every line before the first command is a comment
	assert_output ''
	sh -c "$header" || fail "the plan's comments did not run as comments"
	assert_file_not_exists "$GPURUN_CANARY"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "the plan of a hostile image writes no byte a terminal acts on" {
	"$GPURUN" --dry-run "$HOSTILE" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
	assert_no_terminal_bytes "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
	run grep -c 'printf' "$BATS_TEST_TMPDIR/out"
	assert_success # the escapes are there, as printf
	assert_file_not_exists "$GPURUN_CANARY"
}

@test "the plan shows an image's hostile Cmd so that the shell reads it back exactly" {
	run --separate-stderr "$GPURUN" --dry-run "$HOSTILE"
	assert_success
	local line
	# The command's line (setpriv, ns/show.c), with the raw newline that
	# ends the last Cmd word: the last step, up to the helpers.
	line=$(awk '/^setpriv / { on = 1 } /^# Helpers/ { exit } on { print }' <<<"$output")
	line=${line%$'\n'\}}
	[[ -n "$line" ]] || fail "no command line in: $output"
	# Its words: setpriv's, the image's Env, HOME, the waiting shell, the directory, then Entrypoint and Cmd.
	sh -c "set -- ${line#setpriv }; for a; do printf '%s\\0' \"\$a\"; done" \
		>"$BATS_TEST_TMPDIR/words"
	run python3 -c '
import sys
sys.path.insert(0, sys.argv[2])
from hostile_images import HOSTILE_STRINGS
words = open(sys.argv[1], "rb").read().split(b"\0")[:-1]
want = [s.encode() for s in HOSTILE_STRINGS]
assert words[-len(want):] == want, words[-len(want):]
assert words[-len(want) - 1] == b"/bin/true", words
print("same")' "$BATS_TEST_TMPDIR/words" "$TESTS_DIR/lib"
	assert_success
	assert_output same
	assert_file_not_exists "$GPURUN_CANARY"
}

@test "a --verbose launch of a hostile image writes no byte a terminal acts on and runs none of its strings" {
	"$GPURUN" --verbose "$HOSTILE" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" ||
		fail "the launch failed: $(cat -v "$BATS_TEST_TMPDIR/err")"
	assert_no_terminal_bytes "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
	assert_file_not_exists "$GPURUN_CANARY"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "cache ls shows a hostile ref name escaped" {
	"$GPURUN" "$HOSTILE" 2>"$BATS_TEST_TMPDIR/err" || fail "the launch failed: $(cat -v "$BATS_TEST_TMPDIR/err")"
	"$GPURUN" cache ls >"$BATS_TEST_TMPDIR/out" 2>>"$BATS_TEST_TMPDIR/err"
	assert_no_terminal_bytes "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err"
	run grep -F 'hostile\033]0;retitled\007\033[2J' "$BATS_TEST_TMPDIR/out"
	assert_success
}

@test "an error naming an image shows its control bytes escaped, on one line" {
	run --separate-stderr "$GPURUN" $'/nonexistent/img\e]0;retitled\a\e[2J\ntouch x.tar' /bin/true
	assert_failure 125
	[[ "$stderr" != *$'\e'* && "$stderr" != *$'\a'* ]] || fail "raw control bytes in: $(cat -v <<<"$stderr")"
	assert_equal "$(wc -l <<<"$stderr")" 1
	assert_stderr_partial 'img\033]0;retitled\007\033[2J\012touch x.tar'
	# The same through an error value (gerr), from a file that is there.
	local junk=$BATS_TEST_TMPDIR/$'junk\e[2J.tar'
	echo 'not an image' >"$junk"
	run --separate-stderr "$GPURUN" "$junk" /bin/true
	assert_failure 125
	[[ "$stderr" != *$'\e'* ]] || fail "a raw ESC in: $(cat -v <<<"$stderr")"
	assert_stderr_partial 'junk\033[2J.tar'
}

@test "an unknown option of a verb is shown with its control bytes escaped" {
	local verb
	for verb in doctor info list pull; do
		run --separate-stderr "$GPURUN" "$verb" $'--\e[2Jx'
		assert_failure 125
		[[ "$stderr" != *$'\e'* ]] || fail "gpurun $verb: a raw ESC in: $(cat -v <<<"$stderr")"
		assert_stderr_partial 'unknown option --\033[2Jx'
	done
}
