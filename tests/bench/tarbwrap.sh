#!/bin/sh
# tests/bench/tarbwrap.sh — the peer of a cold launch: unpack an image
# archive with an ordinary tar into a fresh tmpfs, then run the command there
# with bubblewrap (the same namespaces as gpurun: mount, pid, ipc).  The tmpfs
# is mounted on /mnt in a private mount namespace and vanishes with it.
#
#   tarbwrap.sh bsdtar|tar IMAGE COMMAND [ARG...]
#
# With TARBWRAP_ROOT=DIR the tar writes into DIR (made when missing; the
# caller removes it between runs) instead of a tmpfs: the peer of a first
# launch into gpurun's cache, which is on a disk too.
# Both tars detect the compression (gzip, zstd, ...) by content.  Needs root.
set -eu
tool=$1 image=$(realpath "$2")
shift 2
exec unshare --mount sh -ec '
	tool=$1 image=$2 root=$3; shift 3
	mount --make-rprivate /
	if [ -z "$root" ]; then
		root=/mnt   # hidden by the tmpfs in this namespace only: nothing to clean up
		mount -t tmpfs none "$root"
	fi
	mkdir -p "$root"
	"$tool" -xf "$image" -C "$root"
	exec bwrap --bind "$root" / --proc /proc --dev /dev --unshare-pid --unshare-ipc "$@"' \
	sh "$tool" "$image" "${TARBWRAP_ROOT:-}" "$@"
