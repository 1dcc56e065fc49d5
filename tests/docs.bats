#!/usr/bin/env bats
# The documentation says what the binary does: `gpurun --help`, the man page
# (docs/gpurun.1.md) and the bash completion (contrib/gpurun.bash-completion)
# name the same verbs and options; the man page's generated parts are what
# --help makes of them; the README stays short; `make install` installs the
# binary, the man page and the completion; docs/security.md names tests that
# exist; docs/slurm.md's table of pyxis options has a row for each option of
# the Slurm plugin's own table and says which it refuses, and the page names
# tests that exist.  The option sets are read from each source, never listed here, so a
# new option fails these tests until all three name it.
# Nothing here launches a container: the same files and the same --help
# whoever runs them, so tests/run-bats.sh runs this suite once (as root,
# where `make install` runs too).
# run-bats: mode-independent

load lib/common

REPO=${BATS_TEST_DIRNAME%/*}
MAN_MD=$REPO/docs/gpurun.1.md
COMPLETION=$REPO/contrib/gpurun.bash-completion

setup_file() {
	require_gpurun
}

# Options as a sorted set, one a line, without "=VALUE".
optset() {
	sed 's/=.*//' | sort -u
}

# help_opts VERB [SUB]: the options --help names.  run's come from the option
# list of `gpurun --help` (the option column, not the text beside it); a
# verb's from its usage line.
help_opts() {
	case "$1" in
	run)
		"$GPURUN" --help | awk '
			/^docker.s options/ { exit }
			match($0, /^ +-/) && RLENGTH < 11 {
				n = split($0, f, /  +/)
				for (i = 1; i <= n; i++) {
					if (f[i] !~ /^-/) continue
					m = split(f[i], names, /, /)
					for (j = 1; j <= m; j++) { sub(/ .*/, "", names[j]); print names[j] }
				}
			}' | optset
		;;
	cache | cdi)
		"$GPURUN" "$1" --help 2>&1 | grep -- "$1 .*$2" | sed "s/.*$2//" |
			grep -oE -- '--[a-z][a-z-]*(=[a-z]+)?' | optset
		;;
	*)
		"$GPURUN" "$1" --help | grep -oE -- '--[a-z][a-z-]*(=[a-z]+)?' | optset
		;;
	esac
}

# man_opts VERB [SUB]: the options the man page's section of that verb
# names in its definition list (run: the RUN OPTIONS section).
man_opts() {
	local head="## $1"
	[[ $1 == cdi ]] && head="## cdi $2"
	[[ $1 == run ]] && head="# RUN OPTIONS"
	awk -v head="$head" '
		$0 == head { on = 1; next }
		on && /^#/ { exit }
		on && /^\*\*-/ { print }' "$MAN_MD" |
		grep -oE -- '\*\*-[^*]+\*\*' | tr -d '*' | optset
}

# completion_opts VERB [SUB]: what the completion offers after "-".
completion_opts() {
	local words=(gpurun)
	[[ $1 != run ]] && words+=("$1")
	[[ -n ${2:-} ]] && words+=("$2")
	bash -c 'source "$1"; shift; COMP_WORDS=("$@" -); COMP_CWORD=$#; _gpurun; printf "%s\n" "${COMPREPLY[@]}"' \
		_ "$COMPLETION" "${words[@]}" | optset
}

# same_set WHAT A B: fail naming what differs.
same_set() {
	[[ -n $2 ]] || fail "$1: no options found"
	[[ $2 == "$3" ]] || fail "$1 differ: $(diff <(echo "$2") <(echo "$3") | grep '^[<>]' | tr '\n' ' ')"
}

@test "gpurun --help, the man page and the completion name the same run options" {
	local help man comp
	help=$(help_opts run)
	man=$(man_opts run)
	comp=$(completion_opts run)
	same_set "run options: --help (<) and the man page (>)" "$help" "$man"
	same_set "run options: --help (<) and the completion (>)" "$help" "$comp"
	[[ $'\n'$help$'\n' == *$'\n'--gpus$'\n'* ]] || fail "--gpus not among the run options read from --help: $help"
}

