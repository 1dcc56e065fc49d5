#!/usr/bin/env bats
# The flags people type from docker and podman: each one gpurun has does
# what docker's does (or is accepted where gpurun always does it), and
# each one it lacks is refused in one line saying what to do instead.

load lib/common
load lib/registry

setup_file() {
	require_gpurun
	common_images
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

teardown() {
	registry_stop_all || true
	if [[ -n ${FIRST:-} ]]; then
		kill "$FIRST" 2>/dev/null
		wait "$FIRST" 2>/dev/null
	fi
	return 0
}

# cached_registry_image: a plain-HTTP registry holding the OCI fixture,
# pulled once into this test's cache, then stopped; sets REF.
cached_registry_image() {
	registry_require_tools || fail "the registry tools are missing"
	registry_start P plain || fail "the registry did not start"
	registry_push P "oci:$(oci_fixture oci):latest" gpurun/test:latest || fail "skopeo could not push"
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache GPURUN_INSECURE_REGISTRIES=$REG_P_HOST
	REF=docker://$REG_P_HOST/gpurun/test:latest
	run --separate-stderr "$GPURUN" --gpus void "$REF" 'echo pulled'
	assert_output pulled
	registry_stop_all || true # wait's status is the server's SIGTERM
}

# ---- accepted: what gpurun always does ----------------------------------------

@test "--rm and --init are accepted and change nothing" {
	run --separate-stderr "$GPURUN" --gpus void --rm --init "$BUSYBOX_DIR" sh -c 'echo $$'
	assert_success
	assert_output 2
}

@test "-i passes stdin and its end through to the command, as without it" {
	run --separate-stderr bash -c 'printf "one\ntwo\n" | "$GPURUN" --gpus void -i "$BUSYBOX_DIR" sh -c "cat; echo end"'
	assert_success
	assert_output $'one\ntwo\nend'
}

# ---- -t: refused until it is real -----------------------------------------------

# What -t does under a terminal is tests/tty.bats'; here, how the letters
# are read: the plan says when a pty is given.
@test "-t alone is the tty option, not a value-taking one: the image stays the image" {
	run --separate-stderr "$GPURUN" --dry-run --gpus void -t "$BUSYBOX_DIR" true
	assert_success
	assert_output --partial "pty"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "-it is read as -i and -t, not as an option named 'it'" {
	run --separate-stderr "$GPURUN" --dry-run --gpus void -it "$BUSYBOX_DIR" true
	assert_success
	assert_output --partial "pty"
}

@test "-ti is read as -t and -i too" {
	run --separate-stderr "$GPURUN" --dry-run --gpus void -ti "$BUSYBOX_DIR" true
	assert_success
	assert_output --partial "pty"
}

@test "an unknown letter in a group names the letter and the group" {
	run -125 --separate-stderr "$GPURUN" --gpus void -iz "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "unknown option -z (in -iz)"
}

# ---- --entrypoint ----------------------------------------------------------------

@test "--entrypoint replaces the image's Entrypoint and drops its Cmd" {
	run --separate-stderr "$GPURUN" --gpus void -u 0 --entrypoint /bin/pwd "$(oci_fixture oci)"
	assert_success
	assert_output /data
}

@test "--entrypoint with COMMAND gives COMMAND to the new entrypoint as arguments" {
	run --separate-stderr "$GPURUN" --gpus void -u 0 --entrypoint /bin/echo "$(oci_fixture oci)" one two
	assert_success
	assert_output "one two"
}

@test "--entrypoint '' leaves no Entrypoint: COMMAND runs by itself" {
	# With the image's Entrypoint (/bin/sh -c) "echo" would be a script
	# printing an empty line; alone it is the program.
	run --separate-stderr "$GPURUN" --gpus void -u 0 --entrypoint '' "$(oci_fixture oci)" echo alone
	assert_success
	assert_output alone
}

# ---- --env-file --------------------------------------------------------------------

@test "--env-file reads docker's format: K=V, K from the host, comments, quotes kept" {
	printf '%s\n' 'A=1' '# a comment' '  B="two words"' 'FROM_HOST' 'NOT_ON_HOST' '' 'C=' >"$BATS_TEST_TMPDIR/env"
	FROM_HOST=hostval run --separate-stderr "$GPURUN" --gpus void --env-file "$BATS_TEST_TMPDIR/env" \
		"$BUSYBOX_DIR" sh -c 'echo "$A|$B|$FROM_HOST|${NOT_ON_HOST-unset}|[$C]"'
	assert_success
	assert_output '1|"two words"|hostval|unset|[]'
}

@test "-e wins over --env-file, whichever comes first" {
	echo 'X=from-file' >"$BATS_TEST_TMPDIR/env"
	run --separate-stderr "$GPURUN" --gpus void -e X=from-e --env-file "$BATS_TEST_TMPDIR/env" \
		"$BUSYBOX_DIR" sh -c 'echo $X'
	assert_success
	assert_output from-e
}

@test "--env-file with white space in a name names the file and the line, 125" {
	printf 'OK=1\nBAD NAME=1\n' >"$BATS_TEST_TMPDIR/env"
	run -125 --separate-stderr "$GPURUN" --env-file "$BATS_TEST_TMPDIR/env" "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--env-file $BATS_TEST_TMPDIR/env: line 2: the variable name contains white space"
}

@test "a missing --env-file names it, 125" {
	run -125 --separate-stderr "$GPURUN" --env-file /nonexistent/env "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--env-file /nonexistent/env: No such file or directory"
}

# ---- --tmpfs, --shm-size, --mount ----------------------------------------------------

@test "--tmpfs DST is a tmpfs with docker's noexec,nosuid,nodev" {
	run --separate-stderr "$GPURUN" --gpus void --tmpfs /scratch "$BUSYBOX_DIR" \
		sh -c 'grep " /scratch " /proc/mounts'
	assert_success
	assert_output --regexp '^tmpfs /scratch tmpfs rw,nosuid,nodev,noexec,'
}

@test "--tmpfs DST:size=1m,mode=700 sets its size and mode" {
	run --separate-stderr "$GPURUN" --gpus void --tmpfs /scratch:size=1m,mode=700 "$BUSYBOX_DIR" \
		sh -c 'stat -c %a /scratch; df -k /scratch | tail -1'
	assert_success
	assert_line --index 0 700
	assert_line --index 1 --regexp '^tmpfs +1024 '
}

@test "--tmpfs DST:exec lets programs run from it" {
	run --separate-stderr "$GPURUN" --gpus void --tmpfs /scratch:exec "$BUSYBOX_DIR" \
		sh -c 'cp /bin/busybox /scratch/echo && /scratch/echo ran'
	assert_success
	assert_output ran
}

@test "--tmpfs with an option gpurun keeps off (suid) is refused, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --tmpfs /scratch:suid "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--tmpfs '/scratch:suid': option 'suid' is not one gpurun takes"
}

@test "--shm-size 64m caps /dev/shm at 64 MiB" {
	run --separate-stderr "$GPURUN" --gpus void --shm-size 64m "$BUSYBOX_DIR" sh -c 'df -k /dev/shm | tail -1'
	assert_success
	assert_output --regexp '^tmpfs +65536 '
}

@test "--shm-size that is not a size is refused, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --shm-size 64x "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--shm-size '64x': expected a size such as 64m or 1g"
}

