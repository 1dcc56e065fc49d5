#!/bin/sh
# tests/bench/walkthrough.sh — the seed walkthrough ("Demystifying Nvidia GPU
# Containers", nvidia-container-cli's own example) as a script, the baseline
# the launch benchmarks compare gpurun with:
#
#   unshare --mount --pid --fork          new mount and pid namespaces
#   mount --bind rootfs rootfs; mount --make-private rootfs; cd rootfs
#   mount -t proc none proc; mount -t sysfs none sys
#   mount -t tmpfs none tmp; mount -t tmpfs none run
#   pivot_root . mnt; umount -l mnt
#   exec chroot . env -i COMMAND
#
#   walkthrough.sh ROOTFS_DIR COMMAND [ARG...]
#   walkthrough.sh --tar IMAGE.tar.gz COMMAND [ARG...]
#       unpack first: tar -xzf into a fresh tmpfs (inside the new mount
#       namespace, so it vanishes with it), then the same steps.
#
# Differences from the seed: no GPU step (nvidia-container-cli), and
# `chroot .` without --userspec: the test images' chroot is busybox's, which
# has no --userspec; the command runs as root, as gpurun's does by default.
# Needs root.
set -eu
if [ "${1:-}" = --tar ]; then
	tarball=$(realpath "$2")
	shift 2
	scratch=$(mktemp -d "${TMPDIR:-/tmp}/walkthrough.XXXXXX")
	trap 'rmdir "$scratch"' EXIT
	unshare --mount --pid --fork sh -ec '
		mount -t tmpfs none "$1"
		tar -xzf "$2" -C "$1"
		root=$1; shift 2
		exec "$0" "$root" "$@"' "$(realpath "$0")" "$scratch" "$tarball" "$@"
	exit
fi

rootfs=$(realpath "$1")
shift
# Already in the new namespaces when called from the --tar branch.
if [ "$$" != 1 ]; then
	exec unshare --mount --pid --fork "$(realpath "$0")" "$rootfs" "$@"
fi
mount --bind "$rootfs" "$rootfs"
mount --make-private "$rootfs"
cd "$rootfs"
mount -t proc none proc
mount -t sysfs none sys
mount -t tmpfs none tmp
mount -t tmpfs none run
pivot_root . mnt
umount -l mnt
exec chroot . env -i "$@"