@test "each verb's options are the same in its usage, the man page and the completion" {
	local v help
	for v in info list pull ps exec doctor "cache prune" "cdi generate" "cdi list"; do
		# shellcheck disable=SC2086
		help=$(help_opts $v)
		# shellcheck disable=SC2086
		same_set "$v: --help (<) and the man page (>)" "$help" "$(man_opts $v)"
		# shellcheck disable=SC2086
		same_set "$v: --help (<) and the completion (>)" "$help" "$(completion_opts $v)"
	done
}

@test "the verbs of --help each have a section in the man page and are completed" {
	local verbs comp v
	verbs=$("$GPURUN" --help | sed -n '/^usage:/,/^$/p' | sed -E 's/^(usage:)? +gpurun +//; s/\[--driver-root DIR\] //' |
		awk '{ print $1 } $2 == "|" { print $3 }' | grep -v '^\[' | sort -u)
	[[ $verbs == *doctor* ]] || fail "no verbs read from --help: $verbs"
	comp=$(bash -c 'source "$1"; COMP_WORDS=(gpurun ""); COMP_CWORD=1; _gpurun; printf "%s\n" "${COMPREPLY[@]}"' _ "$COMPLETION")
	for v in $verbs run; do
		grep -qE "^## ($v|.*, $v)( |$|,)" "$MAN_MD" || fail "the man page has no section for the verb $v"
		grep -qx "$v" <<<"$comp" || fail "the completion does not offer the verb $v"
	done
}

@test "the man page's synopsis, run options and exit status are what --help says" {
	cd "$REPO"
	run python3 tools/gen-options.py --check "$GPURUN"
	assert_success
}

@test "a man page whose options drift from --help is caught" {
	cp -r "$REPO/docs" "$REPO/tools" "$BATS_TEST_TMPDIR/"
	sed -i 's/^\*\*--read-only\*\*$/**--read-write**/' "$BATS_TEST_TMPDIR/docs/gpurun.1.md"
	cd "$BATS_TEST_TMPDIR"
	run python3 tools/gen-options.py --check "$GPURUN"
	assert_failure
	assert_output --partial "docs/gpurun.1.md differs from \`gpurun --help\`: run tools/gen-options.py"
}

@test "the man page renders with go-md2man and shows every run option" {
	command -v go-md2man >/dev/null || fail "go-md2man is not installed (make deps-test installs it)"
	sed '/^<!-- generated:/d' "$MAN_MD" | go-md2man -out "$BATS_TEST_TMPDIR/gpurun.1"
	run env MANWIDTH=100 man -l "$BATS_TEST_TMPDIR/gpurun.1"
	assert_success
	assert_line --regexp '^gpurun\(1\) +User Commands +gpurun\(1\)$'
	local o
	for o in $(help_opts run); do
		assert_line --regexp "^ +(--?[a-zA-Z][a-zA-Z-]*, )*${o}( |=|,|$)"
	done
}

@test "every GPURUN_ variable the sources read is in the man page's ENVIRONMENT" {
	local vars v
	vars=$(grep -rhoE 'getenv\("GPURUN_[A-Z_]+"' "$REPO"/gpurun.c "$REPO"/base "$REPO"/ns "$REPO"/gpu "$REPO"/rootfs |
		sed 's/getenv("//; s/"//' | sort -u)
	[[ -n $vars ]] || fail "no GPURUN_ variable found in the sources"
	for v in $vars; do
		awk '/^# ENVIRONMENT/ { on = 1; next } on && /^# / { exit } on' "$MAN_MD" | grep -q "^\`$v\`" ||
			fail "$v is read by gpurun but not described under ENVIRONMENT in docs/gpurun.1.md"
	done
}

@test "the README is at most 300 lines and gives the two commands" {
	local n
	n=$(wc -l <"$REPO/README.md")
	((n <= 300)) || fail "README.md has $n lines (at most 300: the reference is the man page and docs/)"
	grep -q '^    make demo' "$REPO/README.md"
	grep -q '^    make check' "$REPO/README.md"
}

