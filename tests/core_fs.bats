#!/usr/bin/env bats
# Images and the file system inside: every archive form, directory images
# left untouched, the throw-away root, /proc, /dev, /sys, /tmp, /run, the
# host's resolv.conf and hosts, the pivot.

load lib/common

setup_file() {
	require_gpurun
	common_images
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
}

# ---- image forms ------------------------------------------------------------

# image_runs IMAGE: the image's own /etc/hostname file comes out.
image_runs() {
	run --separate-stderr "$GPURUN" "$1" cat /etc/hostname
	assert_success
	assert_output "gpurun-test"
}

@test "a plain tar archive is an image" {
	image_runs "$(fixture busybox.tar)"
}

@test "a gzip-compressed tar archive is an image" {
	image_runs "$(fixture busybox.tar.gz)"
}

@test "an xz-compressed tar archive is an image" {
	image_runs "$(fixture busybox.tar.xz)"
}

@test "a zstd-compressed tar archive is an image" {
	image_runs "$(fixture busybox.tar.zst)"
}

@test "a bzip2-compressed tar archive is an image" {
	image_runs "$(fixture busybox.tar.bz2)"
}

@test "a directory is an image" {
	image_runs "$BUSYBOX_DIR"
}

@test "the compression is detected by content, not by name (gzip named x.tar)" {
	cp "$(fixture busybox.tar.gz)" "$BATS_TEST_TMPDIR/x.tar"
	image_runs "$BATS_TEST_TMPDIR/x.tar"
}

@test "an archive without a suffix is detected by content (zstd named image)" {
	cp "$(fixture busybox.tar.zst)" "$BATS_TEST_TMPDIR/image"
	image_runs "$BATS_TEST_TMPDIR/image"
}

@test "a glibc image runs dynamically linked programs" {
	run --separate-stderr "$GPURUN" "$(fixture glibc.tar.gz)" /usr/bin/probe-dyn ppid
	assert_success
	assert_output "1"
}

# ---- the root is the run's own ------------------------------------------------

@test "a directory image is never modified by what runs inside" {
	local img before after
	img=$(image_copy busybox)
	before=$(cd "$img" && find . -printf '%p %y %m %s %l\n' | LC_ALL=C sort && cat etc/passwd)
	run --separate-stderr "$GPURUN" "$img" /bin/sh -c \
		'echo changed >/etc/passwd && rm /bin/ls && mkdir /newdir && touch /newfile && chmod 0700 /tmp && echo wrote'
	assert_success
	assert_output "wrote"
	after=$(cd "$img" && find . -printf '%p %y %m %s %l\n' | LC_ALL=C sort && cat etc/passwd)
	assert_equal "$after" "$before"
}

@test "writes inside a tar image are gone with the run" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_TAR" /bin/sh -c 'echo x >/left-behind && cat /left-behind'
	assert_success
	assert_output "x"
	run --separate-stderr "$GPURUN" "$BUSYBOX_TAR" /bin/ls /left-behind
	assert_failure
}

@test "with --read-only writing to the root fails with Read-only file system" {
	run --separate-stderr "$GPURUN" --read-only "$BUSYBOX_DIR" /bin/touch /x
	assert_failure
	assert_stderr_partial "Read-only file system"
}

@test "with --read-only /tmp is still a writable tmpfs" {
	run --separate-stderr "$GPURUN" --read-only "$BUSYBOX_TGZ" /bin/sh -c 'echo ok >/tmp/x && cat /tmp/x'
	assert_success
	assert_output "ok"
}

@test "the per-run root is gone after the run (no temp dirs, no mounts left)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_TGZ" /bin/sh -c 'echo data >/file; ls /file'
	assert_success
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/true
	assert_success
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "the root is mounted nodev" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_TGZ" probe mountinfo-has /
	assert_success
	assert_output --regexp '^/ opts=([^ ]*,)?nodev(,| )'
}

# A tar with a character and a block device and a setuid-root binary,
# written by python's tarfile so that no privilege is needed to make it.
special_tar() {
	local out=$BATS_TEST_TMPDIR/special.tar
	cp "$BUSYBOX_TAR" "$out"
	/usr/bin/python3 - "$out" <<-'PY'
		import sys, tarfile, io
		with tarfile.open(sys.argv[1], "a") as t:
		    for name, kind, major, minor in (("evil-mem", tarfile.CHRTYPE, 1, 1),
		                                     ("evil-sda", tarfile.BLKTYPE, 8, 0)):
		        i = tarfile.TarInfo(name); i.type = kind; i.devmajor = major; i.devminor = minor
		        i.mode = 0o666; t.addfile(i)
		    data = open("/bin/true", "rb").read()
		    i = tarfile.TarInfo("suid-true"); i.size = len(data); i.mode = 0o4755; i.uid = i.gid = 0
		    t.addfile(i, io.BytesIO(data))
	PY
	echo "$out"
}

