#!/usr/bin/env bats
# Escape probes (`probe escape`, tests/probe.c): from inside a container,
# as root and as a --user, with and without --gpus, every way out known to
# the launchers' CVEs answers SAFE.  Each probe is also run once without the
# protection it tests (on the host, in a private mount namespace where it
# acts) and must answer RISK there: a probe that cannot fail proves nothing.
#
# Then what gpurun runs from the image before the command (its ldconfig,
# here the probe under that name) and the seccomp filter on all three x86
# ABIs (`probe abi-syscall`, and tests/seccomp_wrap.c: the filter alone).

load lib/common
load lib/gpu

# What `probe escape` prints, in order: one line per probe (umount and
# remount-rw: one per guarded path).  A probe that printed nothing would
# fail the tests, not pass them.
GUARDED=(/proc/driver/nvidia /proc/sys /proc/sysrq-trigger /proc/irq /proc/bus /proc/fs /sys)
ESCAPE_NAMES=(mknod mount)
for p in "${GUARDED[@]}"; do ESCAPE_NAMES+=("umount:$p"); done
for p in "${GUARDED[@]}"; do ESCAPE_NAMES+=("remount-rw:$p"); done
ESCAPE_NAMES+=(pivot_root userns-mount userns-clone keyctl add_key bpf perf_event_open userfaultfd io_uring
	open_by_handle_at kexec_load ptrace-init proc-1-exe proc-self-exe kcore proc-sys sysrq-trigger
	core_pattern tiocsti tioclinux tiocsetd tioccons tiocexcl fds fds-pid1 cwd setuid gpu-node setgroups chroot-escape)

# The dangerous system calls of the probes above, as `probe abi-syscall`
# names them (clone with namespace flags; ioctl with the terminal commands
# that act on the line or the session, and with bits above the 32-bit
# command set, which the kernel ignores and a filter must not).
# mknod and ptrace are left out: the filter allows them; the dropped
# CAP_MKNOD and the non-dumpable pid 1 refuse them (probes mknod, gpu-node,
# ptrace-init).
ABI_CALLS=(mount umount2 umount pivot_root unshare setns clone-newuser clone-newns keyctl add_key request_key
	bpf perf_event_open userfaultfd io_uring_setup io_uring_enter io_uring_register open_by_handle_at
	name_to_handle_at kexec_load kexec_file_load init_module finit_module delete_module fsopen fsconfig
	fsmount fspick open_tree move_mount mount_setattr ioctl-tiocsti ioctl-tioclinux ioctl-tiocsetd
	ioctl-tiocsetd-high ioctl-tioccons ioctl-tioccons-high ioctl-tiocvhangup ioctl-tiocexcl ioctl-tiocexcl-high)