@test "--mount type=bind,source=,target=,readonly binds a host directory read-only" {
	mkdir "$BATS_TEST_TMPDIR/vol"
	echo hello >"$BATS_TEST_TMPDIR/vol/f"
	run --separate-stderr "$GPURUN" --gpus void \
		--mount "type=bind,source=$BATS_TEST_TMPDIR/vol,target=/data,readonly" "$BUSYBOX_DIR" \
		sh -c 'cat /data/f; touch /data/new 2>/dev/null || echo read-only'
	assert_success
	assert_output $'hello\nread-only'
}

@test "--mount takes docker's aliases src, dst and ro" {
	mkdir "$BATS_TEST_TMPDIR/vol"
	run --separate-stderr "$GPURUN" --gpus void --mount "type=bind,src=$BATS_TEST_TMPDIR/vol,dst=/data,ro" \
		"$BUSYBOX_DIR" sh -c 'grep " /data " /proc/mounts'
	assert_success
	assert_output --regexp ' /data [a-z0-9]+ ro,'
}

@test "--mount type=bind,...,destination= without ro is writable and reaches the host" {
	mkdir "$BATS_TEST_TMPDIR/vol"
	run --separate-stderr "$GPURUN" --gpus void \
		--mount "type=bind,source=$BATS_TEST_TMPDIR/vol,destination=/data" "$BUSYBOX_DIR" sh -c 'echo x >/data/new'
	assert_success
	assert_file_exist "$BATS_TEST_TMPDIR/vol/new"
}

