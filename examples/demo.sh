#!/bin/sh
# examples/demo.sh — what `make demo` shows, step by step:
#   1. build a tiny image offline from Debian's busybox-static,
#   2. run a command in it with --verbose (each setup step is printed as the
#      shell command it stands for),
#   3. print the same plan with --dry-run, without running anything,
#   4. the GPU demo: nvidia-smi -L inside a container that sees GPU 0 only —
#      on the real driver when this machine has one, else on the test suite's
#      fake driver.
# Run from anywhere; uses ./gpurun (GPURUN=... to use another binary).
# shellcheck disable=SC3013 # -nt/-ot: dash and every sh Debian ships have them
set -eu
cd "$(dirname "$0")/.."
GPURUN=${GPURUN:-./gpurun}
BUILD=examples/build
IMAGE=$BUILD/demo.tar.gz

bold='' plain=''
if [ -t 1 ]; then bold=$(printf '\033[1m') plain=$(printf '\033[0m'); fi
step() {
	printf '\n%s==== %s ====%s\n' "$bold" "$1" "$plain"
	shift
	for line in "$@"; do printf '%s\n' "$line"; done
}
# show CMD [ARG...]: print the command as you would type it, then run it.
show() {
	line='$'
	for arg in "$@"; do
		case $arg in
		'' | *[!A-Za-z0-9_./:=,+-]*) arg="'$(printf '%s' "$arg" | sed "s/'/'\\\\''/g")'" ;;
		esac
		line="$line $arg"
	done
	printf '%s\n' "$line"
	"$@"
}

if [ ! -x "$GPURUN" ]; then
	echo "demo: $GPURUN is missing: run 'make gpurun' first" >&2
	exit 1
fi

# ---- 1. the image -------------------------------------------------------------
step "1. Build the demo image" \
	"A container image is just a file tree in a tarball.  This one is Debian's" \
	"statically linked busybox (one binary that is sh, ls, ps, id...) plus" \
	"/etc/passwd, built offline into $IMAGE."
if [ ! -s "$IMAGE" ] || [ "$IMAGE" -ot /bin/busybox ] || [ "$IMAGE" -ot "$0" ]; then
	root=$BUILD/demo-rootfs
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/etc" "$root/proc" "$root/sys" "$root/dev" "$root/tmp" \
		"$root/run" "$root/mnt" "$root/root"
	cp /bin/busybox "$root/bin/busybox"
	for applet in $(/bin/busybox --list); do
		[ "$applet" = busybox ] || ln -s busybox "$root/bin/$applet"
	done
	ln -s bin "$root/sbin"
	printf 'root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/tmp:/bin/sh\n' >"$root/etc/passwd"
	printf 'root:x:0:\nalice:x:1000:\n' >"$root/etc/group"
	tar --numeric-owner --owner=0 --group=0 -C "$root" -czf "$IMAGE.tmp" . && mv "$IMAGE.tmp" "$IMAGE"
	rm -rf "$root"
fi
ls -l "$IMAGE"

# ---- 2. run it ------------------------------------------------------------------
step "2. Run a command in it, showing every step (--verbose)" \
	"gpurun unpacks the image into a fresh root, creates new namespaces (mount, pid," \
	"ipc, and a user namespace when you are not root), mounts /proc, /dev, /sys," \
	"/tmp, pivots into the root and runs the command as pid 2 under a small init." \
	"Lines starting with '+' are the steps, written as the shell commands they" \
	"stand for (the same ones as the 'unshare ... pivot_root' walkthrough)."
# shellcheck disable=SC2016 # expanded inside the container
show "$GPURUN" --verbose --hostname demo "$IMAGE" /bin/sh -c 'echo hello from $(hostname); id -u; echo $$'
echo "(hello from the container's own host name, uid inside, and the shell's pid: 2)"

step "3. Only the container's processes are visible" \
	"The new pid namespace has its own /proc: pid 1 is gpurun's init, pid 2 the command."
show "$GPURUN" "$IMAGE" ps

step "4. Print the plan without running it (--dry-run)" \
	"Nothing is unpacked, mounted or run; you can read (or adapt) the plan as a script."
show "$GPURUN" --dry-run -u 1000:1000 "$IMAGE" /bin/sh -c 'id'

# ---- 5. GPUs ----------------------------------------------------------------------
step "5. GPU: nvidia-smi -L in a container that sees GPU 0 only" \
	"--gpus 0 bind-mounts /dev/nvidia0 (not the other GPUs), the driver's libraries" \
	"and nvidia-smi into the container, as nvidia-container-cli does; the image" \
	"needs a C library for them, so this uses the test suite's glibc image."
GLIBC_IMAGE=$(TESTS_BUILD="$PWD/tests/build" bash tests/lib/images.bash glibc.tar.gz)
if [ -r /proc/driver/nvidia/version ]; then
	echo "This machine has the NVIDIA driver: $(head -n1 /proc/driver/nvidia/version)"
	show "$GPURUN" info
	show "$GPURUN" --gpus 0 "$GLIBC_IMAGE" nvidia-smi -L
elif [ -f tests/fakedriver/build.sh ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "No NVIDIA driver here, and building the test suite's fake driver needs root: skipped."
	else
		FAKE=$BUILD/fakedriver
		echo "No NVIDIA driver on this machine.  What follows uses the TEST SUITE'S FAKE DRIVER"
		echo "(tests/fakedriver: fake /proc/driver/nvidia files, device nodes and a fake"
		echo "nvidia-smi built into $FAKE), passed with --driver-root.  It shows what gpurun"
		echo "injects and which GPU the container sees; no real GPU is involved."
		if [ ! -d "$FAKE" ] || [ tests/fakedriver/build.sh -nt "$FAKE" ]; then
			rm -rf "$FAKE"
			sh tests/fakedriver/build.sh "$FAKE" four
		fi
		echo "The fake driver has four GPUs:"
		show "$GPURUN" info --driver-root "$FAKE"
		echo "The container asks for GPU 0 and sees only it:"
		show "$GPURUN" --driver-root "$FAKE" --gpus 0 "$GLIBC_IMAGE" nvidia-smi -L
	fi
else
	echo "No NVIDIA driver on this machine and no fake driver (tests/fakedriver/build.sh): skipped."
fi

step "Done" "More in examples/README.md; the tests (make check) show every option at work."
