#!/usr/bin/env bats
# Namespaces: mount, pid and ipc always; user when the caller is not root;
# uts with --hostname; net with --net none.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

# ns_inside NAME [GPURUN OPTIONS...]: the namespace link of the command.
ns_inside() {
	local name=$1
	shift
	run --separate-stderr "$GPURUN" "$@" "$BUSYBOX_DIR" probe ns "$name"
	assert_success
}

@test "the command runs in a new mount namespace" {
	ns_inside mnt
	assert_output --regexp '^mnt mnt:\[[0-9]+\]$'
	refute_output "$(host_ns mnt)"
}

@test "the command runs in a new pid namespace" {
	ns_inside pid
	assert_output --regexp '^pid pid:\[[0-9]+\]$'
	refute_output "$(host_ns pid)"
}

@test "the command runs in a new ipc namespace" {
	ns_inside ipc
	assert_output --regexp '^ipc ipc:\[[0-9]+\]$'
	refute_output "$(host_ns ipc)"
}

@test "an unprivileged caller gets a new user namespace" {
	skip_unless_user
	ns_inside user
	assert_output --regexp '^user user:\[[0-9]+\]$'
	refute_output "$(host_ns user)"
}

@test "as root no user namespace is added" {
	skip_unless_root
	ns_inside user
	assert_output "$(host_ns user)"
}

@test "an unprivileged caller is root inside, mapped to its own uid and gid only" {
	skip_unless_user
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'id -u; id -g; cat /proc/self/uid_map /proc/self/gid_map'
	assert_success
	assert_line --index 0 "0"
	assert_line --index 1 "0"
	assert_line --index 2 --regexp "^ +0 +$(id -u) +1$"
	assert_line --index 3 --regexp "^ +0 +$(id -g) +1$"
	assert_equal "${#lines[@]}" 4
}

@test "an unprivileged caller's user namespace denies setgroups, and a setgroups there changes nothing" {
	skip_unless_user
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'cat /proc/self/setgroups; probe setgroups'
	assert_success
	assert_line --index 0 "deny"
	# Answered with success (ns/security.c: package managers need it), done: never.
	assert_line --index 1 'SAFE setgroups: ok, but nothing changed'
}

@test "without --hostname the UTS namespace and host name are the host's" {
	ns_inside uts
	assert_output "$(host_ns uts)"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" hostname
	assert_output "$(hostname)"
}

@test "--hostname NAME gives a new UTS namespace with that host name" {
	local host_name
	host_name=$(hostname)
	ns_inside uts --hostname gpurun-box
	refute_output "$(host_ns uts)"
	run --separate-stderr "$GPURUN" --hostname gpurun-box "$BUSYBOX_DIR" hostname
	assert_success
	assert_output "gpurun-box"
	assert_equal "$(hostname)" "$host_name"
}

@test "the network is the host's by default" {
	ns_inside net
	assert_output "$(host_ns net)"
}

@test "--net host shares the host's network namespace" {
	ns_inside net --net host
	assert_output "$(host_ns net)"
}

@test "--net none gives a new network namespace" {
	ns_inside net --net none
	assert_output --regexp '^net net:\[[0-9]+\]$'
	refute_output "$(host_ns net)"
}

@test "--net none has only the loopback interface" {
	run --separate-stderr "$GPURUN" --net none "$BUSYBOX_DIR" ls /sys/class/net
	assert_success
	assert_output "lo"
}

@test "--net none brings the loopback interface up" {
	run --separate-stderr "$GPURUN" --net none "$BUSYBOX_DIR" ip -o link show
	assert_success
	assert_equal "${#lines[@]}" 1
	assert_output --regexp '^1: lo: <LOOPBACK,UP,LOWER_UP>'
}