@test "--mount type=tmpfs,target=,tmpfs-size=,tmpfs-mode= makes that tmpfs" {
	run --separate-stderr "$GPURUN" --gpus void --mount type=tmpfs,target=/t,tmpfs-size=2m,tmpfs-mode=1770 \
		"$BUSYBOX_DIR" sh -c 'stat -c %a /t; df -k /t | tail -1'
	assert_success
	assert_line --index 0 1770
	assert_line --index 1 --regexp '^tmpfs +2048 '
}

@test "--mount bind-propagation is refused saying why, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void \
		--mount "type=bind,src=$BATS_TEST_TMPDIR,dst=/data,bind-propagation=shared" "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "bind-propagation is not supported: every mount of the container is private to it"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "--mount type=volume is refused: gpurun has no named volumes, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --mount type=volume,src=v,dst=/data "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "type must be bind or tmpfs (gpurun has no named volumes"
}

@test "--mount with an unknown key names it, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --mount type=tmpfs,dst=/t,colour=blue "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "unknown key 'colour'"
}

# ---- --network, --ipc ---------------------------------------------------------------

@test "--network none is --net none: only lo" {
	run --separate-stderr "$GPURUN" --gpus void --network none "$BUSYBOX_DIR" sh -c 'ls /sys/class/net'
	assert_success
	assert_output lo
}

@test "--network=host shares the host's network namespace" {
	run --separate-stderr "$GPURUN" --gpus void --network=host "$BUSYBOX_DIR" readlink /proc/self/ns/net
	assert_success
	assert_output "$(readlink /proc/self/ns/net)"
}

@test "--network bridge is refused saying what gpurun has, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --network bridge "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--net/--network: 'bridge' is not one gpurun has: host (the default) or none"
}

@test "--ipc host shares the host's IPC namespace" {
	run --separate-stderr "$GPURUN" --gpus void --ipc host "$BUSYBOX_DIR" readlink /proc/self/ns/ipc
	assert_success
	assert_output "$(readlink /proc/self/ns/ipc)"
}

@test "without --ipc, and with --ipc private, the IPC namespace is the container's own" {
	local host
	host=$(readlink /proc/self/ns/ipc)
	run --separate-stderr "$GPURUN" --gpus void "$BUSYBOX_DIR" readlink /proc/self/ns/ipc
	assert_success
	[[ $output == ipc:* && $output != "$host" ]] || fail "shared: $output"
	run --separate-stderr "$GPURUN" --gpus void --ipc private "$BUSYBOX_DIR" readlink /proc/self/ns/ipc
	[[ $output == ipc:* && $output != "$host" ]] || fail "shared: $output"
}

@test "--ipc with a value gpurun lacks is refused, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --ipc shareable "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--ipc 'shareable': expected one of host|private"
}

@test "--ipc host binds the host's /dev/shm: a file made there on the host is read inside" {
	# Not $$: each suite is pid 1 of a pid namespace of its own, and the
	# root and unprivileged runs share the machine's /dev/shm.
	local f
	f=$(mktemp -u /dev/shm/gpurun-test.XXXXXXXXXX)
	echo from-the-host >"$f"
	run --separate-stderr "$GPURUN" --gpus void --ipc host "$BUSYBOX_DIR" sh -c "cat $f; echo from-inside >$f.in"
	rm -f "$f"
	assert_success
	assert_output from-the-host
	run cat "$f.in"
	rm -f "$f.in"
	assert_output from-inside
}

@test "two --ipc host containers share /dev/shm while both run: a FIFO made by one is read by the other" {
	local f out=$BATS_TEST_TMPDIR/first.out
	f=$(mktemp -u /dev/shm/gpurun-test.XXXXXXXXXX)
	"$GPURUN" --gpus void --ipc host "$BUSYBOX_DIR" sh -c "mkfifo $f && echo ready && echo from-the-first >$f" \
		>"$out" 2>&1 &
	FIRST=$!
	wait_for_line "$out" ready
	run --separate-stderr timeout -k 5 20 "$GPURUN" --gpus void --ipc host "$BUSYBOX_DIR" cat "$f"
	rm -f "$f"
	assert_success
	assert_output from-the-first
	wait "$FIRST"
	FIRST=
}

