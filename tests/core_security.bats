#!/usr/bin/env bats
# What the command can no longer do: capabilities dropped,
# mknod and mount refused, no_new_privs, a seccomp filter, no inherited fds.
# Escape probes print SAFE/RISK.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

# ---- capabilities (root mode: in a user namespace they only reach the
# namespace's own objects) ------------------------------------------------------

assert_cap_dropped() {
	skip_unless_root "capabilities in a user namespace only act on the namespace's own objects"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe has-cap "$1"
	assert_success
	assert_output "$1 eff=no bnd=no"
}

@test "CAP_SYS_ADMIN is dropped from the effective and bounding sets" {
	assert_cap_dropped CAP_SYS_ADMIN
}

@test "CAP_MKNOD is dropped from the effective and bounding sets" {
	assert_cap_dropped CAP_MKNOD
}

@test "CAP_SYS_MODULE is dropped from the effective and bounding sets" {
	assert_cap_dropped CAP_SYS_MODULE
}

@test "CAP_SYS_RAWIO is dropped from the effective and bounding sets" {
	assert_cap_dropped CAP_SYS_RAWIO
}

@test "CAP_SYS_PTRACE is dropped from the effective and bounding sets" {
	assert_cap_dropped CAP_SYS_PTRACE
}

@test "CAP_SYS_BOOT is dropped from the effective and bounding sets" {
	assert_cap_dropped CAP_SYS_BOOT
}

@test "CAP_SYS_TIME is dropped from the effective and bounding sets" {
	assert_cap_dropped CAP_SYS_TIME
}

@test "root inside keeps the ordinary capabilities (CAP_CHOWN)" {
	skip_unless_root "capabilities in a user namespace only act on the namespace's own objects"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe has-cap CAP_CHOWN
	assert_success
	assert_output "CAP_CHOWN eff=yes bnd=yes"
}

@test "a --user process has no effective capabilities" {
	run --separate-stderr "$GPURUN" -u 1000:1000 "$BUSYBOX_DIR" probe caps
	assert_success
	assert_output --regexp '^CapEff=0000000000000000 CapPrm=0000000000000000 '
}

# ---- refused operations ------------------------------------------------------------

@test "mknod of a device fails with EPERM" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe mknod /tmp/mem
	assert_success
	assert_output "mknod: EPERM"
}

@test "mounting a file system fails with EPERM" {
	skip_unless_root "in a user namespace its root may mount what the namespace owns"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe mount /mnt
	assert_success
	assert_output "mount: EPERM"
}

@test "no_new_privs is set" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe nnp
	assert_success
	assert_output "NoNewPrivs: 1"
}

@test "a seccomp filter is active" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe seccomp
	assert_success
	assert_output "Seccomp: 2"
}

# Without the filter these calls fail differently (ok, EINVAL, ENOSYS,
# ENOENT...): only the filter answers EPERM to all of them.
assert_syscall_denied() {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe syscall "$1"
	assert_success
	assert_output "$1: EPERM"
}

@test "seccomp denies keyctl" {
	assert_syscall_denied keyctl
}

@test "seccomp denies add_key" {
	assert_syscall_denied add_key
}

@test "seccomp denies kexec_load" {
	assert_syscall_denied kexec_load
}

@test "seccomp denies open_by_handle_at" {
	assert_syscall_denied open_by_handle_at
}

@test "seccomp denies init_module" {
	assert_syscall_denied init_module
}

@test "seccomp denies bpf" {
	assert_syscall_denied bpf
}

@test "ordinary system calls still work under the filter (fork, exec, pipes)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'echo a | cat | wc -c'
	assert_success
	assert_output "2"
}

# ---- file descriptors ----------------------------------------------------------------

@test "every fd above 2 is closed before the command runs" {
	exec 5</dev/null
	exec 7>"$BATS_TEST_TMPDIR/fd7"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe fds
	exec 5<&- 7>&-
	assert_success
	assert_line --regexp '^0 -> '
	assert_line --regexp '^1 -> '
	assert_line --regexp '^2 -> '
	refute_line --regexp '^([3-9]|[1-9][0-9]+) -> '
}

# ---- escape probes -----------------------------------------------------------------

@test "a --user cannot change its groups (setgroups is SAFE)" {
	run --separate-stderr "$GPURUN" -u 1000:1000 "$BUSYBOX_DIR" probe setgroups
	assert_success
	if [[ $GPURUN_TEST_MODE == root ]]; then
		assert_output 'SAFE setgroups: EPERM'
	else
		# One id mapped: answered with success, and nothing changed.
		assert_output 'SAFE setgroups: ok, but nothing changed'
	fi
}

@test "/proc/kcore cannot be read (SAFE)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe escape kcore
	assert_success
	assert_output --regexp '^SAFE kcore: (ENOENT|EPERM|EACCES|masked by /dev/null)$'
}

@test "a --user cannot chroot out of the container (SAFE)" {
	run --separate-stderr "$GPURUN" -u 1000:1000 "$BUSYBOX_DIR" probe chroot-escape
	assert_success
	assert_output --partial "SAFE chroot-escape"
}

# ---- docker's masked /proc and /sys paths ------------------------------------------
# Kernel-wide state a fresh procfs and the host's /sys still show (other
# users' keys, every timer with its owner, interrupt counts, firmware
# tables): gpurun masks each that this kernel has, as docker does, a file
# with /dev/null, a directory with an empty read-only tmpfs.

