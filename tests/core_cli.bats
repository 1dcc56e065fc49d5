#!/usr/bin/env bats
# The command line: verbs, the optional `run`, where options stop, the
# default command.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

@test "--help prints the usage line and exits 0" {
	run --separate-stderr "$GPURUN" --help
	assert_success
	assert_output --partial "gpurun [run] [OPTIONS] IMAGE"
}

@test "the help verb prints the same usage as --help" {
	run --separate-stderr "$GPURUN" --help
	local want=$output
	run --separate-stderr "$GPURUN" help
	assert_success
	assert_output "$want"
}

@test "--version prints gpurun and a version number" {
	run --separate-stderr "$GPURUN" --version
	assert_success
	assert_output --regexp '^gpurun [0-9]+\.[0-9]+\.[0-9]+'
}

@test "the version verb prints the same as --version" {
	run --separate-stderr "$GPURUN" --version
	local want=$output
	run --separate-stderr "$GPURUN" version
	assert_success
	assert_output "$want"
}

@test "the run verb is optional" {
	run --separate-stderr "$GPURUN" run "$BUSYBOX_DIR" echo with-run
	assert_success
	assert_output "with-run"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" echo without-run
	assert_success
	assert_output "without-run"
}

@test "options stop at IMAGE: what follows belongs to the command" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" echo --verbose --help -e X=1
	assert_success
	assert_output "--verbose --help -e X=1"
}

@test "a -- after IMAGE separates the command and is not passed on" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" -- echo --net none
	assert_success
	assert_output "--net none"
}

@test "arguments reach the command unchanged (spaces, quotes, empty ones)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'for a in "$@"; do echo "[$a]"; done' sh \
		"two words" "" "it's" '$HOME' '*'
	assert_success
	assert_output $'[two words]\n[]\n[it\'s]\n[$HOME]\n[*]'
}

@test "without COMMAND the image's /bin/sh runs, reading stdin" {
	run --separate-stderr bash -c "echo 'echo \"shell:\$0\"' | \"\$GPURUN\" \"\$BUSYBOX_DIR\""
	assert_success
	assert_output --regexp '^shell:(/bin/)?sh$'
}

@test "an image whose name is a verb is given as a path (./info)" {
	cd "$BATS_TEST_TMPDIR"
	ln -s "$BUSYBOX_DIR" info
	run --separate-stderr "$GPURUN" ./info echo image-called-info
	assert_success
	assert_output "image-called-info"
}

@test "a run of a tar image prints nothing on stderr" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_TGZ" /bin/true </dev/null
	assert_success
	assert_equal "$stderr" ""
}

@test "a run of a directory image prints nothing on stderr" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/true </dev/null
	assert_success
	assert_equal "$stderr" ""
}

@test "a relative image path works" {
	cd "$(dirname "$BUSYBOX_TGZ")"
	run --separate-stderr "$GPURUN" "./$(basename "$BUSYBOX_TGZ")" echo relative
	assert_success
	assert_output "relative"
}

# ---- one option table: what --help names is what is accepted ----------------------

@test "every option --help names is one that run accepts" {
	local o n=0
	while read -r o; do
		run --separate-stderr "$GPURUN" "$o" </dev/null
		[[ "$stderr" != *"unknown option"* ]] || fail "$o is in --help but unknown: $stderr"
		n=$((n + 1))
	done < <("$GPURUN" --help | grep -oE '^ +(-[a-zA-Z], )?--[a-z-]+(, --[a-z-]+)?' | grep -oE -- '--[a-z-]+')
	((n > 30)) || fail "only $n options found in --help"
}

@test "each verb's --help is its usage line, and every option it names is accepted" {
	local verb o
	for verb in info list pull "cache prune" "cdi generate" "cdi list"; do
		run --separate-stderr "$GPURUN" $verb --help
		assert_success
		assert_output --partial "usage: gpurun"
		for o in $(grep -F -- "$verb" <<<"$output" | grep -oE -- '\[--[a-z-]+' | tr -d '['); do
			[[ $o != --driver-root ]] || continue # before the verb too; its own test is in gpu.bats
			run --separate-stderr "$GPURUN" $verb "$o" </dev/null
			[[ "$stderr" != *"unknown option"* ]] || fail "gpurun $verb $o: $stderr"
		done
	done
}

@test "a verb's unknown option is named with the verb, then its usage, 125" {
	run -125 --separate-stderr "$GPURUN" cdi list --frobnicate
	assert_equal "${stderr_lines[0]}" "gpurun: cdi list: unknown option --frobnicate"
	assert_equal "${stderr_lines[1]}" "usage: gpurun [--driver-root DIR] cdi generate [--driver-root DIR] [--format yaml|json] [--output FILE]"
}

@test "an option of a verb missing its value is named as such, 125" {
	run -125 --separate-stderr "$GPURUN" list --gpus
	assert_equal "${stderr_lines[0]}" "gpurun: list: --gpus needs a value"
}
