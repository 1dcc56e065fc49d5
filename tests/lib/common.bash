# tests/lib/common.bash — what every gpurun bats suite loads first:
#   load lib/common
#
# Sets GPURUN (the binary under test, absolute), TESTS_BUILD (the git-ignored
# cache of fixtures), GPURUN_TEST_MODE (root | user), and offers the mode
# skips and the host snapshot used to prove that a run (or a failed run)
# leaves nothing behind.  Images: lib/images.bash (sourced from here).

bats_require_minimum_version 1.5.0

# Everything at the top level here runs again for every test (bats sources
# the suite anew in each test's process), so it forks nothing.
#
# bats_lib_files NAME: the files `bats_load_library NAME` would source, into
# the array BATS_LIB_FILES (empty for a load.bash of another shape).  A
# library's load.bash sources each of its files through
# "$(dirname "${BASH_SOURCE[0]}")", one dirname(1) a file: for the three
# libraries that was 85 ms of every test, a sixth of `make check`.  They are
# sourced here in the same order, from the top level as load.bash does.
bats_lib_files() {
	local dir load line paths pre='source "$(dirname "${BASH_SOURCE[0]}")/'
	BATS_LIB_FILES=()
	IFS=: read -ra paths <<<"${BATS_LIB_PATH:-/usr/lib/bats}"
	for dir in "${paths[@]}"; do
		load=$dir/$1/load.bash
		[[ -f $load ]] && break
	done
	[[ -f $load ]] || return 0
	while IFS= read -r line; do
		[[ -z $line || $line == '#'* ]] && continue
		if [[ $line != "$pre"*'"' ]]; then
			BATS_LIB_FILES=()
			return 0
		fi
		line=${line#"$pre"}
		BATS_LIB_FILES+=("$dir/$1/${line%'"'}")
	done <"$load"
}
for BATS_LIB in bats-support bats-assert bats-file; do
	bats_lib_files "$BATS_LIB"
	((${#BATS_LIB_FILES[@]})) || bats_load_library "$BATS_LIB"
	for BATS_LIB in "${BATS_LIB_FILES[@]}"; do
		# shellcheck disable=SC1090
		source "$BATS_LIB"
	done
done
unset BATS_LIB BATS_LIB_FILES

TESTS_DIR=$BATS_TEST_DIRNAME
[[ $TESTS_DIR == /* ]] || TESTS_DIR=$PWD/$TESTS_DIR
GPURUN="${GPURUN:-${TESTS_DIR%/*}/gpurun}"
[[ $GPURUN == /* ]] || GPURUN=$PWD/$GPURUN
TESTS_BUILD="${TESTS_BUILD:-$TESTS_DIR/build}"
[[ -d $TESTS_BUILD ]] || mkdir -p "$TESTS_BUILD" 2>/dev/null || true
export GPURUN TESTS_BUILD

# root: run as uid 0, no user namespace.  user: an unprivileged caller, the
# launcher adds a user namespace.  run-bats.sh sets it; by hand it follows
# the caller's uid.
if [[ -z "${GPURUN_TEST_MODE:-}" ]]; then
	if ((EUID == 0)); then GPURUN_TEST_MODE=root; else GPURUN_TEST_MODE=user; fi
fi
export GPURUN_TEST_MODE

# The image cache of this bats run: shared by its tests, never the user's.
export GPURUN_CACHE=${GPURUN_CACHE:-$BATS_RUN_TMPDIR/gpurun-cache}

# A hung launcher must fail its test, not the whole run.
: "${BATS_TEST_TIMEOUT:=120}"
export BATS_TEST_TIMEOUT

# shellcheck source=images.bash
source "$TESTS_DIR/lib/images.bash"
# shellcheck source=oci.bash
source "$TESTS_DIR/lib/oci.bash"
# The fixtures' directories are named by stamps of their sources (a hash
# and a few forks, 100 ms): found here, in the process that runs
# setup_file, and exported, so that a test's $(fixture NAME) only looks.
# In a test's own process they are set already and these return at once.
images_init
oci_init

skip_unless_root() {
	if [[ "$GPURUN_TEST_MODE" != root || $(id -u) -ne 0 ]]; then
		skip "${1:-needs root} (mode $GPURUN_TEST_MODE)"
	fi
}

skip_unless_user() {
	if [[ "$GPURUN_TEST_MODE" != user || $(id -u) -eq 0 ]]; then
		skip "${1:-needs an unprivileged caller} (mode $GPURUN_TEST_MODE)"
	fi
}

# The launcher must exist; a missing binary is a failure, not a skip.
require_gpurun() {
	[[ -x "$GPURUN" ]] || fail "$GPURUN is missing: build it with 'make gpurun'"
}

# host_snapshot FILE: what a run must not change on the host —
#   the mount table of this process (mount and parent ids dropped: they are
#   counters, the rest says what is mounted where and how),
#   the entries of ${TMPDIR:-/tmp} (bats' own run directories left out),
#   the entries of /dev,
#   the processes still running $GPURUN (a monitor, or a container's pid 1,
#   which keeps gpurun's argv; its command dies with it).
host_snapshot() {
	local out=$1 tmp=${TMPDIR:-/tmp}
	{
		echo "## /proc/self/mountinfo"
		cut -d' ' -f3- /proc/self/mountinfo
		echo "## entries of $tmp and /dev"
		find "$tmp" /dev -mindepth 1 -maxdepth 1 ! -name 'bats-run-*' ! -name 'bats.*' \
			-printf '%h/%f %y\n' 2>/dev/null | LC_ALL=C sort
		echo "## processes running $GPURUN"
		gpurun_procs | LC_ALL=C sort
	} >"$out"
}

# A note on speed: bats traps every command of a test (its DEBUG trap
# keeps the stack for failure messages), so a shell loop over /proc costs
# about 70 ms; one ps(1) or grep(1) costs a few.  Every test takes two
# snapshots.

# gpurun_procs: the command line of every process whose argv[0] is
# $GPURUN, one a line (ps and awk themselves are never listed).
gpurun_procs() {
	ps -e -o args= | awk -v g="$GPURUN" 'substr($0, 1, length(g)) == g &&
		(length($0) == length(g) || substr($0, length(g) + 1, 1) == " ")'
}

# procs_with TOKEN: "PID ARGV..." of every process whose command line or
# environment holds TOKEN (environments that cannot be read are skipped).
# TOKEN must not be in this shell's own environment; grep reads it from a
# pipe, so that grep's own command line does not hold it.
procs_with() {
	local pid
	grep -lsaF -f <(printf '%s\n' "$1") /proc/[0-9]*/cmdline /proc/[0-9]*/environ |
		cut -d/ -f3 | sort -un | while read -r pid; do
		echo "$pid $(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline")"
	done
	return 0
}

# wait_procs_gone TOKEN [SECS]: until no process holds TOKEN (a killed
# launch: the kernel ends a pid namespace whose init died, and
# PR_SET_PDEATHSIG ends pid 1 when the monitor died, each in a moment).
wait_procs_gone() {
	local tok=$1 secs=${2:-30} i left
	for ((i = 0; i < secs * 20; i++)); do
		left=$(procs_with "$tok")
		[[ -z $left ]] && return 0
		sleep 0.05
	done
	fail "processes of a killed launch are still running after ${secs}s:"$'\n'"$left"
}

# assert_host_unchanged FILE: compare with a new snapshot; the diff is the
# failure message.  Only what appeared or changed counts: a mount, a
# temporary entry or a process that another process removed meanwhile is
# not the run's doing (the tests of a parallel suite, a sibling's tmpfs).
assert_host_unchanged() {
	local before=$1 after diff
	after=$(mktemp "${BATS_TEST_TMPDIR:-/tmp}/host-after.XXXXXX")
	host_snapshot "$after"
	if ! diff=$(diff -u "$before" "$after") && grep -q '^+[^+]' <<<"$diff"; then
		rm -f "$after"
		batslib_print_kv_single_or_multi 8 "host changed" "$diff" |
			batslib_decorate "the run left something behind on the host" | fail
		return 1
	fi
	rm -f "$after"
}

# slash_overlay_refused: whether, unprivileged, this kernel refuses an
# overlay whose lower layer is / (the mounts under it, which a user
# namespace gets locked, and overlayfs takes no lower layer with locked
# mounts under it): what doctor warns about, and why `gpurun / CMD` fails
# there.  Asked of the kernel with util-linux, not of gpurun.
slash_overlay_refused() {
	[[ $GPURUN_TEST_MODE == user ]] || return 1
	local d=$BATS_TEST_TMPDIR/slash-overlay
	mkdir -p "$d"
	! unshare -Urm sh -c 'mount -t tmpfs t "$1" && mkdir "$1/u" "$1/w" "$1/m" &&
		mount -t overlay o -o "lowerdir=/,upperdir=$1/u,workdir=$1/w,userxattr" "$1/m"' sh "$d" 2>/dev/null
}

# host_ns NAME: the host's namespace link, to compare with `probe ns NAME`.
host_ns() {
	echo "$1 $(readlink "/proc/self/ns/$1")"
}

# plan_join: the plan on stdin, each step whose words go on over lines
# ending in " \" (the next starting with a tab) joined into one line.
plan_join() {
	sed -e ':a' -e '/ \\$/{N;s/ \\\n\t*/ /;ba' -e '}'
}

# wait_for_line FILE TEXT [SECS]: until FILE has a line TEXT (a background
# launcher printing "ready").
wait_for_line() {
	local file=$1 text=$2 secs=${3:-30} i
	for ((i = 0; i < secs * 20; i++)); do
		grep -qxF -- "$text" "$file" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "no line '$text' in $file after ${secs}s; it has:" >&2
	cat "$file" >&2
	return 1
}

# The fixtures most suites need, as variables.  Call from setup_file.
common_images() {
	BUSYBOX_DIR=$(fixture busybox)
	BUSYBOX_TAR=$(fixture busybox.tar)
	BUSYBOX_TGZ=$(fixture busybox.tar.gz)
	export BUSYBOX_DIR BUSYBOX_TAR BUSYBOX_TGZ
}

# image_copy NAME [DEST]: a private, modifiable copy of the fixture directory
# NAME (busybox, glibc); prints its path.
image_copy() {
	local dest=${2:-$BATS_TEST_TMPDIR/$1-copy}
	cp -a "$(fixture "$1")" "$dest" && printf '%s\n' "$dest"
}

# tty_run CMD [ARG...]: run a command with a terminal on its stdin, stdout
# and stderr (script(1) allocates one); carriage returns are stripped.
tty_run() {
	local cmdline
	printf -v cmdline '%q ' "$@"
	run bash -c "script -qec $(printf '%q' "$cmdline") /dev/null </dev/null | tr -d '\r'"
}

# assert_gpurun_error STATUS [FRAGMENT...]: after `run --separate-stderr`:
# the launcher failed with STATUS, printed nothing on stdout and exactly one
# error line "gpurun: ..." on stderr (an optional "hint: ..." line may
# follow; "gpurun: warning: ..." lines are ignored), containing each FRAGMENT.
assert_gpurun_error() {
	local want=$1 frag line n=0
	shift
	assert_equal "$status" "$want"
	assert_equal "$output" ""
	for line in "${stderr_lines[@]}"; do
		case $line in
		"hint: "* | "gpurun: hint: "*) ;;
		# Warnings are the subject of their own tests ("prints nothing on
		# stderr"); here only the error line counts.
		"gpurun: warning: "*) ;;
		"gpurun: "*) n=$((n + 1)) ;;
		*) fail "unexpected stderr line: '$line' (stderr: $stderr)" ;;
		esac
	done
	[[ $n -eq 1 ]] || fail "want exactly one 'gpurun: ' line on stderr, got $n: $stderr"
	local err
	err=$(printf '%s\n' "${stderr_lines[@]}" | grep '^gpurun: ' | grep -v '^gpurun: \(warning\|hint\): ')
	for frag in "$@"; do
		[[ "$err" == *"$frag"* ]] || fail "the error line does not mention '$frag': $err"
	done
}

# assert_stderr_partial FRAGMENT: after `run --separate-stderr`, stderr
# contains FRAGMENT.
assert_stderr_partial() {
	[[ "$stderr" == *"$1"* ]] || fail "stderr does not contain '$1': $stderr"
}

# mktar OUT [--pax] [--base TAR] ENTRY...: write a tar archive.  ENTRY is
# KIND|NAME[|ARG...]:  f|name|content[|mode]   d|name[|mode]   s|name|target
# (symlink)   h|name|target[|data] (hard link; data makes it a pax hard link
# with content)   c|name  b|name  p|name (char/block device, FIFO).  With
# --base, the entries are appended to a copy of TAR.  Every mtime is
# 1700000000.
mktar() {
	python3 - "$@" <<-'EOF'
		import io, shutil, sys, tarfile
		args = sys.argv[1:]
		out, fmt, base = args.pop(0), tarfile.GNU_FORMAT, None
		while args and args[0].startswith('--'):
		    opt = args.pop(0)
		    if opt == '--pax':
		        fmt = tarfile.PAX_FORMAT
		    elif opt == '--base':
		        base = args.pop(0)
		if base:
		    shutil.copyfile(base, out)
		with tarfile.open(out, 'a' if base else 'w', format=fmt) as tf:
		    for spec in args:
		        kind, name, *rest = spec.split('|')
		        t = tarfile.TarInfo(name)
		        t.mtime, t.mode, data = 1700000000, 0o644, b''
		        if kind == 'f':
		            data = rest[0].encode() if rest else b''
		            if len(rest) > 1:
		                t.mode = int(rest[1], 8)
		        elif kind == 'd':
		            t.type, t.mode = tarfile.DIRTYPE, int(rest[0], 8) if rest else 0o755
		        elif kind == 's':
		            t.type, t.linkname = tarfile.SYMTYPE, rest[0]
		        elif kind == 'h':
		            t.type, t.linkname = tarfile.LNKTYPE, rest[0]
		            if len(rest) > 1:
		                data = rest[1].encode()
		                t.pax_headers = {'comment': 'hard link with data'}
		        elif kind in 'cb':
		            t.type = tarfile.CHRTYPE if kind == 'c' else tarfile.BLKTYPE
		            t.devmajor, t.devminor = 1, 3
		        elif kind == 'p':
		            t.type = tarfile.FIFOTYPE
		        t.size = len(data)
		        tf.addfile(t, io.BytesIO(data) if data else None)
	EOF
}

# assert_cache_consistent: every layer directory of $GPURUN_CACHE has its
# .ok marker.  What holds after launches that ran to their end: a launch
# killed between a layer's rename into layers/ and its .ok leaves the
# directory without it (never trusted: a layer needs both), until the next
# launch that finds the cache idle sweeps it.
assert_cache_consistent() {
	local d
	for d in "$GPURUN_CACHE"/layers/*/; do
		[[ -d $d ]] || continue
		[[ -f ${d%/}.ok ]] || fail "a partial layer would be trusted: $d"
	done
}

# big_tgz OUT NDIRS NFILES SIZE: the busybox image (gzip, fast level) plus
# NFILES files of SIZE bytes under /big, or NFILES in each of NDIRS
# directories /big/dNN when NDIRS > 0: an unpack long enough to be killed
# in the middle of.  Needs common_images.
big_tgz() {
	python3 - "$1" "$BUSYBOX_TGZ" "$2" "$3" "$4" <<-'PY'
		import io, sys, tarfile
		out, base = sys.argv[1], sys.argv[2]
		ndirs, nfiles, size = (int(x) for x in sys.argv[3:6])
		def add_files(dst, prefix, tag):
		    for i in range(nfiles):
		        blob = ((b"%s-%d " % (tag, i)) * (size // 4 + 1))[:size]
		        t = tarfile.TarInfo("%s/f%04d" % (prefix, i)); t.size = len(blob)
		        dst.addfile(t, io.BytesIO(blob))
		with tarfile.open(base) as src, tarfile.open(out, "w:gz", compresslevel=1) as dst:
		    for m in src.getmembers():
		        dst.addfile(m, src.extractfile(m) if m.isfile() else None)
		    if ndirs == 0:
		        add_files(dst, "big", b"f")
		    for d in range(ndirs):
		        t = tarfile.TarInfo("big/d%02d" % d); t.type = tarfile.DIRTYPE; t.mode = 0o755
		        dst.addfile(t)
		        add_files(dst, "big/d%02d" % d, b"%d" % d)
	PY
}