DOCKER_MASKS=(/proc/acpi /proc/asound /proc/interrupts /proc/kcore /proc/keys /proc/latency_stats
	/proc/sched_debug /proc/scsi /proc/timer_list /proc/timer_stats /sys/devices/virtual/powercap /sys/firmware)

# host_masks: the masked paths this host has, one a line.
host_masks() {
	local p
	for p in "${DOCKER_MASKS[@]}"; do
		if [[ -e $p || -L $p ]]; then echo "$p"; fi
	done
}

# The script a container runs over each mask: the mount on top of it, and
# what reading it gives.
MASK_CHECK='for p; do
	probe mountinfo-has "$p" | cut -d" " -f1-3
	if [ -d "$p" ]; then echo "$p lists: $(ls -A "$p")"; else echo "$p reads: $(cat "$p")"; fi
done'

# expected_masks: what MASK_CHECK prints when every mask is in place.
expected_masks() {
	local p
	for p in $(host_masks); do
		if [[ -d $p ]]; then
			echo "$p opts=ro,nosuid,nodev,noexec,relatime fstype=tmpfs"
			echo "$p lists: "
		else
			echo "$p opts=ro,nosuid,noexec,relatime fstype=devtmpfs"
			echo "$p reads: "
		fi
	done
}

assert_masked() {
	[[ -n $(host_masks) ]] || skip "this kernel has none of docker's masked paths"
	run --separate-stderr "$GPURUN" "$@" "$BUSYBOX_DIR" sh -c "$MASK_CHECK" sh $(host_masks)
	assert_success
	assert_output "$(expected_masks)"
}

@test "docker's masked /proc and /sys paths read empty for root in the container" {
	assert_masked
}

@test "docker's masked /proc and /sys paths read empty for a --user in the container" {
	assert_masked -u 1000:1000
}

@test "a masked directory is a read-only tmpfs itself, as docker mounts it: root in the container cannot write there" {
	local p dir=
	for p in $(host_masks); do
		if [[ -d $p ]]; then dir=$p && break; fi
	done
	[[ -n $dir ]] || skip "this kernel has no masked directory"
	# The super options, the last field of the mount's mountinfo line.
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" sh -c \
		'if touch "$1/x" 2>/dev/null; then echo written; else echo refused; fi
		awk -v m="$1" '"'"'$5 == m { print $NF }'"'"' /proc/self/mountinfo' sh "$dir"
	assert_success
	assert_line --index 0 refused
	assert_line --index 1 --regexp '^ro(,|$)'
}

@test "docker's masked paths read empty with a fresh sysfs (--net none)" {
	assert_masked --net none
}

@test "the plan shows each mask, and none for a path this kernel lacks" {
	run --separate-stderr "$GPURUN" --dry-run "$BUSYBOX_DIR" true
	assert_success
	local p block n=0
	# The masks stand in the hardening block, under its heading.
	block=$(awk '/^# Hardening / { on = 1; next } on && /^# / { exit } on' <<<"$output")
	[[ -n $block ]] || fail "no hardening block: $output"
	for p in "${DOCKER_MASKS[@]}"; do
		if [[ -d $p ]]; then
			assert_line --partial "mount -t tmpfs -o ro,nosuid,nodev,noexec,mode=0555 tmpfs ${p#/}"
			n=$((n + 1))
		elif [[ -e $p ]]; then
			grep -Eq "^bind_each ro,nosuid,noexec /dev/null( [^ ]+)* ${p#/}( |$)" <<<"$block" || fail "$p is not masked: $block"
			n=$((n + 1))
		else
			if grep -Eq " ${p#/}( |;|$)" <<<"$block"; then fail "$p is masked, and this kernel lacks it"; fi
		fi
	done
	assert_equal "$n" "$(host_masks | wc -l)"
}

@test "a mask cannot be unmounted or made writable (root)" {
	[[ -n $(host_masks) ]] || skip "this kernel has none of docker's masked paths"
	local names=() p
	for p in $(host_masks); do names+=("umount:$p" "remount-rw:$p"); done
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe escape "${names[@]}"
	assert_success
	assert_equal "${#lines[@]}" "${#names[@]}"
	refute_output --partial "RISK"
}

@test "a mask cannot be unmounted or made writable (--user)" {
	[[ -n $(host_masks) ]] || skip "this kernel has none of docker's masked paths"
	local names=() p
	for p in $(host_masks); do names+=("umount:$p" "remount-rw:$p"); done
	run --separate-stderr "$GPURUN" -u 1000:1000 "$BUSYBOX_DIR" probe escape "${names[@]}"
	assert_success
	assert_equal "${#lines[@]}" "${#names[@]}"
	refute_output --partial "RISK"
}

@test "without gpurun, a mask can be unmounted and made writable (the probes say RISK)" {
	skip_unless_root "the host side of these probes needs the host's root"
	[[ -n $(host_masks) ]] || skip "this kernel has none of docker's masked paths"
	# Masked as gpurun does, in a private mount namespace.
	local setup=true names=() want=() p
	for p in $(host_masks); do
		if [[ -d $p ]]; then
			setup+=" && mount -t tmpfs -o ro none $p"
		else
			setup+=" && mount --bind /dev/null $p && mount -o remount,bind,ro $p"
		fi
		names+=("remount-rw:$p" "umount:$p")
		want+=("RISK remount-rw:$p: made writable" "RISK umount:$p: unmounted")
	done
	run unshare -m --propagation private sh -c "$setup"' && exec "$0" escape "$@"' "$(fixture probe)" "${names[@]}"
	assert_success
	assert_output "$(printf '%s\n' "${want[@]}")"
}