@test "device nodes in an archive are not created" {
	local tar
	tar=$(special_tar)
	run --separate-stderr "$GPURUN" "$tar" /bin/sh -c 'probe stat /evil-mem; probe stat /evil-sda; echo done'
	assert_line "done"
	refute_output --partial "type=chr"
	refute_output --partial "type=blk"
}

@test "setuid bits from an archive are cleared for an unprivileged caller" {
	skip_unless_user "an unprivileged caller's archive must not yield setuid files"
	local tar
	tar=$(special_tar)
	run --separate-stderr "$GPURUN" "$tar" probe stat /suid-true
	assert_success
	assert_output --regexp '^type=reg mode=0755 '
}

# ---- /proc ------------------------------------------------------------------

@test "/proc is a fresh procfs showing only the container's processes" {
	# The loop is a shell builtin: no process is forked to list /proc.
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'for p in /proc/[0-9]*; do echo "${p#/proc/}"; done'
	assert_success
	assert_output $'1\n2'
}

@test "/proc is mounted as proc" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe mountinfo-has /proc
	assert_success
	assert_output --partial "fstype=proc "
}

# ---- /dev ---------------------------------------------------------------------

@test "/dev holds exactly the minimal set of entries" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/ls -A /dev </dev/null
	assert_success
	assert_output "$(printf '%s\n' fd full null ptmx pts random shm stderr stdin stdout tty urandom zero)"
}

@test "/dev is a tmpfs, not the host's /dev" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe mountinfo-has /dev
	assert_success
	assert_output --partial "fstype=tmpfs "
}

@test "no host device is reachable in /dev (sda, vda, kmsg, mem, port, nvidia0)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c \
		'for d in sda vda nvme0n1 kmsg mem kcore port nvidia0 nvidiactl; do
			if [ -e /dev/$d ]; then echo "RISK /dev/$d"; else echo "SAFE /dev/$d"; fi
		done'
	assert_success
	refute_output --partial RISK
	assert_line "SAFE /dev/kmsg"
}

@test "the /dev nodes are the host's character devices" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c \
		'for d in null zero full random urandom tty; do echo "$d $(probe stat /dev/$d)"; done'
	assert_success
	assert_line --regexp '^null type=chr mode=0666 rdev=1:3 '
	assert_line --regexp '^zero type=chr mode=0666 rdev=1:5 '
	assert_line --regexp '^full type=chr mode=0666 rdev=1:7 '
	assert_line --regexp '^random type=chr mode=0666 rdev=1:8 '
	assert_line --regexp '^urandom type=chr mode=0666 rdev=1:9 '
	assert_line --regexp '^tty type=chr mode=0666 rdev=5:0 '
}

@test "/dev/null, /dev/zero and /dev/urandom work" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c \
		'echo x >/dev/null && head -c 4 /dev/zero | od -An -tx1 && head -c 8 /dev/urandom | wc -c'
	assert_success
	assert_output --regexp '^ *00 00 00 00'$'\n'' *8$'
}

@test "/dev/pts is a new devpts instance and /dev/ptmx points into it" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'probe mountinfo-has /dev/pts; readlink /dev/ptmx'
	assert_success
	assert_line --index 0 --partial "fstype=devpts "
	assert_line --index 1 "pts/ptmx"
}

@test "/dev/shm is a writable tmpfs" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'probe mountinfo-has /dev/shm && echo x >/dev/shm/x && cat /dev/shm/x'
	assert_success
	assert_line --index 0 --partial "fstype=tmpfs "
	assert_line --index 1 "x"
}

@test "/dev/fd, stdin, stdout and stderr link to /proc/self/fd" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'for l in fd stdin stdout stderr; do readlink /dev/$l; done'
	assert_success
	assert_output $'/proc/self/fd\n/proc/self/fd/0\n/proc/self/fd/1\n/proc/self/fd/2'
}

# ---- /sys, /tmp, /run ------------------------------------------------------

@test "/sys is mounted read-only" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe mountinfo-has /sys
	assert_success
	assert_output --regexp '^/sys opts=ro(,| )'
}

