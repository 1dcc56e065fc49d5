#!/usr/bin/env bats
# The command's environment, working directory and user: a clean
# environment with PATH and HOME, -e, -w, -u.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

@test "the host's environment does not leak in (GPURUN_SECRET)" {
	export GPURUN_SECRET=x
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe env GPURUN_SECRET </dev/null
	assert_failure 1
	assert_output "GPURUN_SECRET is unset"
}

@test "no host variable other than PATH, HOME, TERM is visible inside" {
	export GPURUN_SECRET=x
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" env </dev/null
	assert_success
	local line name leaked=""
	for line in "${lines[@]}"; do
		name=${line%%=*}
		case $name in PATH | HOME | TERM | HOSTNAME) continue ;; esac
		if [[ -n "${!name+set}" ]]; then leaked+="$name "; fi
	done
	[[ -z "$leaked" ]] || fail "host variables visible inside: $leaked"
}

@test "PATH is the standard one" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe env PATH
	assert_success
	assert_output "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
}

@test "HOME is /root for uid 0" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe env HOME
	assert_success
	assert_output "/root"
}

@test "HOME is the passwd home for --user NAME" {
	run --separate-stderr "$GPURUN" -u alice "$BUSYBOX_DIR" probe env HOME
	assert_success
	assert_output "/home/alice"
}

@test "HOME is the passwd home for a numeric --user found in passwd" {
	run --separate-stderr "$GPURUN" -u 1000:1000 "$BUSYBOX_DIR" probe env HOME
	assert_success
	assert_output "/home/alice"
}

@test "HOME is / for a --user not in passwd" {
	run --separate-stderr "$GPURUN" -u 4242:4242 "$BUSYBOX_DIR" probe env HOME
	assert_success
	assert_output "/"
}

@test "TERM is not set when stdin is not a terminal" {
	export TERM=xterm-gpurun-test
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe env TERM </dev/null
	assert_failure 1
	assert_output "TERM is unset"
}

@test "TERM is the host's when stdin is a terminal" {
	export TERM=xterm-gpurun-test
	tty_run "$GPURUN" "$BUSYBOX_DIR" probe env TERM
	assert_success
	assert_line "xterm-gpurun-test"
}

@test "-e K=V sets a variable" {
	run --separate-stderr "$GPURUN" -e FOO=bar "$BUSYBOX_DIR" probe env FOO
	assert_success
	assert_output "bar"
}

@test "--env K=V keeps '=' and spaces in the value" {
	run --separate-stderr "$GPURUN" --env 'FOO=a=b c' "$BUSYBOX_DIR" probe env FOO
	assert_success
	assert_output "a=b c"
}

@test "-e K=V replaces a default (PATH)" {
	run --separate-stderr "$GPURUN" -e PATH=/bin "$BUSYBOX_DIR" probe env PATH
	assert_success
	assert_output "/bin"
}

@test "-e K copies the host's value" {
	export GPURUN_COPIED="from the host"
	run --separate-stderr "$GPURUN" -e GPURUN_COPIED "$BUSYBOX_DIR" probe env GPURUN_COPIED
	assert_success
	assert_output "from the host"
}

@test "-e K for a variable the host does not have leaves it unset" {
	unset GPURUN_NOT_SET
	run --separate-stderr "$GPURUN" -e GPURUN_NOT_SET "$BUSYBOX_DIR" probe env GPURUN_NOT_SET
	assert_failure 1
	assert_output "GPURUN_NOT_SET is unset"
}

@test "-e can be repeated" {
	run --separate-stderr "$GPURUN" -e A=1 -e B=2 "$BUSYBOX_DIR" /bin/sh -c 'echo "$A$B"'
	assert_success
	assert_output "12"
}

@test "-w DIR sets the working directory" {
	run --separate-stderr "$GPURUN" -w /etc "$BUSYBOX_DIR" probe cwd
	assert_success
	assert_output "/etc"
}

@test "--workdir DIR that does not exist is created" {
	run --separate-stderr "$GPURUN" --workdir /work/deep/dir "$BUSYBOX_TGZ" probe cwd
	assert_success
	assert_output "/work/deep/dir"
}

@test "-u UID:GID runs the command with those ids" {
	run --separate-stderr "$GPURUN" -u 1000:1000 "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=1000 euid=1000 egid=1000 '
}

@test "-u NAME takes the ids from the image's /etc/passwd" {
	run --separate-stderr "$GPURUN" -u alice "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=1000 euid=1000 egid=1000 '
}

@test "--user NAME:GROUP takes the group from the image's /etc/group" {
	run --separate-stderr "$GPURUN" --user alice:video "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=44 euid=1000 egid=44 '
}

@test "-u NAME also gets the groups the image's /etc/group lists it in, as docker's runtimes give them" {
	skip_unless_root "with one id mapped the kernel denies setgroups: the user's own group only"
	run --separate-stderr "$GPURUN" -u alice "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=1000 euid=1000 egid=1000 groups=44,1000$'
	run --separate-stderr "$GPURUN" --dry-run -u alice "$BUSYBOX_DIR" probe ids
	assert_output --partial " --bounding-set=\"\$CAPS\" --reuid=1000 --regid=1000 --groups=1000,44 -- env -i "
}

@test "a numeric -u found in passwd gets that user's groups too; one with a group gets that group alone" {
	skip_unless_root "with one id mapped the kernel denies setgroups: the user's own group only"
	run --separate-stderr "$GPURUN" -u 1000 "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=1000 euid=1000 egid=1000 groups=44,1000$'
	run --separate-stderr "$GPURUN" -u alice:alice "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=1000 euid=1000 egid=1000 groups=1000$'
}

@test "with one id mapped, -u NAME runs with its own group only" {
	skip_unless_user
	run --separate-stderr "$GPURUN" -u alice "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=1000 euid=1000 egid=1000 groups=1000$'
}

@test "as root, the caller's own supplementary groups never reach the container" {
	skip_unless_root "unprivileged, the caller's groups are all the user namespace has"
	run --separate-stderr setpriv --groups 0,4242 -- "$GPURUN" "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=0 gid=0 euid=0 egid=0 groups=0$'
	run --separate-stderr setpriv --groups 0,4242 -- "$GPURUN" --dry-run "$BUSYBOX_DIR" probe ids
	assert_output --partial " --bounding-set=\"\$CAPS\" --groups=0 -- env -i "
}

@test "-u UID alone runs with that uid" {
	run --separate-stderr "$GPURUN" -u 1000 "$BUSYBOX_DIR" probe ids
	assert_success
	assert_output --regexp '^uid=1000 gid=[0-9]+ euid=1000 '
}

@test "-u with a name the image does not know fails with 125 and names it" {
	run --separate-stderr "$GPURUN" -u mallory "$BUSYBOX_DIR" probe ids
	assert_gpurun_error 125 "mallory"
}

@test "-u with a group the image does not know fails with 125 and names it" {
	run --separate-stderr "$GPURUN" -u alice:nosuchgroup "$BUSYBOX_DIR" probe ids
	assert_gpurun_error 125 "nosuchgroup"
}

@test "a --user can write its own home but not /root" {
	skip_unless_root "with a single-id user namespace every file belongs to the --user"
	run --separate-stderr "$GPURUN" -u alice "$BUSYBOX_TGZ" /bin/sh -c \
		'probe write /home/alice/f; probe write /root/f'
	assert_success
	assert_line --index 0 "write: ok"
	assert_line --index 1 "write: EACCES"
}
