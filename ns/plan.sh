# ns/plan.sh — the shell functions of the printed plan: ns/show.c prints
# those the steps call after the steps (the build embeds this file without
# this first paragraph, its blank lines and its comments, the "# Helpers"
# line excepted; `make lint` runs shellcheck on it).  Each keeps the guard
# gpurun has from openat2(RESOLVE_IN_ROOT): mount, mkdir, touch and >
# follow symlinks, so no path of the image is used before inroot has
# checked that no symlink sends it out of the new root; nothing but the
# plan writes into the fresh root, so a path checked stays as checked.
# The words @LIKE_THIS@ are gpurun's constants (base/plan/plan.h), put in
# when the plan is printed.  after_pivot takes its parent's pid from
# /proc/self/stat, not $PPID: the /proc it sees is the host's, and $PPID
# counts in the new pid namespace.

# shellcheck shell=sh
# shellcheck disable=SC2016,SC2015 # the scripts in single quotes run in another sh
# Helpers: inroot refuses a path an image symlink sends out of the new root.
# inroot PATH: refused when a symlink of the image sends PATH out of the new root.
inroot() {
	_r='' _p=$1 _n=0
	while [ -n "$_p" ] && [ "$_n" -le 40 ]; do
		_c=${_p%%/*}; _p=${_p#"$_c"}; _p=${_p#/}; _t=${_r:+$_r/}$_c
		case $_c in '' | .) ;; ..) case $_r in */*) _r=${_r%/*} ;; ?*) _r='' ;; *) _n=99 ;; esac ;;
		*) if [ -L "$_t" ]; then _l=$(readlink -- "$_t") _n=$((_n + 1)); _p=$_l${_p:+/$_p}; case $_l in /*) _n=99 ;; esac; else _r=$_t; fi ;; esac
	done; [ "$_n" -le 40 ] || { echo "gpurun plan: refused: a symlink in the image sends $1 out of the new root" >&2; exit 125; }
}
# shellcheck disable=SC2174 # as gpurun: the mode is the last directory's
make_dir() { [ "$1" != -m ] || set -- "$3" "$2"; inroot "$1"; mkdir -p ${2:+-m "$2"} "$1"; }   # [-m MODE] DIR
in_dir() { case $1 in */*) make_dir "${1%/*}" ;; esac; }   # PATH: makes PATH's directory
not_a_link() { [ ! -L "$1" ] || rm "$1"; }   # PATH: removes an image symlink there
bind_file() { in_dir "$3"; inroot "$3"; [ -e "$3" ] || touch "$3"; mount --bind ${1:+-o "$1"} "$2" "$3"; }   # OPTS SRC DST
bind_over() { in_dir "$3"; not_a_link "$3"; bind_file "$@"; }   # OPTS SRC DST: the same, over an image symlink
rbind_file() { in_dir "$3"; inroot "$3"; [ -e "$3" ] || touch "$3"; mount --rbind ${1:+-o "$1"} "$2" "$3"; }   # OPTS SRC DST
# bind_files OPTS FROM TO NAME...: FROM/NAME on TO/NAME, for each NAME.
bind_files() { _fo=$1 _fs=${2%/} _ft=$3; shift 3; for _f; do bind_over "$_fo" "$_fs/$_f" "$_ft/$_f"; done; }
bind_each() { _o=$1 _s=$2; shift 2; for _f; do bind_file "$_o" "$_s" "$_f"; done; }   # OPTS SRC DST...: SRC on each DST
# link_in DIR TARGET NAME...: DIR/NAME -> TARGET, in pairs; as gpurun, a NAME the image has that is not a symlink is left.
link_in() { make_dir "$1"; _d=$1; shift; while [ $# -ge 2 ]; do [ -e "$_d/$2" ] && [ ! -L "$_d/$2" ] || ln -sfn "$1" "$_d/$2"; shift 2; done; }
bind_dir() { make_dir "$3"; mount -o "$1" "$2" "$3"; }   # bind|rbind[,OPTS] SRC DST: a directory (rbind: with the mounts below it)
rbind_self() { _o=$1; shift; for _m; do inroot "$_m"; mount --rbind -o "$_o" "$_m" "$_m"; done; }   # OPTS DST...: each on itself
# remount OPTS [-C DIR] DST...: on each, in DIR (-o of a bind sets the top one only).
remount() { _o=$1 _d=.; shift; [ "$1" != -C ] || { _d=$2; shift 2; }; for _m; do mount -o "remount,bind${_o:+,$_o}" "$_d/$_m"; done; }
write_file() { in_dir "$1"; not_a_link "$1"; "$3" | head -c "$2" >"$1"; }   # DST LEN BODY: the LEN bytes function BODY prints
# write_if_dir DST LEN BODY: DST holds the LEN bytes function BODY prints, if DST's directory is there.
write_if_dir() { inroot "${1%/*}"; if [ -d "${1%/*}" ]; then not_a_link "$1"; "$3" | head -c "$2" >"$1"; fi; }
driver_text() { for _f; do in_dir "$_f"; not_a_link "$_f"; cat "${D-}/$_f" >"$_f"; done; }   # PATH...: the text of "$D"/PATH
# driver_params PATH: PATH holds the text of "$D"/PATH, with ModifyDeviceFiles 0 (gpu/procfs.c's rule).
driver_params() { in_dir "$1"; not_a_link "$1"; awk -F: '{ k = $1; gsub(/^[ \t\r]+|[ \t\r]+$/, "", k) }
	/:/ && k ~ /^(NVreg_)?ModifyDeviceFiles$/ { $0 = k ": 0"; f = 1 } 1; END { if (!f) print "ModifyDeviceFiles: 0" }' "${D-}/$1" >"$1"; }
# shellcheck disable=SC2034 # the steps use it
WAIT_GO='read -r t <"$0"; [ "$t" = go ] || exit 125; cd "$1"; shift; unset PWD OLDPWD; exec "$@"'   # the host's sh, before the pivot: waits for go on $0
# image_ldconfig: after pivot_root, by sh's builtins alone: the image's ldconfig, the first of these it has.
image_ldconfig() { for _l in @LDCONFIG_PATHS@ ''; do [ -f "$_l" ] && [ -x "$_l" ] && break; done; echo "$_l"; }
# cuda_compat MAJOR: what image_ldconfig prints, and @CUDA_COMPAT_DIR@ if its newest libcuda is newer than the driver's MAJOR.
cuda_compat() {
	_c=0; for _f in @CUDA_COMPAT_DIR@/libcuda.so.*.*; do _v=${_f##*/libcuda.so.}; _v=${_v%%.*}
		case $_v in "" | *[!0-9]*) continue ;; esac; [ "$_v" -le "$_c" ] || _c=$_v; done
	echo "$(image_ldconfig)" "$([ "$_c" -le "$1" ] || echo @CUDA_COMPAT_DIR@)"
}
# after_pivot OWNER IDS FLAGS DIR...: in the host's root, which pivot_root leaves, start ldconfig (LD_GO: IDS, no capability); after
# the pivot (fifo piv) detach the old root, run ldconfig on DIR... (cache: OWNER's), remount with FLAGS, let the command go.
# shellcheck disable=SC2034 # after_pivot uses it
LD_GO='read -r d l c <"$0"; [ -n "$l" ] || exit 0; exec "$l" @LDCONFIG_ARGS@ "/$d/@LDCONFIG_CACHE_NAME@" $c "$@"'
after_pivot() {
	mkfifo "$S/go" "$S/piv" "$S/ld"
	chroot "$S/host" /bin/sh -euc 'w=$1 o=$2 i=$3 f=$4; shift 4; read -r _ _ _ p _ </proc/self/stat; r=/proc/$p/root
chroot "$r" unshare --pid --fork -- setpriv --nnp --inh-caps=-all --ambient-caps=-all --bounding-set=-all $i -- \
	env -i /bin/sh -c "$w" "$0/ld" "$@" </dev/null >/dev/null 2>&1 &
exec 6>"$0/ld" 4>"$0/go" 5<"$0/piv"; read -r l c <&5; cd "$r"; umount -l .
if [ -n "$l" ]; then d=$(mktemp -d @LDCONFIG_SCRATCH@XXXXXX); n=$(stat -c %i "$d"); chown "$o" "$d"; fi
echo "${d-} $l $c" >&6; exec 6>&-; wait $! || :
if [ -n "$l" ]; then e=@LDCONFIG_CACHE@; k=$d/${e##*/}; [ ! -L "$d" ] && [ "$(stat -c %i "$d")" = "$n" ] || exit 125
	if [ -f "$k" ] && [ ! -L "$k" ] && [ "$(stat -c %u "$k")" = "${o%:*}" ] && [ "$(stat -c %s "$k")" -le @LDCONFIG_CACHE_MAX@ ] &&
		[ -d "${e%/*}" ] && [ ! -L "${e%/*}" ]; then rm -f "$e~" && cat "$k" >"$e~" && mv -fT "$e~" "$e" || rm -f "$e~"; fi
	rm -f "$k" "$k~"; rmdir "$d"; fi
[ -z "$f" ] || mount -o "remount,bind,$f" .
echo go >&4' "$S" "$LD_GO" "$@" &
}