@test "no user-facing text speaks of sessions, issues or seeds" {
	local texts=$BATS_TEST_TMPDIR/texts
	mkdir "$texts"
	cp "$REPO/README.md" "$REPO/HACKING.md" "$texts/"
	cp -r "$REPO/docs" "$texts/docs"
	"$GPURUN" --help >"$texts/help.txt"
	local v
	for v in info list pull doctor cache cdi; do
		"$GPURUN" "$v" --help >>"$texts/help.txt" 2>&1 || true
	done
	run grep -rniE '\bsessions?\b|\bissues?\b|issue #|\bseed(s|ed)?\b' "$texts"
	[[ -z $output ]] || fail "user-facing text speaks of sessions, issues or seeds: $output"
}

@test "make install puts the binary, the man page and the completion under DESTDIR and PREFIX" {
	skip_unless_root "make writes the man page and the binary into the checkout"
	local dest=$BATS_TEST_TMPDIR/dest
	run make -C "$REPO" -s install PREFIX=/opt/gpurun-docs DESTDIR="$dest"
	assert_success
	assert_file_executable "$dest/opt/gpurun-docs/bin/gpurun"
	assert_file_exists "$dest/opt/gpurun-docs/share/man/man1/gpurun.1"
	assert_file_exists "$dest/opt/gpurun-docs/share/bash-completion/completions/gpurun"
	assert_file_not_exists /opt/gpurun-docs
	run env MANWIDTH=100 man -l "$dest/opt/gpurun-docs/share/man/man1/gpurun.1"
	assert_success
	assert_line --regexp '^ +gpurun - run a command in a container image'
	cmp "$COMPLETION" "$dest/opt/gpurun-docs/share/bash-completion/completions/gpurun"
}

@test "the completion completes verbs, options and their values" {
	# shellcheck disable=SC1090
	source "$COMPLETION"
	COMP_WORDS=(gpurun --dry)
	COMP_CWORD=1
	_gpurun
	assert_equal "${COMPREPLY[*]}" "--dry-run"
	COMP_WORDS=(gpurun --driver-root /x info --c)
	COMP_CWORD=4
	_gpurun
	assert_equal "${COMPREPLY[*]}" "--csv"
	COMP_WORDS=(gpurun --net "")
	COMP_CWORD=2
	_gpurun
	assert_equal "${COMPREPLY[*]}" "host none"
	COMP_WORDS=(gpurun cache pr)
	COMP_CWORD=2
	_gpurun
	assert_equal "${COMPREPLY[*]}" "prune"
}

@test "docs/security.md names only tests that exist" {
	local refs file name n=0
	refs=$(grep -oE '`[a-z_]+\.bats` › "[^"]+"' "$REPO/docs/security.md")
	[[ -n $refs ]] || fail "docs/security.md names no test"
	while IFS= read -r ref; do
		file=$(sed -E 's/^`([^`]+)`.*/\1/' <<<"$ref")
		name=$(sed -E 's/^[^"]*"(.*)"$/\1/' <<<"$ref")
		grep -qF "@test \"$name\"" "$REPO/tests/$file" || fail "docs/security.md names $file › \"$name\", which is not a test there"
		n=$((n + 1))
	done <<<"$refs"
	((n >= 20)) || fail "docs/security.md names only $n tests"
}