setup_file() {
	require_gpurun
	PROBE=$(fixture probe)
	# A busybox image with a setuid copy of the probe (owned by root, or
	# in user mode by the caller: root of the container's namespace).
	ESC_DIR=$BATS_FILE_TMPDIR/escape-img
	image_copy busybox "$ESC_DIR" >/dev/null
	cp "$PROBE" "$ESC_DIR/bin/probe-suid"
	chmod 4755 "$ESC_DIR/bin/probe-suid"
	ESC_TAR=$BATS_FILE_TMPDIR/escape-img.tar
	tar_from_dir "$ESC_DIR" "$ESC_TAR"
	# A glibc image whose ldconfig is the probe.
	LDC_DIR=$BATS_FILE_TMPDIR/ldconfig-img
	image_copy glibc "$LDC_DIR" >/dev/null
	rm -f "$LDC_DIR/usr/sbin/ldconfig"
	cp "$PROBE" "$LDC_DIR/usr/sbin/ldconfig"
	LDC_TAR=$BATS_FILE_TMPDIR/ldconfig-img.tar
	tar_from_dir "$LDC_DIR" "$LDC_TAR"
	# One whose ldconfig tries what the --user command cannot: writes into
	# a volume's root-owned file and directory (/tmp/ldconfig-writes says
	# how they went), and a process left running (probe wait-signal).
	ATTACK_TAR=$(ldconfig_script_image attack \
		'{ probe write /vol/root-file; probe write /vol/root-dir/new; } >/tmp/ldconfig-writes 2>&1
probe wait-signal 600 </dev/null >/dev/null 2>&1 &')
	# gpurun's filter and nothing else.
	SECCOMP_WRAP=$BATS_FILE_TMPDIR/seccomp-wrap
	gcc -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -o "$SECCOMP_WRAP" "$TESTS_DIR/seccomp_wrap.c" \
		"$TESTS_DIR/../libgpurun.a" $(pkg-config --libs libcap-ng libseccomp)
	FAKE4=$(fake_driver four) || FAKE4=
	export PROBE ESC_DIR ESC_TAR LDC_DIR LDC_TAR ATTACK_TAR SECCOMP_WRAP FAKE4
}

# ldconfig_script_image NAME SCRIPT [PREPARE]: the glibc image whose
# ldconfig is the shell SCRIPT (gpurun's arguments in "$@"), after the
# shell code PREPARE ran in its tree ($1); prints the archive.
ldconfig_script_image() {
	local dir=${BATS_TEST_TMPDIR:-$BATS_FILE_TMPDIR}/$1-img
	image_copy glibc "$dir" >/dev/null || return 1
	rm -f "$dir/usr/sbin/ldconfig"
	printf '#!/bin/sh\n%s\n' "$2" >"$dir/usr/sbin/ldconfig"
	chmod 0755 "$dir/usr/sbin/ldconfig"
	if [[ -n ${3:-} ]]; then bash -ec "$3" prepare "$dir" || return 1; fi
	tar_from_dir "$dir" "$dir.tar" && echo "$dir.tar"
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

need_fake_driver() {
	[[ -n "$FAKE4" ]] || skip "no fake NVIDIA driver in $TESTS_BUILD (build it as root: tests/run-bats.sh)"
}

# assert_all_safe: after `run`: one line per probe, in order, each SAFE.
assert_all_safe() {
	assert_success
	local i name
	for i in "${!ESCAPE_NAMES[@]}"; do
		name=${ESCAPE_NAMES[i]}
		[[ "${lines[i]:-}" == "SAFE $name: "* ]] || fail "line $i is not 'SAFE $name: ...': '${lines[i]:-}'
$output"
	done
	assert_equal "${#lines[@]}" "${#ESCAPE_NAMES[@]}"
}

# ---- inside gpurun: every probe SAFE -------------------------------------------

@test "every escape probe is SAFE for root in the container" {
	run --separate-stderr "$GPURUN" "$ESC_DIR" probe escape
	assert_all_safe
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "every escape probe is SAFE for a --user in the container" {
	run --separate-stderr "$GPURUN" -u 1000:1000 "$ESC_DIR" probe escape
	assert_all_safe
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "every escape probe is SAFE for root with --gpus" {
	need_fake_driver
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 --caps all "$ESC_TAR" probe escape
	assert_all_safe
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "every escape probe is SAFE for a --user with --gpus" {
	need_fake_driver
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 --caps all -u 1000:1000 "$ESC_TAR" probe escape
	assert_all_safe
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "with --gpus 0 the selected node is there and no other GPU node can be reached or made" {
	need_fake_driver
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 "$ESC_TAR" \
		sh -c 'ls /dev | grep "^nvidia[0-9]"; probe escape gpu-node umount:/proc/driver/nvidia'
	assert_success
	# GPU 0 of the four-GPU driver is minor 2.
	assert_output "nvidia2
SAFE gpu-node: EPERM
SAFE umount:/proc/driver/nvidia: EPERM"
}

@test "a setuid-root binary in the image gives a --user neither uid 0 nor capabilities" {
	run --separate-stderr "$GPURUN" -u 1000:1000 "$ESC_DIR" sh -c 'probe stat /bin/probe-suid; probe escape setuid'
	assert_success
	assert_line --index 0 --regexp '^type=reg mode=4755 '
	assert_line --index 1 "SAFE setuid: /bin/probe-suid ran with euid 1000 and no new capabilities"
}

@test "TIOCSTI, TIOCLINUX, TIOCSETD, TIOCCONS and TIOCEXCL on the inherited terminal are refused (root)" {
	tty_run "$GPURUN" "$ESC_DIR" probe escape tiocsti tioclinux tiocsetd tioccons tiocexcl
	assert_success
	assert_output "SAFE tiocsti: EPERM
SAFE tioclinux: EPERM
SAFE tiocsetd: EPERM
SAFE tioccons: EPERM
SAFE tiocexcl: EPERM"
}

@test "TIOCSTI, TIOCLINUX, TIOCSETD, TIOCCONS and TIOCEXCL on the inherited terminal are refused (--user)" {
	tty_run "$GPURUN" -u 1000:1000 "$ESC_DIR" probe escape tiocsti tioclinux tiocsetd tioccons tiocexcl
	assert_success
	assert_output "SAFE tiocsti: EPERM
SAFE tioclinux: EPERM
SAFE tiocsetd: EPERM
SAFE tioccons: EPERM
SAFE tiocexcl: EPERM"
}

# ldisc_run CMD [ARG...]: run CMD with stdin on a new pty (stdout and stderr
# to a pipe), then print the pty's line discipline as the caller sees it
# ("caller's ldisc: 0" is N_TTY) and put N_TTY back.
ldisc_run() {
	run python3 -c '
import fcntl, os, struct, subprocess, sys
TIOCGETD, TIOCSETD = 0x5424, 0x5423
master, slave = os.openpty()
p = subprocess.run(sys.argv[1:], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
sys.stdout.write(p.stdout.decode())
disc = struct.unpack("i", fcntl.ioctl(slave, TIOCGETD, struct.pack("i", 0)))[0]
print("caller\x27s ldisc: %d" % disc)
fcntl.ioctl(slave, TIOCSETD, struct.pack("i", 0))
sys.exit(p.returncode)' "$@"
}

@test "a payload's TIOCSETD N_NULL leaves the caller's line discipline as it was (root)" {
	ldisc_run "$GPURUN" "$ESC_DIR" probe ldisc 27
	assert_failure 1
	assert_output "ldisc 27: EPERM
caller's ldisc: 0"
}

@test "a payload's TIOCSETD N_NULL leaves the caller's line discipline as it was (--user)" {
	ldisc_run "$GPURUN" -u 1000:1000 "$ESC_DIR" probe ldisc 27
	assert_failure 1
	assert_output "ldisc 27: EPERM
caller's ldisc: 0"
}

@test "host fds open in gpurun's caller reach neither pid 1 nor the command" {
	exec 7<"$BATS_TEST_TMPDIR" 8>"$BATS_TEST_TMPDIR/fd8"
	run --separate-stderr "$GPURUN" "$ESC_DIR" probe escape fds fds-pid1
	exec 7<&- 8>&-
	assert_success
	assert_line --index 0 "SAFE fds: none above 2"
	assert_line --index 1 --regexp '^SAFE fds-pid1: (EACCES|no file or directory reachable)$'
}

@test "a working directory on the host does not follow the command into the container" {
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr "$GPURUN" "$ESC_DIR" probe escape cwd
	assert_success
	assert_output "SAFE cwd: /, inside the root"
}

# ---- the same probes without the protection: each can say RISK ---------------
# On the host, as root, in a private mount namespace (unshare -m), so that
# what succeeds stays there.  On a kernel without /proc/kcore and
# /proc/sysrq-trigger, stand-ins take their place.

host_probe() {
	unshare -m --propagation private "$PROBE" escape "$@"
}

@test "without gpurun, root's mknod, mount, pivot_root and the GPU node probe say RISK" {
	skip_unless_root "the host side of these probes needs the host's root"
	run host_probe mknod mount pivot_root gpu-node
	assert_success
	assert_output --regexp '^RISK mknod: made the character device 1:3
RISK mount: mounted a tmpfs on [^ ]+
RISK pivot_root: not refused: (EINVAL|EBUSY)
RISK gpu-node: made the character device 195:0$'
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun, a GPU node that was not selected makes the probe say RISK" {
	skip_unless_root "the host side of these probes needs the host's root"
	run unshare -m --propagation private sh -c \
		'mount -t tmpfs none /dev && mknod /dev/nvidia1 c 195 1 && "$0" escape gpu-node' "$PROBE"
	assert_success
	assert_output "RISK gpu-node: GPU nodes not selected are present: /dev/nvidia1"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun, unmounting or remounting every guarded path says RISK" {
	skip_unless_root "the host side of these probes needs the host's root"
	# Make each guarded path a read-only mount point, as gpurun does.
	local setup='mount -t tmpfs none /proc/driver && mkdir /proc/driver/nvidia &&
		mount -t tmpfs -o ro none /proc/driver/nvidia'
	local p
	for p in /proc/sys /proc/irq /proc/bus /proc/fs /sys; do
		setup+=" && mount --bind $p $p && mount -o remount,bind,ro $p"
	done
	run unshare -m --propagation private sh -c "$setup"' && "$0" escape remount-rw:/proc/driver/nvidia \
		umount:/proc/driver/nvidia remount-rw:/proc/sys umount:/proc/sys remount-rw:/proc/irq \
		umount:/proc/irq remount-rw:/proc/bus umount:/proc/bus remount-rw:/proc/fs umount:/proc/fs \
		remount-rw:/sys umount:/sys' "$PROBE"
	assert_success
	assert_output "RISK remount-rw:/proc/driver/nvidia: made writable
RISK umount:/proc/driver/nvidia: unmounted
RISK remount-rw:/proc/sys: made writable
RISK umount:/proc/sys: unmounted
RISK remount-rw:/proc/irq: made writable
RISK umount:/proc/irq: unmounted
RISK remount-rw:/proc/bus: made writable
RISK umount:/proc/bus: unmounted
RISK remount-rw:/proc/fs: made writable
RISK umount:/proc/fs: unmounted
RISK remount-rw:/sys: made writable
RISK umount:/sys: unmounted"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun, a new user namespace can mount (unshare and clone say RISK)" {
	# The mount happens in the probe's child, in the new namespaces only.
	run "$PROBE" escape userns-mount userns-clone
	assert_success
	assert_output "RISK userns-mount: mounted a tmpfs in a new user namespace
RISK userns-clone: mounted a tmpfs in a new user namespace"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun's filter, the kernel answers keyctl, add_key, bpf, perf_event_open, userfaultfd, io_uring, open_by_handle_at and kexec_load" {
	skip_unless_root "unprivileged, the kernel itself refuses some of them"
	run host_probe keyctl add_key bpf perf_event_open userfaultfd io_uring open_by_handle_at kexec_load
	assert_success
	# Each says what the kernel answered once the call got through (ENOSYS:
	# not built into this kernel, still not refused by a filter).
	local name
	for name in keyctl add_key bpf perf_event_open userfaultfd io_uring open_by_handle_at kexec_load; do
		assert_line --regexp "^RISK $name: (not refused: [A-Z0-9]+|succeeded)$"
	done
	assert_equal "${#lines[@]}" 8
}

@test "without gpurun, root can ptrace pid 1, hold its binary and see its open files" {
	skip_unless_root "the host side of these probes needs the host's root"
	# pid 1 is a shell of a new pid namespace holding a directory open.
	run unshare -m --propagation private -pf --mount-proc sh -c \
		'exec 7<"$1"; "$0" escape ptrace-init proc-1-exe fds-pid1; true' "$PROBE" "$BATS_TEST_TMPDIR"
	assert_success
	assert_line --index 0 "RISK ptrace-init: attached to pid 1 (and detached)"
	assert_line --index 1 --regexp '^RISK proc-1-exe: (opened /proc/1/exe for writing|a handle on pid 1.s binary .*)$'
	assert_line --index 2 --regexp "^RISK fds-pid1: (.*, )?7 -> $BATS_TEST_TMPDIR(,|$)"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun, a running binary bound from another file system would be writable once it stops" {
	skip_unless_root "the host side of these probes needs the host's root"
	# The kernel refuses a running binary for writing (ETXTBSY) anyway;
	# the probe asks whether it could be written later, from outside the root.
	run unshare -m --propagation private sh -c \
		'mount -t tmpfs none "$1" && cp "$0" "$1/probe" && "$1/probe" escape proc-self-exe' "$PROBE" "$BATS_TEST_TMPDIR"
	assert_success
	assert_output "RISK proc-self-exe: writable once it stops running (now ETXTBSY), and not on the root file system"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun, root can open /proc/sys and core_pattern for writing (nothing is written)" {
	skip_unless_root "the host side of these probes needs the host's root"
	run host_probe proc-sys core_pattern
	assert_success
	assert_output "RISK proc-sys: opened /proc/sys/kernel/panic for writing
RISK core_pattern: opened /proc/sys/kernel/core_pattern for writing"
}

@test "without gpurun, root can open /proc/kcore and /proc/sysrq-trigger, unmount and remount it" {
	skip_unless_root "the host side of these probes needs the host's root"
	local setup=true
	if [[ ! -e /proc/kcore || ! -e /proc/sysrq-trigger ]]; then
		# This kernel has neither: stand-ins on a tmpfs over /proc (of this
		# private mount namespace only) show the probes' RISK side.
		setup='mount -t tmpfs none /proc && touch /proc/kcore /proc/sysrq-trigger'
	fi
	# Opened while writable, then bound read-only as gpurun does.
	run unshare -m --propagation private sh -c "$setup"' && "$0" escape kcore sysrq-trigger &&
		mount --bind /proc/sysrq-trigger /proc/sysrq-trigger &&
		mount -o remount,bind,ro /proc/sysrq-trigger &&
		"$0" escape remount-rw:/proc/sysrq-trigger umount:/proc/sysrq-trigger' "$PROBE"
	assert_success
	assert_output "RISK kcore: opened /proc/kcore
RISK sysrq-trigger: opened /proc/sysrq-trigger for writing
RISK remount-rw:/proc/sysrq-trigger: made writable
RISK umount:/proc/sysrq-trigger: unmounted"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun, TIOCSTI and TIOCLINUX reach the terminal" {
	skip_unless_root "TIOCSTI needs CAP_SYS_ADMIN or a terminal that is the caller's own"
	tty_run "$PROBE" escape tiocsti tioclinux
	assert_success
	# The injected space echoes back before the first line.  TIOCLINUX is
	# for virtual consoles: on a pty it gets past any filter to the
	# terminal driver, which does not know it.
	assert_output --regexp '^ ?RISK tiocsti: succeeded
RISK tioclinux: not refused: [A-Z]+$'
}

@test "without gpurun, a payload's TIOCSETD N_NULL changes the caller's line discipline" {
	# Needs no capability: any process holding the terminal can.
	ldisc_run "$PROBE" ldisc 27
	assert_success
	assert_output "ldisc: 27
caller's ldisc: 27"
}

@test "without gpurun, TIOCSETD and TIOCCONS reach the terminal" {
	skip_unless_root "TIOCCONS needs CAP_SYS_ADMIN"
	tty_run "$PROBE" escape tiocsetd tioccons
	assert_success
	# TIOCSETD is put back at once; TIOCCONS is asked on a read-only
	# reopen of the terminal, which the kernel refuses once it is let through.
	assert_output "RISK tiocsetd: set N_NULL (put back: ok)
RISK tioccons: not refused: EBADF"
}

@test "without gpurun, TIOCEXCL makes the terminal exclusive" {
	# Needs no capability either; the probe puts it back at once.
	tty_run "$PROBE" escape tiocexcl
	assert_success
	assert_output "RISK tiocexcl: made the terminal exclusive (put back: ok)"
}

@test "without gpurun, an inherited fd and a working directory outside the root say RISK" {
	skip_unless_root "chroot needs the host's root"
	run "$PROBE" escape fds 7<"$BATS_TEST_TMPDIR"
	assert_success
	assert_output --regexp "^RISK fds: (.*, )?7 -> $BATS_TEST_TMPDIR(,|$)"
	# The cwd stays on the host while the root moves into the image.
	cd "$BATS_TEST_TMPDIR"
	run python3 -c 'import os, sys; os.chroot(sys.argv[1]); os.execv("/bin/probe", ["probe", "escape", "cwd"])' "$ESC_DIR"
	assert_success
	assert_output --regexp '^RISK cwd: '
}

@test "without gpurun, a chroot is escaped (chroot-escape says RISK)" {
	skip_unless_root "chroot needs the host's root"
	run python3 -c 'import os, sys; os.chroot(sys.argv[1]); os.chdir("/"); os.execv("/bin/probe", ["probe", "escape", "chroot-escape"])' "$ESC_DIR"
	assert_success
	assert_output "RISK chroot-escape: / is outside the container root"
}

@test "without no_new_privs, a setuid-root binary gives an unprivileged user uid 0" {
	skip_unless_root "making a setuid-root binary needs the host's root"
	local dir
	dir=$(mktemp -d /tmp/gpurun-escape-suid.XXXXXX)
	chmod 0755 "$dir"
	cp "$PROBE" "$dir/probe-suid"
	chmod 4755 "$dir/probe-suid"
	run setpriv --reuid 65534 --regid 65534 --clear-groups "$PROBE" escape "setuid:$dir/probe-suid"
	rm -rf "$dir"
	assert_success
	assert_output --regexp "^RISK setuid: $dir/probe-suid ran with euid 0, CapEff [0-9a-f]+ \(we have 65534, 0\)$"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "without gpurun, a setgroups by a non-root user with CAP_SETGID says RISK" {
	skip_unless_root "the host side of these probes needs the host's root"
	run setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps +setgid --ambient-caps +setgid \
		"$PROBE" escape setgroups
	assert_success
	assert_output "RISK setgroups: ok"
}

# ---- the image's ldconfig: point 2 -----------------------------------------------
# gpurun runs the image's ldconfig after GPU injection; here it is the probe,
# which writes what it was run with to /tmp/ldconfig-report.

# assert_ldconfig_report IDS: after `run`, the report of an ldconfig that
# ran with the ids IDS (the regexp of its first line).
assert_ldconfig_report() {
	assert_success
	assert_line --index 0 --regexp "$1"
	assert_line --index 1 "CapEff=0000000000000000 CapPrm=0000000000000000 CapBnd=0000000000000000 CapAmb=0000000000000000 CapInh=0000000000000000"
	assert_line --index 2 "NoNewPrivs: 1"
	assert_line --index 3 "Seccomp: 2"
	assert_line --index 4 "environment: 0 variables"
	assert_line --index 5 "cwd: /"
	# Its cache into the directory made for it in the root.
	assert_line --index 6 --regexp '^argv: ldconfig -f /etc/ld\.so\.conf -C /\.gpurun-ldconfig\.[A-Za-z0-9]{6}/ld\.so\.cache /usr/lib/x86_64-linux-gnu$'
	# Then every escape probe, SAFE.
	lines=("${lines[@]:7}")
	output=$(printf '%s\n' "${lines[@]}")
	assert_all_safe
}

@test "the image's ldconfig runs with no capabilities, no_new_privs, seccomp and an empty environment" {
	need_fake_driver
	run --separate-stderr env LD_PRELOAD=/nonexistent.so GPURUN_TEST_SECRET=1 \
		"$GPURUN" --driver-root "$FAKE4" --gpus 0 -e FOO=bar "$LDC_TAR" cat /tmp/ldconfig-report
	# groups=0 in user mode: the caller's own group, mapped to 0, cannot be dropped there.
	assert_ldconfig_report '^uid=0 gid=0 euid=0 egid=0 groups=0?$'
}

@test "the image's ldconfig runs with the ids and groups of the --user command" {
	need_fake_driver
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 -u 1000:1000 "$LDC_TAR" cat /tmp/ldconfig-report
	if [[ $GPURUN_TEST_MODE == root ]]; then
		assert_ldconfig_report '^uid=1000 gid=1000 euid=1000 egid=1000 groups=1000$'
	else
		# One id mapped: the command's 1000 is a nested user namespace
		# over that id, which ldconfig keeps (ns/exec.c).
		assert_ldconfig_report '^uid=0 gid=0 euid=0 egid=0 groups=0?$'
	fi
}

@test "the image's ldconfig has no terminal to push keystrokes into" {
	need_fake_driver
	tty_run "$GPURUN" --driver-root "$FAKE4" --gpus device=0 "$LDC_TAR" sh -c 'grep -E "tiocsti|tioclinux" /tmp/ldconfig-report'
	assert_success
	assert_output "SAFE tiocsti: no terminal on fd 0-2
SAFE tioclinux: no terminal on fd 0-2"
}

@test "with --verbose the image's ldconfig writes to the terminal but cannot inject into it" {
	need_fake_driver
	tty_run "$GPURUN" --verbose --driver-root "$FAKE4" --gpus 0 "$LDC_TAR" sh -c 'grep -E "tiocsti|tioclinux" /tmp/ldconfig-report'
	assert_success
	assert_line "SAFE tiocsti: EPERM"
	assert_line "SAFE tioclinux: EPERM"
}

# ---- the image's ldconfig gets no more than the command ----------------------------

@test "as root, the image's ldconfig gets the same EACCES as the --user command in a volume's root-owned file and directory" {
	need_fake_driver
	skip_unless_root "the volume's files must be root's, which a --user command is not"
	local vol=$BATS_TEST_TMPDIR/vol
	mkdir -m 0755 "$vol" "$vol/root-dir"
	echo canary >"$vol/root-file"
	chmod 0644 "$vol/root-file"
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 -u 1000:1000 -v "$vol:/vol" "$ATTACK_TAR" \
		sh -c 'probe write /vol/root-file; probe write /vol/root-dir/new; echo ldconfig:; cat /tmp/ldconfig-writes'
	assert_success
	assert_output "write: EACCES
write: EACCES
ldconfig:
write: EACCES
write: EACCES"
	assert_equal "$(cat "$vol/root-file")" canary
	assert_equal "$(ls -A "$vol/root-dir")" ""
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "nothing the image's ldconfig started is still running when the command starts" {
	need_fake_driver
	# The pattern is not its own text: grep's command line does not match.
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 -u 1000:1000 "$ATTACK_TAR" \
		sh -c 'cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" "\n" | grep -c "^wait-signa[l]$" || :'
	assert_success
	assert_output 0
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a symlink the image's ldconfig leaves as its cache is not followed into /etc/ld.so.cache" {
	need_fake_driver
	# ldconfig runs as 1000, or with one id mapped as the one id there is.
	local img uid=1000
	[[ $GPURUN_TEST_MODE == root ]] || uid=0
	img=$(ldconfig_script_image link 'while [ "$1" != -C ]; do shift; done; ln -s /etc/ldconfig-secret "$2"' \
		'echo LDCONFIG-SECRET >"$1/etc/ldconfig-secret"; chmod 0600 "$1/etc/ldconfig-secret"')
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 -u 1000:1000 "$img" \
		sh -c 'grep -c LDCONFIG-SECRET /etc/ld.so.cache || :; ls -a / | grep -c "^\.gpurun-ldconfig" || :'
	assert_success
	assert_output "0
0"
	assert_equal "$stderr" "gpurun: warning: the cache the image's ldconfig wrote is not a regular file of uid $uid of at most 16777216 bytes; not put in place; libraries are still injected"
}

@test "as root, a root-only file the image's ldconfig moves in as its cache is not copied into /etc/ld.so.cache" {
	need_fake_driver
	skip_unless_root "the file must be root's, which the --user is not"
	local img
	# alice (1000) owns her home, and root a file there that she can move but not read.
	img=$(ldconfig_script_image movein 'while [ "$1" != -C ]; do shift; done; mv /home/alice/secret "$2"' \
		'echo LDCONFIG-SECRET >"$1/home/alice/secret"; chmod 0600 "$1/home/alice/secret"; chown 1000:1000 "$1/home/alice"')
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 -u 1000:1000 "$img" \
		sh -c 'grep -c LDCONFIG-SECRET /etc/ld.so.cache || :; ls -a / | grep -c "^\.gpurun-ldconfig" || :'
	assert_success
	assert_output "0
0"
	assert_equal "$stderr" "gpurun: warning: the cache the image's ldconfig wrote is not a regular file of uid 1000 of at most 16777216 bytes; not put in place; libraries are still injected"
}

@test "an image's ldconfig that leaves other files in the directory made for it stops the launch" {
	need_fake_driver
	local img
	img=$(ldconfig_script_image extra 'while [ "$1" != -C ]; do shift; done; : >"${2%/*}/extra"')
	run --separate-stderr "$GPURUN" --driver-root "$FAKE4" --gpus 0 -u 1000:1000 "$img" true
	assert_equal "$status" 125
	[[ $stderr =~ ^"gpurun: remove the image's ldconfig's directory /.gpurun-ldconfig."[A-Za-z0-9]{6}": Directory not empty"$ ]] ||
		fail "unexpected message: $stderr"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# ---- the seccomp filter on all three ABIs: point 3 --------------------------------

# expected_abi ABI RESULT: what `probe abi-syscall ABI ${ABI_CALLS[@]}` prints
# when every call answers RESULT (calls an ABI lacks: "no such call").
expected_abi() {
	local abi=$1 result=$2 name
	for name in "${ABI_CALLS[@]}"; do
		if [[ ($name == umount && $abi != i386) || ($name == kexec_file_load && $abi == i386) ]]; then
			echo "$name $abi: no such call"
		else
			echo "$name $abi: $result"
		fi
	done
}

abi_denied_in_gpurun() {
	local abi=$1
	shift
	run --separate-stderr "$GPURUN" "$@" "$ESC_DIR" probe abi-syscall "$abi" "${ABI_CALLS[@]}"
	assert_success
	assert_output "$(expected_abi "$abi" EPERM)"
}

# The host's root has every capability, so an EPERM here is the filter's.
abi_denied_by_filter() {
	skip_unless_root "only with the host's capabilities does EPERM tell the filter from them"
	run --separate-stderr "$SECCOMP_WRAP" "$PROBE" abi-syscall "$1" "${ABI_CALLS[@]}"
	assert_success
	assert_output "$(expected_abi "$1" EPERM)"
}

abi_not_denied() {
	skip_unless_root "unprivileged, the kernel itself refuses some of them with EPERM"
	run --separate-stderr unshare -m --propagation private "$PROBE" abi-syscall "$1" "${ABI_CALLS[@]}"
	assert_success
	assert_equal "${#lines[@]}" "${#ABI_CALLS[@]}"
	refute_output --partial ": EPERM"
	if [[ $1 == x32 ]] && grep -q 'x32: ENOSYS' <<<"$output"; then
		# A kernel without x32 answers ENOSYS to all of them: the filter
		# still sees them first (the EPERM above), the kernel never runs them.
		assert_output "$(expected_abi x32 ENOSYS)"
	fi
}

@test "the filter denies every dangerous call through the x86-64 ABI (root in the container)" {
	abi_denied_in_gpurun x86-64
}

@test "the filter denies every dangerous call through the x86-64 ABI (--user in the container)" {
	abi_denied_in_gpurun x86-64 -u 1000:1000
}

@test "the filter alone, with every capability, denies every dangerous call through the x86-64 ABI" {
	abi_denied_by_filter x86-64
}

@test "without the filter, root's dangerous calls through the x86-64 ABI are not refused" {
	abi_not_denied x86-64
}

@test "the filter denies every dangerous call through the x32 ABI (root in the container)" {
	abi_denied_in_gpurun x32
}

@test "the filter denies every dangerous call through the x32 ABI (--user in the container)" {
	abi_denied_in_gpurun x32 -u 1000:1000
}

@test "the filter alone, with every capability, denies every dangerous call through the x32 ABI" {
	abi_denied_by_filter x32
}

@test "without the filter, root's dangerous calls through the x32 ABI are not refused" {
	abi_not_denied x32
}

@test "the filter denies every dangerous call through the i386 ABI (root in the container)" {
	abi_denied_in_gpurun i386
}

@test "the filter denies every dangerous call through the i386 ABI (--user in the container)" {
	abi_denied_in_gpurun i386 -u 1000:1000
}

@test "the filter alone, with every capability, denies every dangerous call through the i386 ABI" {
	abi_denied_by_filter i386
}

@test "without the filter, root's dangerous calls through the i386 ABI are not refused" {
	abi_not_denied i386
}