@test "--shm-size with --ipc host is refused: /dev/shm is the host's, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --ipc host --shm-size 64m "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--shm-size cannot be combined with --ipc host: /dev/shm is then the host's"
}

@test "--ipc host shows in the plan: unshare without --ipc" {
	run --separate-stderr "$GPURUN" --gpus void --dry-run --ipc host "$BUSYBOX_DIR" true
	assert_success
	assert_line --regexp '^unshare --mount --pid (--user --map-root-user )?--fork'
}

# ---- --pull ----------------------------------------------------------------------

@test "--pull never refuses a registry image that is not in the cache, without asking" {
	run -125 --separate-stderr "$GPURUN" --gpus void --pull never docker://127.0.0.1:1/nothing:latest true
	assert_gpurun_error 125 \
		"image docker://127.0.0.1:1/nothing:latest: not in the cache, and --pull never does not ask the registry"
}

@test "--pull never, and the default, run a cached registry image with the registry gone" {
	cached_registry_image
	run --separate-stderr "$GPURUN" --gpus void --pull never "$REF" 'echo from-cache'
	assert_success
	assert_output from-cache
	run --separate-stderr "$GPURUN" --gpus void --pull missing "$REF" 'echo from-cache'
	assert_output from-cache
}

@test "--pull always asks the registry again for a cached image: with it gone, the run fails" {
	cached_registry_image
	run -125 --separate-stderr "$GPURUN" --gpus void --pull always "$REF" 'echo from-cache'
	assert_gpurun_error 125 "$REG_P_HOST"
}

@test "--pull with a policy docker lacks is refused, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --pull sometimes "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--pull 'sometimes': expected one of missing|always|never"
}

# ---- --ulimit ----------------------------------------------------------------------

@test "--ulimit nofile=SOFT:HARD sets the command's soft and hard limits" {
	run --separate-stderr "$GPURUN" --gpus void --ulimit nofile=100:200 "$BUSYBOX_DIR" sh -c 'ulimit -Sn; ulimit -Hn'
	assert_success
	assert_output $'100\n200'
}

@test "--ulimit NAME=N sets both limits, several --ulimit add up" {
	run --separate-stderr "$GPURUN" --gpus void --ulimit core=0 --ulimit stack=4194304 "$BUSYBOX_DIR" \
		sh -c 'ulimit -Sc; ulimit -Hc; ulimit -Ss'
	assert_success
	assert_output $'0\n0\n4096'
}

@test "--ulimit shows in the plan as sh's ulimit before the command's setpriv, and sh sets those limits" {
	run --separate-stderr "$GPURUN" --gpus void --dry-run --ulimit nofile=100:200 --ulimit stack=8388608 \
		"$BUSYBOX_DIR" true
	assert_success
	local line
	line=$(grep '^ulimit ' <<<"$output") || fail "no ulimit line: $output"
	grep -A3 '^ulimit ' <<<"$output" | grep -q '^setpriv ' || fail "the limits are not set just before the command: $output"
	run sh -c "$line ulimit -Sn; ulimit -Hn; ulimit -Ss"
	assert_success
	assert_output $'100\n200\n8192'
}

@test "a --ulimit that sh's ulimit cannot say alike in every shell is a comment in the plan" {
	run --separate-stderr "$GPURUN" --gpus void --dry-run --ulimit nproc=100:200 "$BUSYBOX_DIR" true
	assert_success
	assert_line "# --ulimit nproc=100:200: set by setrlimit before the exec (no ulimit every sh shares says it)"
}

@test "--ulimit with a name docker lacks lists the names, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --ulimit files=1 "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--ulimit 'files=1': expected NAME=SOFT[:HARD], NAME one of as, core, cpu,"
}

@test "--ulimit with the soft limit above the hard one is refused, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void --ulimit nofile=200:100 "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--ulimit 'nofile=200:100': the soft limit is above the hard one"
}

