#!/usr/bin/env bash
# tests/lib/realdriver.bash — a driver root made of NVIDIA's real user-space
# files, as Debian 12 ships them, with the fake kit's kernel side:
#
#   bash tests/lib/realdriver.bash build     (root) fetch if needed, unpack,
#                                            print the root's path
#   bash tests/lib/realdriver.bash path      the finished root's path, or
#                                            nothing
#   bash tests/lib/realdriver.bash check     fails when a test changed it
#   source tests/lib/realdriver.bash; real_driver   the path of a finished
#                                            root, or nothing
#
# The .debs (amd64 and the i386 builds of the libraries) come from
# deb.debian.org bookworm through a private apt configuration: its own
# sources.list, lists, cache and an empty dpkg status under
# $GPURUN_NVIDIA_DEBS/apt, so the host's apt sources and state are never
# read or written.  They are kept outside the clone in
# $GPURUN_NVIDIA_DEBS/<version>/ (default /var/cache/gpurun-test/nvidia-debs)
# and reused: a finished version directory is used without the network.
# They are unpacked with `dpkg -x`, never installed, into a root that then
# gets what dpkg's maintainer scripts would have made: the
# /etc/alternatives links of nvidia-alternative and glx-alternative-nvidia
# (read from their postinst), Debian's ld.so.conf(.d) and an etc/ld.so.cache
# from `ldconfig -r`.  The kernel side (/proc/driver/nvidia, /proc/devices,
# /dev/nvidia*, the persistenced socket) is the fake kit's
# (tests/fakedriver/build.sh, topology `one`), with the packaged version in
# proc/driver/nvidia/version.
#
# The root (1 GB, half a minute of one CPU to unpack) is kept outside the
# clone too, so that fresh clones and worktrees share it:
# $GPURUN_TEST_CACHE/realdriver/<key>/realdriver-<version> (default
# /var/cache/gpurun-test), where <key> hashes the recipe (this file and
# tests/fakedriver/build.sh) and the packages' file names, which carry
# their versions.  Another recipe or other packages make another key, so a
# checkout never changes a root another one is using.  It is built in a
# temporary directory beside it and renamed into place whole.  Tests only
# read it: its files and directories lose their write bits (the
# unprivileged run cannot change it), and whatever is newer than its stamp
# fails the run (tests/run-bats.sh) and has it built again.  A test that
# needs to change a driver root changes a copy.

# Without a fork: a suite sources this again for every test.
REALDRIVER_LIB_DIR=${BASH_SOURCE[0]%/*}
[[ $REALDRIVER_LIB_DIR == "${BASH_SOURCE[0]}" ]] && REALDRIVER_LIB_DIR=$PWD
[[ $REALDRIVER_LIB_DIR == /* ]] || REALDRIVER_LIB_DIR=$PWD/$REALDRIVER_LIB_DIR
REALDRIVER_TESTS=$REALDRIVER_LIB_DIR/..
REALDRIVER_DEBS=${GPURUN_NVIDIA_DEBS:-/var/cache/gpurun-test/nvidia-debs}
REALDRIVER_MIRROR=${GPURUN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
REALDRIVER_ROOTS=${GPURUN_TEST_CACHE:-/var/cache/gpurun-test}/realdriver

# What a Debian 12 GPU host has installed (reference/real-driver.md).
REALDRIVER_PKGS="nvidia-smi libnvidia-ml1 libcuda1 libnvidia-ptxjitcompiler1 libnvidia-nvvm4
nvidia-cuda-mps nvidia-persistenced libnvidia-encode1 libnvidia-fbc1 nvidia-opencl-icd libnvcuvid1
libnvidia-cfg1 libgl1-nvidia-glvnd-glx nvidia-vulkan-icd firmware-nvidia-gsp nvidia-driver-bin
nvidia-kernel-support nvidia-alternative glx-alternative-nvidia libnvidia-glcore libnvidia-eglcore
libglx-nvidia0 libegl-nvidia0 libgles-nvidia1 libgles-nvidia2 libnvidia-glvkspirv libnvidia-rtcore
libnvoptix1 libnvidia-ngx1 libnvidia-opticalflow1 libnvidia-allocator1 libnvidia-api1
libcudadebugger1 libnvidia-pkcs11-openssl3 nvidia-egl-icd nvidia-egl-common nvidia-vulkan-common
nvidia-opencl-common nvidia-vdpau-driver nvidia-modprobe libnvidia-egl-wayland1 libnvidia-egl-gbm1"

rd_say() { printf 'realdriver: %s\n' "$*" >&2; }

# rd_apt ARGS...: apt-get/apt-cache with nothing of the host's state.
rd_apt() {
	local cmd=$1 a=$REALDRIVER_DEBS/apt
	shift
	"$cmd" -q -o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts="$a/empty" \
		-o Dir::Etc::Preferences="$a/empty/none" -o Dir::Etc::PreferencesParts="$a/empty" \
		-o Dir::State="$a" -o Dir::State::Lists="$a/lists" -o Dir::State::status="$a/status" \
		-o Dir::Cache="$a/cache" -o Dir::Log="$a" -o APT::Architecture=amd64 \
		-o APT::Architectures=amd64,i386 -o APT::Sandbox::User=root "$@"
}

# rd_cached_version: the newest version whose .debs are all here.
rd_cached_version() {
	local d
	for d in "$REALDRIVER_DEBS"/*/.complete; do
		[[ -e $d ]] && basename "$(dirname "$d")"
	done | sort -V | tail -n1
}

