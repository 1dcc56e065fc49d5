# ns/plan.sh — the shell functions of the printed plan: ns/show.c prints
# them after the plan's steps (the build embeds this file without this
# first paragraph, its shellcheck lines and its blank lines; `make lint`
# runs shellcheck on it).  Each keeps the guard gpurun has from
# openat2(RESOLVE_IN_ROOT): mount, mkdir, touch and > follow symlinks, so
# no path of the image is used before inroot has checked that no symlink
# sends it out of the new root; nothing but the plan writes into the fresh
# root, so a path checked stays as checked.  The words @LIKE_THIS@ are
# gpurun's constants (base/plan/plan.h), put in when the plan is printed.

# shellcheck shell=sh
# shellcheck disable=SC2016,SC2015 # the scripts in single quotes run in another sh
# Helpers (only those the steps call): fail stops the plan and the waiting command.
fail() { echo stop >&4; exit 125; }
# inroot PATH: refused when a symlink of the image sends PATH out of the new root (absolute, or climbing with ..).
inroot() {
	_r='' _p=$1 _n=0
	while [ -n "$_p" ] && [ "$_n" -le 40 ]; do
		_c=${_p%%/*}; _p=${_p#"$_c"}; _p=${_p#/}; _t=${_r:+$_r/}$_c
		case $_c in '' | .) ;; ..) case $_r in */*) _r=${_r%/*} ;; ?*) _r='' ;; *) _n=99 ;; esac ;;
		*) if [ -L "$_t" ]; then _l=$(readlink -- "$_t") _n=$((_n + 1)); _p=$_l${_p:+/$_p}; case $_l in /*) _n=99 ;; esac; else _r=$_t; fi ;; esac
	done
	[ "$_n" -le 40 ] || { echo "gpurun plan: refused: a symlink in the image sends $1 out of the new root" >&2; exit 125; }
}
# make_dir [-m MODE] DIR; in_dir PATH: PATH's directory; not_a_link PATH: an image symlink there is removed.
# shellcheck disable=SC2174 # as gpurun: the mode is the last directory's
make_dir() { if [ "$1" = -m ]; then inroot "$3"; mkdir -p -m "$2" "$3"; else inroot "$1"; mkdir -p "$1"; fi; }
in_dir() { case $1 in */*) make_dir "${1%/*}" ;; esac; }
not_a_link() { [ ! -L "$1" ] || rm "$1"; }
# bind_file OPTS SRC DST: SRC on DST (a file made where missing); bind_over: over an image symlink too.
bind_file() { in_dir "$3"; inroot "$3"; [ -e "$3" ] || touch "$3"; mount --bind ${1:+-o "$1"} "$2" "$3"; }
bind_over() { in_dir "$3"; not_a_link "$3"; bind_file "$@"; }
# rbind_file OPTS SRC DST: with --rbind, as gpurun's clone of the source is recursive.
rbind_file() { in_dir "$3"; inroot "$3"; [ -e "$3" ] || touch "$3"; mount --rbind ${1:+-o "$1"} "$2" "$3"; }
# host_files OPTS PATH...: the host's /PATH on PATH.
host_files() { _o=$1; shift; for _f; do bind_file "$_o" "/$_f" "$_f"; done; }
# driver_files OPTS PATH...: "$D"/PATH on PATH, over image symlinks.
driver_files() { _o=$1; shift; for _f; do bind_over "$_o" "$D/$_f" "$_f"; done; }
# bind_each OPTS SRC DST...: SRC on each DST.
bind_each() { _o=$1 _s=$2; shift 2; for _f; do bind_file "$_o" "$_s" "$_f"; done; }
# driver_libs OPTS DIR TO NAME...: "$D"DIR/NAME on TO/NAME, over image symlinks.
driver_libs() { _lo=$1 _ld=$2 _lt=$3; shift 3; for _f; do bind_over "$_lo" "${D-}$_ld/$_f" "$_lt/$_f"; done; }
# link_in DIR TARGET NAME...: the symlinks DIR/NAME to TARGET, in pairs.
link_in() { _ki=$1; shift; while [ $# -ge 2 ]; do link "$1" "$_ki/$2"; shift 2; done; }
# bind_dir OPTS SRC DST: a directory.
bind_dir() { make_dir "$3"; mount --bind ${1:+-o "$1"} "$2" "$3"; }
# rbind_dir OPTS SRC DST: a directory, with the mounts below it.
rbind_dir() { make_dir "$3"; mount --rbind ${1:+-o "$1"} "$2" "$3"; }
# rbind_self OPTS DST...: each DST bound on itself.
rbind_self() { _o=$1; shift; for _m; do inroot "$_m"; mount --rbind -o "$_o" "$_m" "$_m"; done; }
# remount OPTS DST...: OPTS on each mount DST (mount -o of a bind sets the top one only).
remount() { _o=$1; shift; for _m; do mount -o "remount,bind${_o:+,$_o}" "$_m"; done; }
# link TARGET LINK...: the symlinks, in pairs.
link() { while [ $# -ge 2 ]; do in_dir "$2"; ln -sfn "$1" "$2"; shift 2; done; }
# write_file DST LEN BODY: DST holds the LEN bytes function BODY prints.
write_file() { in_dir "$1"; not_a_link "$1"; "$3" | head -c "$2" >"$1"; }
# write_if_dir DST LEN BODY: the same, if DST's directory is there.
write_if_dir() { inroot "${1%/*}"; if [ -d "${1%/*}" ]; then not_a_link "$1"; "$3" | head -c "$2" >"$1"; fi; }
# driver_text PATH...: PATH holds the text of "$D"/PATH.
driver_text() { for _f; do in_dir "$_f"; not_a_link "$_f"; cat "${D-}/$_f" >"$_f"; done; }
# driver_params PATH: the same, with ModifyDeviceFiles 0 (gpu/procfs.c's rule).
driver_params() { in_dir "$1"; not_a_link "$1"; awk '{ k = $0; sub(/:.*/, "", k); gsub(/^[ \t\r]+|[ \t\r]+$/, "", k) }
	/:/ && k ~ /^(NVreg_)?ModifyDeviceFiles$/ { $0 = k ": 0"; f = 1 } 1; END { if (!f) print "ModifyDeviceFiles: 0" }' "${D-}/$1" >"$1"; }
# ldconfig_dir UID GID: LDDIR, a directory of the root for ldconfig's cache, that user's alone (empty: no ldconfig).
ldconfig_dir() { LDINO=; LDDIR=$(mktemp -d @LDCONFIG_SCRATCH@XXXXXX) && chown "$1:$2" "$LDDIR" && LDINO=$(stat -c %i "$LDDIR") || LDDIR=; }
# handshakes: fifos the command (fds 3, 4) and the helpers wait on; ready [ld]: they are waiting; ask: the helper does it.
handshakes() { mkfifo "$S/ready" "$S/go" "$S/helper" "$S/helped" "$S/ldgo"; exec 3<>"$S/ready" 4<>"$S/go"; }
ready() { read -r _ <&3 && read -r _ <&6 && { [ -z "${1-}" ] || read -r _ <&6; } || fail; }
ask() { echo "$1" >&5 && read -r _a <&6 && [ "$_a" = ok ] || fail; }
# old_root_helper OWNER FLAGS: in the host's root, the new one as /proc/PID/root: "detach" the old root; "ld": ldconfig's
# cache (OWNER's file) to /@LDCONFIG_CACHE@, $LDDIR removed; "ro": FLAGS.
old_root_helper() {
	chroot "$S/host" /bin/sh -euc 'o=$1 f=$2 d=$3 e=@LDCONFIG_CACHE@; c=$d/${e##*/}; echo >&6; read -r t <&5
read -r _ _ _ p _ </proc/self/stat; cd "/proc/$p/root"; umount -l .; echo ok >&6; read -r t <&5
if [ "$t" = ld ]; then if [ -n "$d" ]; then [ -d "$d" ] && [ ! -L "$d" ] && [ "$(stat -c %i "$d")" = "$4" ] || exit 1
	if [ -f "$c" ] && [ ! -L "$c" ] && [ "$(stat -c %u "$c")" = "$o" ] && [ "$(stat -c %s "$c")" -le @LDCONFIG_CACHE_MAX@ ] &&
		[ -d "${e%/*}" ] && [ ! -L "${e%/*}" ]; then rm -f "$e~" && cat "$c" >"$e~" && mv -fT "$e~" "$e" || rm -f "$e~" || :; fi
	rm -f "$c" "$c~"; rmdir "$d"; fi; echo ok >&6; read -r t <&5; fi
[ "$t" = ro ] || exit 0; mount -o "remount,bind,$f" .; echo ok >&6' sh "$1" "$2" "${LDDIR-}" "${LDINO-}" || echo fail >&6
}
# ldconfig_as IDS COMPAT DIR...: the image's ldconfig, run on "go" (fd 7): setpriv's IDS, no capability, its own pid
# namespace; COMPAT: the driver's major, when newer libcuda of @CUDA_COMPAT_DIR@ go first.
ldconfig_as() {
	_ids=$1 _h=$2; shift 2
	# shellcheck disable=SC2086 # IDS: setpriv's options
	unshare --pid --fork -- setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=-all $_ids -- env -i /bin/sh -c '
echo >&6; exec 6>&-; read -r t; exec </dev/null; [ "$t" = go ] && [ -n "$1" ] || exit 0; LDDIR=$1 h=$2; shift 2
if [ -n "$h" ]; then c=0; for f in @CUDA_COMPAT_DIR@/libcuda.so.*.*; do v=${f##*/libcuda.so.}; v=${v%%.*}
	case $v in "" | *[!0-9]*) continue ;; esac; [ "$v" -le "$c" ] || c=$v; done; [ "$c" -le "$h" ] || set -- @CUDA_COMPAT_DIR@ "$@"; fi
for l in @LDCONFIG_PATHS@; do
	if [ -f "$l" ] && [ -x "$l" ]; then exec "$l" @LDCONFIG_ARGS@ "/$LDDIR/@LDCONFIG_CACHE_NAME@" "$@"; fi; done
' sh "${LDDIR-}" "$_h" "$@" <&7 >/dev/null 2>&1
}
# run_as IDS ENV... -- DIR COMMAND...: set up now with the host's setpriv (no_new_privs, bounding set $CAPS, IDS, only ENV;
# MAP=UID:GID: a user namespace maps that id); on "go" (fd 4) it enters DIR and execs COMMAND.
run_as() {
	_ids=$1 _s=; shift
	for _a; do
		shift
		if [ -z "$_s" ] && [ "$_a" = -- ]; then _s=1; set -- "$@" /bin/sh -c 'echo >&3; read -r t <&4; exec 3>&- 4>&-
[ "$t" = go ] || exit 125; cd "$1"; shift; unset PWD OLDPWD; exec "$@"' sh; else set -- "$@" "$_a"; fi
	done
	# shellcheck disable=SC2086 # IDS: setpriv's options
	set -- setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set="$CAPS" $_ids -- env -i "$@"
	if [ -n "${MAP-}" ]; then unshare --user --map-user="${MAP%:*}" --map-group="${MAP#*:}" --keep-caps -- "$@"; else "$@"; fi
}