# Whether this shell may raise its hard limit of open files (root with
# CAP_SYS_RESOURCE): what a launch from it may do too.
can_raise_nofile() {
	(ulimit -Hn $(($(ulimit -Hn) + 1))) 2>/dev/null
}

@test "raising a hard limit without CAP_SYS_RESOURCE fails naming --ulimit, in one line, 125" {
	! can_raise_nofile || skip "this caller may raise its hard limits"
	local hard
	hard=$(ulimit -Hn)
	run -125 --separate-stderr "$GPURUN" --gpus void --ulimit "nofile=1024:$((hard + 1))" "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--ulimit nofile: setrlimit: Operation not permitted"
	assert_stderr_partial "hint: raising a hard limit needs CAP_SYS_RESOURCE, which gpurun's caller lacks; the hard limit here is $hard"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a caller with CAP_SYS_RESOURCE can raise a hard limit with --ulimit" {
	can_raise_nofile || skip "this caller may not raise its hard limits"
	local hard
	hard=$(ulimit -Hn)
	run --separate-stderr "$GPURUN" --gpus void --ulimit "nofile=1024:$((hard + 1))" "$BUSYBOX_DIR" sh -c 'ulimit -Hn'
	assert_success
	assert_output "$((hard + 1))"
}

# ---- --userns keep-id -------------------------------------------------------------

@test "--userns keep-id, unprivileged: the command runs as the caller's uid and gid, not root" {
	skip_unless_user
	run --separate-stderr "$GPURUN" --gpus void --userns keep-id "$BUSYBOX_DIR" sh -c 'id -u; id -g'
	assert_success
	assert_output "$(id -u)
$(id -g)"
}

@test "--userns keep-id, unprivileged: files made in a -v volume are the caller's, and -u still wins" {
	skip_unless_user
	mkdir "$BATS_TEST_TMPDIR/vol"
	run --separate-stderr "$GPURUN" --gpus void --userns keep-id -v "$BATS_TEST_TMPDIR/vol:/w" "$BUSYBOX_DIR" \
		sh -c 'echo made >/w/new && stat -c %u:%g /w/new'
	assert_success
	assert_output "$(id -u):$(id -g)"
	assert_equal "$(stat -c %u:%g "$BATS_TEST_TMPDIR/vol/new")" "$(id -u):$(id -g)"
	run --separate-stderr "$GPURUN" --gpus void --userns keep-id -u 0 "$BUSYBOX_DIR" id -u
	assert_output 0
}

@test "--userns keep-id: HOME is the caller's home where the container has it, else the working directory" {
	skip_unless_user
	local home
	home=$(getent passwd "$(id -u)" | cut -d: -f6)
	mkdir "$BATS_TEST_TMPDIR/home"
	run --separate-stderr "$GPURUN" --gpus void --userns keep-id -v "$BATS_TEST_TMPDIR/home:$home" "$BUSYBOX_DIR" \
		sh -c 'echo "$HOME"'
	assert_success
	assert_output "$home"
	run --separate-stderr "$GPURUN" --gpus void --userns keep-id -w /tmp/work "$BUSYBOX_DIR" sh -c 'echo "$HOME"'
	assert_output /tmp/work
	# The plan says the same.
	run --separate-stderr "$GPURUN" --dry-run --gpus void --userns keep-id -v "$BATS_TEST_TMPDIR/home:$home" \
		"$BUSYBOX_DIR" true
	assert_output --partial " HOME=$home "
}

@test "--userns keep-id as root changes nothing: root has no user namespace, its ids are the host's" {
	skip_unless_root
	run --separate-stderr "$GPURUN" --gpus void --userns keep-id "$BUSYBOX_DIR" sh -c 'id -u; readlink /proc/self/ns/user'
	assert_success
	assert_output "0
$(readlink /proc/self/ns/user)"
}

@test "--userns with a mode other than keep-id is refused saying what gpurun does, 125" {
	run -125 --separate-stderr "$GPURUN" --userns host "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--userns host: gpurun chooses the user namespace itself (unprivileged, one mapping the caller to root; as root, none); --userns keep-id keeps the caller's uid and gid inside"
}

# ---- --device /dev/X ----------------------------------------------------------------