# rd_fetch: make sure $REALDRIVER_DEBS/<version> is complete; print the version.
rd_fetch() {
	local ver a=$REALDRIVER_DEBS/apt dir start
	ver=$(rd_cached_version)
	if [[ -n $ver && -z ${GPURUN_NVIDIA_REFRESH:-} ]]; then
		printf '%s\n' "$ver"
		return 0
	fi
	start=$(date +%s)
	mkdir -p "$a/lists/partial" "$a/cache/archives/partial" "$a/empty" || return 1
	: >"$a/status"
	printf 'deb [arch=amd64,i386 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s bookworm main contrib non-free non-free-firmware\n' \
		"$REALDRIVER_MIRROR" >"$a/sources.list"
	rd_apt apt-get update >&2 || {
		rd_say "apt-get update from $REALDRIVER_MIRROR failed (is the archive reachable?)"
		return 1
	}
	ver=$(rd_apt apt-cache show nvidia-smi | sed -n 's/^Version: \([0-9.]*\).*/\1/p' | sort -V | tail -n1)
	[[ -n $ver ]] || {
		rd_say "no nvidia-smi in bookworm's non-free"
		return 1
	}
	dir=$REALDRIVER_DEBS/$ver
	if [[ -e $dir/.complete ]]; then
		printf '%s\n' "$ver"
		return 0
	fi
	rm -rf "$dir.tmp" && mkdir -p "$dir.tmp" || return 1
	# The i386 build of every Multi-Arch: same package (the libraries).
	# shellcheck disable=SC2206,SC2207,SC2086 # the lists split into one word per package
	local want=($REALDRIVER_PKGS)
	# shellcheck disable=SC2046,SC2207,SC2086
	want+=($(rd_apt apt-cache show $(printf '%s:i386 ' $REALDRIVER_PKGS) 2>/dev/null |
		awk '/^Package:/ { p = $2 } /^Architecture:/ { a = $2 } /^Multi-Arch: same/ { ms = 1 }
		/^$/ { if (a == "i386" && ms) print p ":i386"; p = a = ""; ms = 0 }
		END { if (a == "i386" && ms) print p ":i386" }' | sort -u))
	(cd "$dir.tmp" && rd_apt apt-get download "${want[@]}") >&2 || {
		rd_say "apt-get download failed"
		rm -rf "$dir.tmp"
		return 1
	}
	touch "$dir.tmp/.complete"
	mv -T "$dir.tmp" "$dir" || return 1
	rd_say "fetched ${#want[@]} packages of NVIDIA $ver in $(($(date +%s) - start)) s into $dir"
	printf '%s\n' "$ver"
}

# rd_in_root ROOT PATH: PATH's target as a path in ROOT (absolute links
# restart at ROOT, as in a chroot); fails when it is not a regular file.
rd_in_root() {
	local root=$1 p=$2 n=0 t
	while [[ -L $root$p && $n -lt 40 ]]; do
		t=$(readlink "$root$p")
		[[ $t == /* ]] || t=$(dirname "$p")/$t
		p=$t
		n=$((n + 1))
	done
	[[ -f $root$p ]]
}

# rd_slave ROOT PREFIX LINK NAME PATH: one alternative as update-alternatives
# makes it, LINK -> /etc/alternatives/PREFIXNAME -> PATH, when the
# postinst's own conditions hold (PATH a file, LINK's directory there) and
# no earlier alternative took LINK.
rd_slave() {
	local root=$1 prefix=$2 link=$3 name=$4 path=$5
	rd_in_root "$root" "$path" && [[ -d $root$(dirname "$link") ]] || return 0
	[[ -L $root$link || -e $root$link ]] && return 0
	mkdir -p "$root/etc/alternatives"
	ln -sfn "$path" "$root/etc/alternatives/$prefix$name"
	ln -s "/etc/alternatives/$prefix$name" "$root$link"
}

# rd_multiarch_slave ROOT PREFIX TDIR TSUB FILE SDIR SSUB [NPREFIX [SRCFILE]]:
# the postinst's add_multiarch_slave, for each triplet it knows.
rd_multiarch_slave() {
	local root=$1 prefix=$2 tdir=$3 tsub=$4 file=$5 sdir=$6 ssub=$7 npre=${8:-} src=${9:-$5} t s
	for t in / /i386-linux-gnu/ /x86_64-linux-gnu/; do
		s=${t%/}
		s=${s:+-${s#/}}
		rd_slave "$root" "$prefix" "$tdir$t$tsub$file" "$npre$file$s" "$sdir$t$ssub$src"
	done
}

# rd_postinst_links ROOT PREFIX POSTINST: the alternatives a postinst of
# nvidia-alternative ("nvidia--") or glx-alternative-nvidia ("glx--")
# would make, read from its add_slave / add_multiarch_slave /
# search_multiarch_slave lines, in order (the first that applies to a link
# wins, as the NVIDIA alternative outranks Mesa's).  The script is read as
# data, never run.
rd_postinst_links() {
	local root=$1 prefix=$2 postinst=$3 call args
	# shellcheck disable=SC2016 # a literal "$(", as the script has it
	grep -o '\$(\(add_slave\|add_multiarch_slave\|search_multiarch_slave\) [^)]*)' "$postinst" |
		sed -e 's/^\$(//' -e 's/)$//' -e 's/""/@/g' |
		while read -r call args; do
			# shellcheck disable=SC2086 # the words of the call
			set -- $args
			local a=() w
			for w in "$@"; do [[ $w == @ ]] && a+=("") || a+=("$w"); done
			case $call in
			add_slave) rd_slave "$root" "$prefix" "${a[0]}" "${a[1]}" "${a[2]}" ;;
			add_multiarch_slave)
				rd_multiarch_slave "$root" "$prefix" "${a[0]}" "${a[1]}" "${a[2]}" "${a[3]}" "${a[4]}" \
					"${a[5]:-}" "${a[6]:-}" ;;
			search_multiarch_slave)
				[[ -n ${a[1]:-} ]] &&
					rd_multiarch_slave "$root" "$prefix" /usr/lib "" "${a[0]}" /usr/lib "${a[1]}/" ;;
			esac
		done
}

# rd_key VERSION: the key of the root built from the packages of VERSION
# by this recipe.
rd_key() {
	{
		cat "${BASH_SOURCE[0]}" "$REALDRIVER_TESTS/fakedriver/build.sh" &&
			(cd "$REALDRIVER_DEBS/$1" && printf '%s\n' *.deb)
	} | sha256sum | cut -c1-16
}

# rd_unpack ROOT VERSION: make the driver root ROOT from the packages of
# VERSION.
rd_unpack() {
	local tmp=$1 ver=$2 debs=$REALDRIVER_DEBS/$2 deb p kern ctl
	mkdir "$tmp" || return 1
	for deb in "$debs"/*.deb; do
		dpkg -x "$deb" "$tmp" || return 1
	done
	# The alternatives their postinst scripts make.
	ctl=$(mktemp -d) || return 1
	mkdir -p "$tmp/etc/alternatives"
	# The masters first (nvidia: the driver's directory; glx: the one
	# that links to it), then each package's slaves.
	ln -sfn /usr/lib/nvidia/current "$tmp/etc/alternatives/nvidia"
	ln -sfn /etc/alternatives/nvidia "$tmp/usr/lib/nvidia/nvidia"
	ln -sfn /usr/lib/nvidia "$tmp/etc/alternatives/glx"
	ln -sfn /etc/alternatives/glx "$tmp/usr/lib/glx"
	for p in nvidia-alternative:nvidia-- glx-alternative-nvidia:glx--; do
		deb=$(ls "$debs/${p%%:*}"_*_amd64.deb) &&
			rm -rf "$ctl/c" && dpkg-deb -e "$deb" "$ctl/c" &&
			rd_postinst_links "$tmp" "${p#*:}" "$ctl/c/postinst" || return 1
	done
	rm -rf "$ctl"
	# Debian's loader configuration (libc6 and libc6:i386) and its cache.
	mkdir -p "$tmp/etc/ld.so.conf.d"
	printf 'include /etc/ld.so.conf.d/*.conf\n\n' >"$tmp/etc/ld.so.conf"
	printf '# libc default configuration\n/usr/local/lib\n' >"$tmp/etc/ld.so.conf.d/libc.conf"
	printf '# Multiarch support\n/usr/local/lib/x86_64-linux-gnu\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n' \
		>"$tmp/etc/ld.so.conf.d/x86_64-linux-gnu.conf"
	printf '# Multiarch support\n/usr/local/lib/i386-linux-gnu\n/lib/i386-linux-gnu\n/usr/lib/i386-linux-gnu\n/usr/local/lib/i686-linux-gnu\n/lib/i686-linux-gnu\n/usr/lib/i686-linux-gnu\n' \
		>"$tmp/etc/ld.so.conf.d/i386-linux-gnu.conf"
	ldconfig -r "$tmp" || return 1
	# The kernel side: the fake kit's, with this version.
	kern=$(mktemp -d) || return 1
	sh "$REALDRIVER_TESTS/fakedriver/build.sh" "$kern/one" one >&2 || return 1
	cp -a "$kern/one/proc" "$kern/one/dev" "$kern/one/run" "$kern/one/tmp" "$tmp/" || return 1
	rm -rf "$kern"
	sed -i "1s/Kernel Module  [0-9.]*  /Kernel Module  $ver  /" "$tmp/proc/driver/nvidia/version"
}

# rd_check ROOT: fails, saying so, when anything in ROOT was written,
# created or removed after its stamp.
rd_check() {
	local changed
	changed=$(find "$1" -newer "$1/.complete" -print -quit) || return 1
	[[ -z $changed ]] && return 0
	rd_say "the shared driver root $1 was changed after it was built ($changed, at least): a test must change a copy"
	return 1
}

# rd_build: build the root of the newest kept version with this recipe,
# unless it is there already (root); print its path.
rd_build() {
	local ver key final out tmp
	ver=$(rd_fetch) || return 1
	key=$(rd_key "$ver") || return 1
	final=$REALDRIVER_ROOTS/$key
	out=$final/realdriver-$ver
	if [[ -e $out/.complete && "$(cat "$out/.complete")" == "$key" ]]; then
		if rd_check "$out"; then
			# In use: not one of the unused roots a build removes.
			[[ $(id -u) -eq 0 ]] && touch "$final"
			printf '%s\n' "$out"
			return 0
		fi
		[[ $(id -u) -eq 0 ]] && rd_say "building it again" && rm -rf "$final"
	fi
	[[ $(id -u) -eq 0 ]] || {
		rd_say "building $out needs root (mknod, ldconfig -r)"
		return 1
	}
	mkdir -p "$REALDRIVER_ROOTS" || return 1
	# Beside the final directory, so that the rename is one step.
	tmp=$(mktemp -d "$REALDRIVER_ROOTS/.$key.XXXXXX") && chmod 0755 "$tmp" || return 1
	# The stamp is written last: rd_check finds what changed after it.
	if ! rd_unpack "$tmp/realdriver-$ver" "$ver" || ! chmod -R a+rX,a-w "$tmp/realdriver-$ver" ||
		! echo "$key" >"$tmp/realdriver-$ver/.complete"; then
		rm -rf "$tmp"
		return 1
	fi
	# Another build of the same key may have won: either root is the same.
	if ! mv -T "$tmp" "$final" 2>/dev/null && [[ ! -e $out/.complete ]]; then
		rd_say "cannot rename $tmp to $final"
		rm -rf "$tmp"
		return 1
	fi
	rm -rf "$tmp"
	# Roots of other recipes or packages unused for a day, builds that
	# were killed, and the copies checkouts kept in tests/build before.
	find "$REALDRIVER_ROOTS" -mindepth 1 -maxdepth 1 ! -name "$key" -mmin +1440 -exec rm -rf {} + 2>/dev/null
	rm -rf "$REALDRIVER_TESTS"/build/realdriver-*
	rd_say "built $out"
	printf '%s\n' "$out"
}

# real_driver: the path of the root this recipe builds from the newest
# kept packages, when it is finished, or nothing.
real_driver() {
	local ver key out
	ver=$(rd_cached_version)
	[[ -n $ver ]] || return 0
	key=$(rd_key "$ver") || return 0
	out=$REALDRIVER_ROOTS/$key/realdriver-$ver
	[[ -e $out/.complete ]] && printf '%s\n' "$out"
	return 0
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	case ${1:-} in
	build) rd_build ;;
	path) real_driver ;;
	check)
		root=$(real_driver)
		[[ -n $root ]] && rd_check "$root"
		;;
	*)
		echo "usage: $0 build|path|check" >&2
		exit 2
		;;
	esac
fi