@test "docs/testing.md's table of suites names every suite" {
	local f missing=()
	for f in "$REPO"/tests/*.bats; do
		f=$(basename "$f" .bats)
		grep -qE "^\|[^|]*\`$f\`[^|]*\|" "$REPO/docs/testing.md" || missing+=("$f")
	done
	((${#missing[@]} == 0)) || fail "docs/testing.md does not list: ${missing[*]}"
}

@test "every table the benchmark scripts splice has its markers in docs/performance.md" {
	local names name n=0
	names=$(grep -hoE -- '--splice "?[^ ]*performance\.md"? "[^"]+"( [a-z]+)?' "$REPO"/tests/bench/*.sh |
		awk '{ print (NF == 4 ? $4 : "launch") }')
	[[ -n $names ]] || fail "no bench script splices into docs/performance.md"
	while IFS= read -r name; do
		local tag=bench:$name:
		[[ $name == launch ]] && tag=bench: # the launch table's markers have no name
		grep -qx "<!-- ${tag}begin -->" "$REPO/docs/performance.md" &&
			grep -qx "<!-- ${tag}end -->" "$REPO/docs/performance.md" ||
			fail "docs/performance.md has no <!-- ${tag}begin --> ... <!-- ${tag}end --> block"
		n=$((n + 1))
	done <<<"$names"
	((n == 7)) || fail "expected the 7 tables of the bench scripts, found $n: $names"
	run grep -l 'README' "$REPO"/tests/bench/*.sh "$REPO/tests/bench/ratios.py"
	assert_failure
}

@test "ratios.py --splice replaces one table of docs/performance.md and nothing else" {
	cp "$REPO/docs/performance.md" "$BATS_TEST_TMPDIR/perf.md"
	printf '| new | row |\n' >"$BATS_TEST_TMPDIR/rows.md"
	run python3 "$REPO/tests/bench/ratios.py" --splice "$BATS_TEST_TMPDIR/perf.md" "$BATS_TEST_TMPDIR/rows.md" registry
	assert_success
	run diff "$REPO/docs/performance.md" "$BATS_TEST_TMPDIR/perf.md"
	assert_failure
	# Only the registry block changed, and it holds just the new row.
	run awk '/<!-- bench:registry:begin -->/ { on = 1; next } /<!-- bench:registry:end -->/ { on = 0 } on' "$BATS_TEST_TMPDIR/perf.md"
	assert_output '| new | row |'
	run diff <(sed '/bench:registry:begin/,/bench:registry:end/d' "$REPO/docs/performance.md") \
		<(sed '/bench:registry:begin/,/bench:registry:end/d' "$BATS_TEST_TMPDIR/perf.md")
	assert_success
}

@test "docs/slurm.md's table has a row for every option the Slurm plugin takes and says which it refuses" {
	local opts name callback row said n=0
	# The plugin's table, spank_options[]: {"NAME", ARG, HELP, HAS_ARG, ID,
	# CALLBACK}, an entry over one line or two; the callback `refuse` is the
	# one that refuses.
	opts=$(sed -n '/^struct spank_option spank_options\[\]/,/SPANK_OPTIONS_TABLE_END/p' "$REPO/spank/gpurun_spank.c" |
		tr -d '\n\t' | grep -oE '\{"[a-z-]+"[^{}]*\}' | sed -E 's/^\{"([a-z-]+)".*, *([a-z_]+)\}$/\1 \2/')
	[[ -n $opts ]] || fail "no option table found in spank/gpurun_spank.c"
	while read -r name callback; do
		# The row whose first cell is `--NAME` or `--NAME=...`; its third cell
		# (escaped pipes aside) is what the plugin does.
		row=$(grep -E "^\| \`--$name[=\`]" "$REPO/docs/slurm.md") ||
			fail "docs/slurm.md has no row for the plugin's --$name"
		[[ $(wc -l <<<"$row") -eq 1 ]] || fail "docs/slurm.md has several rows for --$name"
		said=$(sed 's/\\|//g' <<<"$row" | cut -d'|' -f4)
		if [[ $callback == refuse ]]; then
			[[ $said == " Refused"* ]] || fail "the plugin refuses --$name, and docs/slurm.md does not say so:$said"
		else
			[[ $said != " Refused"* ]] || fail "docs/slurm.md says --$name is refused, and the plugin takes it"
		fi
		n=$((n + 1))
	done <<<"$opts"
	((n >= 16)) || fail "found only $n of the plugin's options: $opts"
}

@test "docs/slurm.md names only tests that exist" {
	local refs ref file name n=0
	# A name may wrap across lines in the page: join them first.
	refs=$(tr '\n' ' ' <"$REPO/docs/slurm.md" | sed 's/  */ /g' | grep -oE '`[a-z_]+\.bats` › "[^"]+"')
	[[ -n $refs ]] || fail "docs/slurm.md names no test"
	while IFS= read -r ref; do
		file=$(sed -E 's/^`([^`]+)`.*/\1/' <<<"$ref")
		name=$(sed -E 's/^[^"]*"(.*)"$/\1/' <<<"$ref")
		grep -qF "@test \"$name\"" "$REPO/tests/$file" || fail "docs/slurm.md names $file › \"$name\", which is not a test there"
		n=$((n + 1))
	done <<<"$refs"
	((n >= 20)) || fail "docs/slurm.md names only $n tests"
}