@test "--device /dev/zero:/dev/extra binds the host's device node there, beside --gpus" {
	run --separate-stderr "$GPURUN" --gpus void --device /dev/zero:/dev/extra "$BUSYBOX_DIR" \
		sh -c 'stat -c "%F %t:%T" /dev/extra; head -c 3 /dev/extra | od -An -tx1'
	assert_success
	assert_output $'character special file 1:5\n 00 00 00'
}

@test "--device /dev/X, docker's short form, binds it at the same path; :rwm is accepted" {
	[[ -c /dev/fuse && -c /dev/net/tun ]] || skip "no /dev/fuse or /dev/net/tun here"
	run --separate-stderr "$GPURUN" --device /dev/fuse --device /dev/net/tun:rwm "$BUSYBOX_DIR" \
		sh -c 'stat -c "%n %t:%T" /dev/fuse /dev/net/tun
			grep -E " /dev/(fuse|net/tun) " /proc/self/mounts | cut -d" " -f2,4 | cut -d, -f1-3'
	assert_success
	assert_output "$(stat -c '%n %t:%T' /dev/fuse /dev/net/tun)
/dev/fuse ro,nosuid,noexec
/dev/net/tun ro,nosuid,noexec"
}

@test "--device with permissions that would narrow access (:r) is refused: gpurun has no device cgroup, 125" {
	run -125 --separate-stderr "$GPURUN" --device /dev/zero:/dev/z:r "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--device '/dev/zero:/dev/z:r': permissions 'r': gpurun has no device cgroup to narrow access with; the node opens as its own mode allows (use rw or rwm, or leave them out)"
}

@test "--device of a path that is not a character device is refused, 125" {
	run -125 --separate-stderr "$GPURUN" --device /dev/pts "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--device /dev/pts: not a character device (gpurun binds character devices only, each named)"
	run -125 --separate-stderr "$GPURUN" --device /dev/gpurun-none "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--device /dev/gpurun-none: No such file or directory"
}

@test "--device /dev/X shows in the plan as a read-only bind of the node" {
	run --separate-stderr "$GPURUN" --dry-run --device /dev/zero:/dev/extra "$BUSYBOX_DIR" true
	assert_success
	assert_line "bind_over ro,nosuid,noexec /dev/zero dev/extra   # --device /dev/zero"
}

# ---- --gpus N ----------------------------------------------------------------------

@test "--gpus 2 typed at a terminal says in one line that it is GPU index 2, not docker's count" {
	tty_run "$GPURUN" --gpus 2 --driver-root /nonexistent "$BUSYBOX_DIR" true
	assert_line --index 0 "gpurun: warning: --gpus 2 is the GPU of index 2, not docker's count of 2 GPUs (that is --gpus count=2; --gpus device=2 says the index without this line)"
	assert_equal "$(grep -c warning <<<"$output")" 1
	tty_run "$GPURUN" --gpus device=2 --driver-root /nonexistent "$BUSYBOX_DIR" true
	refute_output --partial "warning"
}

@test "--gpus 2 in a script (stderr not a terminal) says it too, and --gpus 0 says nothing" {
	run --separate-stderr "$GPURUN" --gpus 2 --driver-root /nonexistent "$BUSYBOX_DIR" true
	assert_equal "$status" 125
	assert_equal "${stderr_lines[0]}" "gpurun: warning: --gpus 2 is the GPU of index 2, not docker's count of 2 GPUs (that is --gpus count=2; --gpus device=2 says the index without this line)"
	run --separate-stderr "$GPURUN" --gpus 0 --driver-root /nonexistent "$BUSYBOX_DIR" true
	assert_equal "$status" 125
	[[ $stderr != *warning* ]] || fail "$stderr"
}

# ---- -h ----------------------------------------------------------------------------

@test "-h NAME sets the host name, as docker's" {
	run --separate-stderr "$GPURUN" --gpus void -h box "$BUSYBOX_DIR" hostname
	assert_success
	assert_output box
}

@test "-h as the only argument is the help" {
	run --separate-stderr "$GPURUN" -h
	assert_success
	assert_output --partial "gpurun [run] [OPTIONS] IMAGE"
}