@test "writing to /sys fails" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe write /sys/kernel/gpurun-test
	assert_success
	refute_output "write: ok"
}

@test "/tmp is a tmpfs" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_TGZ" probe mountinfo-has /tmp
	assert_success
	assert_output --partial "fstype=tmpfs "
}

@test "/tmp is writable by every user (mode 1777)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_TGZ" probe stat /tmp
	assert_success
	assert_output --regexp '^type=dir mode=1777 '
}

@test "/run is a tmpfs" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_TGZ" probe mountinfo-has /run
	assert_success
	assert_output --partial "fstype=tmpfs "
}

# ---- the host's network files ---------------------------------------------------

@test "/etc/resolv.conf is the host's when the network is shared" {
	[[ -r /etc/resolv.conf ]] || skip "the host has no /etc/resolv.conf"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" cat /etc/resolv.conf
	assert_success
	assert_output "$(cat /etc/resolv.conf)"
}

@test "/etc/hosts is the host's when the network is shared" {
	[[ -r /etc/hosts ]] || skip "the host has no /etc/hosts"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" cat /etc/hosts
	assert_success
	assert_output "$(cat /etc/hosts)"
}

@test "dangling resolv.conf and hosts symlinks in the image get the host's files, nothing on the host" {
	[[ -r /etc/resolv.conf && -r /etc/hosts ]] || skip "the host lacks /etc/resolv.conf or /etc/hosts"
	local img target=$BATS_TEST_TMPDIR/dangling
	img=$(image_copy busybox)
	ln -s "$target/resolv.conf" "$img/etc/resolv.conf"
	ln -s "../run/systemd/resolve/stub-resolv.conf" "$img/etc/hosts"
	run --separate-stderr "$GPURUN" "$img" /bin/sh -c 'cat /etc/resolv.conf; echo ---; cat /etc/hosts'
	assert_success
	assert_output "$(cat /etc/resolv.conf; echo ---; cat /etc/hosts)"
	assert_not_exist "$target"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

# ---- the pivot ------------------------------------------------------------------

@test "the host's files are unreachable: a host temp file is not there" {
	echo host >"$BATS_TEST_TMPDIR/host-marker"
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c \
		"if [ -e '$BATS_TEST_TMPDIR/host-marker' ]; then echo RISK; else echo SAFE; fi"
	assert_success
	assert_output "SAFE"
}

@test "pid 1's root is the container root too (/proc/1/root is / or unreadable)" {
	# gpurun's init may be non-dumpable, which hides its /proc entries from
	# the command: that is as safe as a root of "/".
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" /bin/sh -c 'readlink /proc/1/root 2>/dev/null || echo unreadable'
	assert_success
	assert_output --regexp '^(/|unreadable)$'
}

@test "the working directory starts at /" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe cwd
	assert_success
	assert_output "/"
}

@test "every mount point inside is a container path (no old root, no host paths)" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" cat /proc/self/mountinfo
	assert_success
	local mp bad=""
	while read -r _ _ _ _ mp _; do
		[[ "$mp" =~ ^/$|^/(proc|dev|sys)(/|$)|^/(tmp|run)$|^/etc/(resolv\.conf|hosts)$ ]] ||
			bad+="$mp "
	done <<<"$output"
	[[ -z "$bad" ]] || fail "unexpected mount points inside: $bad"
}

@test "chroot cannot escape the container root" {
	run --separate-stderr "$GPURUN" "$BUSYBOX_DIR" probe chroot-escape
	assert_success
	assert_output --partial "SAFE chroot-escape"
}

# Root of a user namespace that maps only itself (inside a rootless
# container, or `unshare -r`) cannot chown to the image's uid 1000: the
# archive unpacks as an unprivileged launch's does, owners cleared.
@test "as root of a single-id user namespace, an archive with other owners still launches" {
	run --separate-stderr unshare -Urm "$GPURUN" --no-cache "$BUSYBOX_TAR" stat -c '%u' /home/alice
	assert_success
	assert_output "0"
	run --separate-stderr unshare -Urm "$GPURUN" --dry-run --no-cache "$BUSYBOX_TAR" true
	assert_success
	assert_output --partial "--no-same-owner"
}

@test "real root keeps the archive's owners" {
	skip_unless_root
	run --separate-stderr "$GPURUN" --no-cache "$BUSYBOX_TAR" stat -c '%u' /home/alice
	assert_success
	assert_output "1000"
}