@test "-h followed by an option is an error naming both readings, 125" {
	run -125 --separate-stderr "$GPURUN" --gpus void -h --verbose "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "-h --verbose: -h takes a host name here (-h NAME, as docker's); for the help, -h must be the only argument"
}

# ---- what gpurun lacks ------------------------------------------------------------

@test "each docker option gpurun lacks is one line saying what instead, 125" {
	local args
	for args in "-p 8080:80" "-P" "-d" "--privileged" "--cap-add SYS_ADMIN" "--cap-drop ALL" \
		"--security-opt seccomp=unconfined" "--restart always" "--runtime nvidia" \
		"-m 1g" "--memory 1g" "--cpus 2" "--userns host" "--pid host" "--group-add video" \
		"--stop-signal SIGINT" "--stop-timeout 5" "--sysctl net.core.somaxconn=1024"; do
		# shellcheck disable=SC2086
		run -125 --separate-stderr "$GPURUN" $args "$BUSYBOX_DIR" true
		assert_gpurun_error 125 "${args%% *}"
		[[ "$stderr" != *"try gpurun --help"* ]] || fail "$args: no reason given: $stderr"
		[[ ${#stderr_lines[@]} -eq 1 ]] || fail "$args: more than one line: $stderr"
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "--group-add, --stop-signal and --sysctl each say what gpurun does instead" {
	run -125 --separate-stderr "$GPURUN" --group-add video "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--group-add: the command gets its user's groups from the image's /etc/group"
	run -125 --separate-stderr "$GPURUN" --stop-signal SIGINT "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--stop-signal: gpurun stops nothing by itself: the signals it gets"
	run -125 --separate-stderr "$GPURUN" --sysctl net.core.somaxconn=1024 "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "--sysctl: the container has the host's kernel settings"
}

@test "-p says a server in the container listens on the host's ports" {
	run -125 --separate-stderr "$GPURUN" -p 8080:80 "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "-p/--publish: gpurun has no port mapping: the network is the host's (the default)"
}

# ---- values -----------------------------------------------------------------------

@test "an option whose value took IMAGE, leaving none, is named as missing its value" {
	run -125 --separate-stderr "$GPURUN" --gpus "$BUSYBOX_DIR"
	assert_gpurun_error 125 "--gpus needs a value: it took '$BUSYBOX_DIR', and no IMAGE is left"
}

@test "an option that took IMAGE as its value is named in a hint (--gpus IMAGE true)" {
	run -125 --separate-stderr "$GPURUN" --gpus "$BUSYBOX_DIR" true
	assert_gpurun_error 125 "image true: No such file or directory"
	assert_stderr_partial "hint: --gpus took '$BUSYBOX_DIR' as its value: was its value left out?"
}

@test "a bare name that is no file is read as docker reads it, and its error names both readings" {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	cd "$BATS_TEST_TMPDIR"
	run -125 --separate-stderr "$GPURUN" --gpus void --pull never ubuntu:22.04 true
	assert_gpurun_error 125 "image ubuntu:22.04: no such file or directory, and as a registry image docker://docker.io/library/ubuntu:22.04: not in the cache, and --pull never does not ask the registry"
	assert_equal "${stderr_lines[1]}" "hint: IMAGE is a file when one has that name, else a registry reference as docker reads it"
}

@test "a missing name that is no reference either is a missing file, 125" {
	cd "$BATS_TEST_TMPDIR"
	run -125 --separate-stderr "$GPURUN" --gpus void ./Missing.tar true
	assert_gpurun_error 125 "image ./Missing.tar: No such file or directory"
}

@test "a missing image after a real option value gets no such hint" {
	run -125 --separate-stderr "$GPURUN" --gpus void /nonexistent.tar true
	assert_gpurun_error 125 "image /nonexistent.tar: No such file or directory"
	[[ "$stderr" != *hint:* ]] || fail "a hint: $stderr"
}

@test "--help says --gpus 2 is GPU index 2, and count=2 docker's count" {
	run --separate-stderr "$GPURUN" --help
	assert_success
	assert_output --partial "--gpus 2 is GPU index 2, where docker reads a"
	assert_output --partial "count=2 is docker's two GPUs"
}

@test "--help lists every docker option it refuses" {
	run --separate-stderr "$GPURUN" --help
	assert_success
	local o
	for o in -p/--publish -d/--detach --privileged --cap-add --security-opt --name --restart --cpus; do
		assert_output --partial "$o"
	done
}
