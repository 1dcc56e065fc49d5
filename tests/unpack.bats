#!/usr/bin/env bats
# Unpacking a tar image safely (rootfs/unpack/unpack.c, rootfs/unpack/probe.c,
# rootfs/image/user.c).  Each hostile archive is built at
# test time with python3's tarfile, so the suite documents the attack it
# refuses.  A refusal is one line "gpurun: unpack IMAGE: entry 'NAME':
# PROBLEM" (or "gpurun: image IMAGE: PROBLEM" when the file is no tar at all),
# exit 125, and nothing written outside the container's root: escape targets
# are real host paths under $BATS_TEST_TMPDIR, checked after each run.

load 'lib/common'

setup_file() {
	require_gpurun
	common_images
}

setup() {
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	IMG=$BATS_TEST_TMPDIR/img.tar
	VICTIM=$BATS_TEST_TMPDIR/victim
	VICTIM_DIR=$BATS_TEST_TMPDIR/victimdir
	mkdir -p "$VICTIM_DIR"
	echo original >"$VICTIM"
	chmod 0666 "$VICTIM"
	chmod 0777 "$VICTIM_DIR" "$BATS_TEST_TMPDIR"
}

teardown() {
	chmod -R u+rwX "$BATS_TEST_TMPDIR" 2>/dev/null || true
}

# flip_byte FILE BACK: every bit of the byte BACK bytes before FILE's end
# inverted, so that it surely changes (a checksum byte set to a fixed
# value already holds that value in one run of 256).
flip_byte() {
	local off b
	off=$(($(stat -c %s "$1") - $2))
	b=$(od -An -tu1 -j "$off" -N1 "$1" | tr -d ' ')
	printf "\\$(printf '%03o' $((b ^ 255)))" | dd of="$1" bs=1 seek="$off" conv=notrunc status=none
}

# refused IMAGE MESSAGE: gpurun fails with exactly "gpurun: MESSAGE", 125,
# and the host is as it was.
refused() {
	run --separate-stderr "$GPURUN" "$1" /bin/true </dev/null
	assert_gpurun_error 125
	assert_equal "${stderr_lines[0]}" "gpurun: $2"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

victim_untouched() {
	assert_equal "$(cat "$VICTIM")" original
	assert_equal "$(stat -c %h "$VICTIM")" 1
	assert_equal "$(ls -A "$VICTIM_DIR")" ""
}

# ---- path escapes ---------------------------------------------------------------

@test "an entry '../evil' is refused and named" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|../evil|x"
	refused "$IMG" "unpack $IMG: entry '../evil': path contains '..'"
}

@test "an entry with '..' in the middle is refused" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|etc/" "f|etc/../../evil|x"
	refused "$IMG" "unpack $IMG: entry 'etc/../../evil': path contains '..'"
}

@test "an absolute entry is refused and nothing appears at that host path" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|$BATS_TEST_TMPDIR/abs-evil|x"
	refused "$IMG" "unpack $IMG: entry '$BATS_TEST_TMPDIR/abs-evil': absolute path"
	[[ ! -e "$BATS_TEST_TMPDIR/abs-evil" ]]
}

@test "a write through a symlink to a host directory is refused; the directory stays empty" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "s|link|$VICTIM_DIR" "f|link/pwned|x"
	refused "$IMG" "unpack $IMG: entry 'link/pwned': path passes through a symlink"
	victim_untouched
}

@test "a write through a relative symlink that climbs out is refused" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|a/" "s|a/up|../../../../../../../../..$VICTIM_DIR" \
		"f|a/up/pwned|x"
	refused "$IMG" "unpack $IMG: entry 'a/up/pwned': path passes through a symlink"
	victim_untouched
}

@test "a symlink replaced by a directory entry of the same name does not redirect later entries" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "s|d|$VICTIM_DIR" "d|d/" "f|d/file|inside"
	run "$GPURUN" "$IMG" /bin/cat /d/file
	assert_success
	assert_output inside
	victim_untouched
}

# ---- hard links -------------------------------------------------------------------

@test "a hard link to an absolute host path is refused" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "h|etc/shadow-link|$VICTIM"
	refused "$IMG" "unpack $IMG: entry 'etc/shadow-link': hard link target '$VICTIM': absolute path"
	victim_untouched
}

@test "a hard link with '..' in its target is refused" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "h|h|../../victim"
	refused "$IMG" "unpack $IMG: entry 'h': hard link target '../../victim': path contains '..'"
	victim_untouched
}

@test "a hard link through a symlink to a host file is refused" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "s|s|$BATS_TEST_TMPDIR" "h|h|s/victim"
	refused "$IMG" "unpack $IMG: entry 'h': hard link target 's/victim': path passes through a symlink"
	victim_untouched
}

@test "a pax hard link carrying data cannot overwrite a host file (CVE-2016-5418)" {
	mktar "$IMG" --pax --base "$BUSYBOX_TAR" "s|s|$BATS_TEST_TMPDIR" "h|h|s/victim|pwned"
	refused "$IMG" "unpack $IMG: entry 'h': hard link target 's/victim': path passes through a symlink"
	victim_untouched
}

@test "a hard link inside the image is made as a hard link" {
	mktar "$IMG" --base "$BUSYBOX_TAR" $'f|etc/a|same\n' "h|etc/b|etc/a"
	run "$GPURUN" "$IMG" /bin/sh -c 'cat /etc/b; [ /etc/a -ef /etc/b ] && echo linked'
	assert_success
	assert_output $'same\nlinked'
}

# ---- a later entry replaces an earlier one (tar's rule) ----------------------------

@test "a later entry of the same name replaces the earlier file" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|etc/twice|one" "f|etc/twice|two"
	run "$GPURUN" "$IMG" /bin/cat /etc/twice
	assert_success
	assert_output two
}

@test "a file replaces an earlier symlink of its name instead of writing through it" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "s|etc/victim|$VICTIM" "f|etc/victim|inside"
	run "$GPURUN" "$IMG" /bin/sh -c '[ -L /etc/victim ] && echo link; cat /etc/victim'
	assert_success
	assert_output inside
	victim_untouched
}

@test "a directory that a symlink replaced is not written through by later entries" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|d2/sub/" "s|d2/sub|$VICTIM_DIR" "f|d2/sub/pwned|x"
	refused "$IMG" "unpack $IMG: entry 'd2/sub/pwned': path passes through a symlink"
	victim_untouched
}

@test "an entry below a regular file is refused and named" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|etc/plain|x" "f|etc/plain/under|y"
	refused "$IMG" "unpack $IMG: entry 'etc/plain/under': path passes through something that is not a directory"
}

@test "a hard link to an entry the archive has not made is refused and named" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "h|etc/h|etc/missing"
	refused "$IMG" "unpack $IMG: entry 'etc/h': hard link to 'etc/missing': No such file or directory"
}

@test "directories missing from the archive are made, 0755" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|deep/er/file|x"
	run "$GPURUN" "$IMG" /bin/sh -c 'stat -c %a /deep /deep/er; cat /deep/er/file'
	assert_success
	assert_output $'755\n755\nx'
}

@test "a directory's mode and time are set after its children are written" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|etc/conf.d/|750" "f|etc/conf.d/a|x" "s|etc/conf.d/b|a"
	run "$GPURUN" "$IMG" /bin/sh -c 'stat -c "%a %Y" /etc/conf.d; stat -c "%Y" /etc/conf.d/b'
	assert_success
	assert_output $'750 1700000000\n1700000000'
}

@test "a setgid directory keeps its mode in a root run with --no-cache" {
	skip_unless_root
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|var/mail/|2775" "f|var/mail/x|y"
	run "$GPURUN" --no-cache "$IMG" /bin/stat -c %a /var/mail
	assert_success
	assert_output 2775
}

# ---- entry types and metadata ------------------------------------------------------

@test "device nodes and FIFOs are not created, and gpurun warns with their count" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|opt/" "c|opt/mem" "b|opt/disk" "p|etc/initctl"
	run --separate-stderr "$GPURUN" "$IMG" /bin/sh -c 'ls -A /opt; [ -e /etc/initctl ] || echo "no initctl"'
	assert_success
	assert_output "no initctl"
	assert_equal "${#stderr_lines[@]}" 1
	[[ "${stderr_lines[0]}" == "gpurun: warning: "*"3 device, fifo or socket entries not created" ]] ||
		fail "no warning with the count: $stderr"
}

@test "everything below dev/ in the image is skipped silently; /dev is gpurun's own" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "c|dev/sda" "f|dev/null|image data" "f|dev/planted|x" \
		"s|dev/shm|/etc"
	run --separate-stderr "$GPURUN" "$IMG" /bin/sh -c \
		'probe stat /dev/null; ls /dev/planted /dev/sda 2>&1; probe stat /dev/shm'
	assert_equal "$stderr" ""
	assert_line --index 0 --regexp '^type=chr mode=0666 rdev=1:3 '
	assert_line --index 1 "ls: /dev/planted: No such file or directory"
	assert_line --index 2 "ls: /dev/sda: No such file or directory"
	assert_line --index 3 --regexp '^type=dir '
}

@test "setuid and setgid bits are cleared in an unprivileged run" {
	skip_unless_user "root runs keep the bits (the root is mounted nosuid)"
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|bin/su|x|4755" "f|bin/wall|x|2755" "d|t/|1777"
	run "$GPURUN" "$IMG" /bin/sh -c 'stat -c %a /bin/su /bin/wall /t'
	assert_success
	assert_output $'755\n755\n1777'
}

@test "setuid bits are kept in a root run with --no-cache (the root file system is nosuid)" {
	skip_unless_root
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|bin/su|x|4755" "d|t/|1777"
	run "$GPURUN" --no-cache "$IMG" /bin/sh -c 'stat -c %a /bin/su /t'
	assert_success
	assert_output $'4755\n1777'
}

@test "the cache never keeps a setuid or setgid bit, even for root (it is on a host disk)" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|bin/su|x|4755" "f|bin/sg|x|2755" "d|t/|1777"
	run "$GPURUN" "$IMG" /bin/sh -c 'stat -c %a /bin/su /bin/sg /t'
	assert_success
	assert_output $'755\n755\n1777'
	run find "$GPURUN_CACHE/layers" -perm /6000
	assert_success
	assert_output ""
}

@test "root keeps the archive's owners also in a cache under a set-group-ID directory" {
	skip_unless_root
	mkdir -p "$BATS_TEST_TMPDIR/sg"
	chgrp 4242 "$BATS_TEST_TMPDIR/sg"
	chmod 2775 "$BATS_TEST_TMPDIR/sg"
	# No './' entry: the layer's top directory keeps the group it inherited.
	local src=$BATS_TEST_TMPDIR/src
	mkdir -p "$src"
	tar -C "$src" -xf "$BUSYBOX_TAR"
	mkdir "$src/srv"
	echo x >"$src/srv/f"
	ln -s f "$src/srv/l"
	(cd "$src" && tar --numeric-owner --owner=0 --group=0 -cf "$IMG" -- *)
	GPURUN_CACHE=$BATS_TEST_TMPDIR/sg/cache run "$GPURUN" "$IMG" /bin/stat -c '%u:%g' /srv /srv/f /srv/l
	assert_success
	assert_output $'0:0\n0:0\n0:0'
}

@test "a 0555 directory still receives its children and becomes u+rwx" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|ro/|555" "f|ro/child|kid|444"
	run "$GPURUN" "$IMG" /bin/sh -c 'stat -c %a /ro /ro/child; cat /ro/child'
	assert_success
	assert_output $'755\n444\nkid'
}

@test "file modes and modification times are kept" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|etc/secret|s|640" "d|var/empty/|711"
	run "$GPURUN" "$IMG" /bin/sh -c 'stat -c "%a %Y" /etc/secret /var/empty'
	assert_success
	assert_output $'640 1700000000\n711 1700000000'
}

@test "files of 64 KiB and more (sized before their data is written) arrive whole, in a --no-cache run and in the cache" {
	python3 - "$BUSYBOX_TAR" "$IMG" "$BATS_TEST_TMPDIR" <<-'EOF'
		import io, random, shutil, sys, tarfile
		base, out, d = sys.argv[1:]
		shutil.copyfile(base, out)
		rnd = random.Random(7)
		files = {'big/a': rnd.randbytes(5 * 1024 * 1024 + 123), 'big/b': rnd.randbytes(4 * 1024 * 1024),
		         'big/d': rnd.randbytes(64 * 1024), 'big/e': rnd.randbytes(2 * 1024 * 1024 - 4097),
		         'big/c': b'after the big ones'}
		with tarfile.open(out, 'a', format=tarfile.GNU_FORMAT) as tf:
		    for name, data in files.items():
		        t = tarfile.TarInfo(name)
		        t.size, t.mode, t.mtime = len(data), 0o644, 1700000000
		        tf.addfile(t, io.BytesIO(data))
		        open(d + '/' + name.replace('/', '_'), 'wb').write(data)
	EOF
	local want
	want=$(cd "$BATS_TEST_TMPDIR" && md5sum big_a big_b big_c big_d big_e | cut -d' ' -f1)
	for nc in --no-cache ""; do
		run --separate-stderr "$GPURUN" $nc "$IMG" /bin/sh -c \
			'md5sum /big/a /big/b /big/c /big/d /big/e | cut -d" " -f1; stat -c %s /big/a /big/b /big/d /big/e'
		assert_success
		assert_output "$want"$'\n5243003\n4194304\n65536\n2093055'
	done
}

@test "an archive cut short while it is unpacked: one line naming it, exit 125, nothing left (gzip, zstd, tar)" {
	# The decoders and the plain tar's reader read the file through a
	# mapping (rootfs/unpack/source.c): cut short under it, a read would otherwise
	# be a SIGBUS that kills the launch without a word, or zeros that read
	# as a quiet end of the archive.  tests/lib/cut_on_read.c cuts the file
	# to 8 MiB when the launch asks for the 4th MiB of its mapping, or at
	# once after mapping it: the same point in every run, not a guessed delay.
	# (Into the cache a plain tar is read with read(), which a cut only
	# shortens: that is a truncated archive, tested elsewhere.)
	# Random data does not compress: level 0 writes stored blocks at once.
	python3 - "$BUSYBOX_TAR" "$BATS_TEST_TMPDIR/big.tar" <<-'EOF'
		import gzip, io, random, shutil, sys, tarfile
		shutil.copyfile(sys.argv[1], sys.argv[2])
		with tarfile.open(sys.argv[2], 'a', format=tarfile.GNU_FORMAT) as tf:
		    t = tarfile.TarInfo('big/random'); t.size = 24 << 20
		    tf.addfile(t, io.BytesIO(random.Random(3).randbytes(t.size)))
		with open(sys.argv[2], 'rb') as f, gzip.open(sys.argv[2] + '.gz', 'wb', compresslevel=0) as z:
		    shutil.copyfileobj(f, z, 1 << 20)
	EOF
	zstd -1 -q -c "$BATS_TEST_TMPDIR/big.tar" >"$BATS_TEST_TMPDIR/big.tar.zst"
	local shim=$BATS_TEST_TMPDIR/cut_on_read.so src img after nc
	gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$shim" "$TESTS_DIR/lib/cut_on_read.c"
	for src in "$BATS_TEST_TMPDIR/big.tar.gz" "$BATS_TEST_TMPDIR/big.tar.zst" "$BATS_TEST_TMPDIR/big.tar"; do
		img=$BATS_TEST_TMPDIR/cut.${src##*.}
		for after in 4 0; do
			for nc in --no-cache ""; do
				[[ $img == *.tar && -z $nc ]] && continue
				cp "$src" "$img"
				run --separate-stderr env LD_PRELOAD="$shim" CUT_ON_READ_PATH="$img" CUT_ON_READ_SIZE=$((8 << 20)) \
					CUT_ON_READ_AFTER=$after "$GPURUN" $nc "$img" /bin/true
				assert_gpurun_error 125
				assert_equal "$stderr" "gpurun: unpack $img: the file was cut short while it was read"
				assert_equal "$(stat -c %s "$img")" $((8 << 20))
			done
		done
	done
	run "$GPURUN" cache ls
	assert_success
	refute_output --partial /cut.
	assert_cache_consistent
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "pax UTF-8 names are unpacked as UTF-8" {
	mktar "$IMG" --pax --base "$BUSYBOX_TAR" "d|café/" "f|café/über|umlaut"
	run "$GPURUN" "$IMG" /bin/cat /café/über
	assert_success
	assert_output umlaut
}

@test "a leading './' and the './' entry itself are accepted" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "d|./|755" "d|./opt/" "f|./opt/x|dot"
	run "$GPURUN" "$IMG" /bin/cat /opt/x
	assert_success
	assert_output dot
}

@test "a path longer than 4096 bytes is refused" {
	local long
	long=$(printf 'a/%.0s' {1..2100})x
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|$long|x"
	run --separate-stderr "$GPURUN" "$IMG" /bin/true
	assert_gpurun_error 125 "unpack $IMG: entry 'a/a/a/" "...': path longer than 4096 bytes"
}

@test "more than 2,000,000 entries are refused (takes a few seconds)" {
	# 2,000,001 copies of one header below dev/ (skipped, so nothing is
	# created): 1 GB of tar that gzip squeezes to a few MB.  The 5 MB of
	# 10,000 headers is compressed once and written as 200 gzip members
	# (one stream to a reader, as gzip -d reads it): compressing the 1 GB
	# took 2.4 CPU s.
	python3 - "$BATS_TEST_TMPDIR/many.tar.gz" <<-'EOF'
		import gzip, sys, tarfile
		hdr = tarfile.TarInfo('dev/x').tobuf(tarfile.GNU_FORMAT)
		member = gzip.compress(hdr * 10000, compresslevel=1)
		with open(sys.argv[1], 'wb') as f:
		    for _ in range(200):
		        f.write(member)
		    f.write(gzip.compress(hdr + b'\0' * 1024))
	EOF
	refused "$BATS_TEST_TMPDIR/many.tar.gz" "unpack $BATS_TEST_TMPDIR/many.tar.gz: more than 2000000 entries"
}

# ---- formats, detected by content ------------------------------------------------------

@test "gzip, xz, zstd and bzip2 images are recognised by content, whatever their name" {
	local c
	for c in gz xz zst bz2; do
		cp "$(fixture "busybox.tar.$c")" "$BATS_TEST_TMPDIR/image-$c.bin"
		run "$GPURUN" "$BATS_TEST_TMPDIR/image-$c.bin" /bin/echo "ok $c"
		assert_success
		assert_output "ok $c"
	done
}

# gzip is inflated by ISA-L when libisal is installed, by libarchive's zlib
# filter otherwise; both must read a stream the way gzip(1) writes it.
@test "a .tar.gz made of several gzip members unpacks as one tar" {
	local half=$(($(stat -c %s "$BUSYBOX_TAR") / 2)) tgz=$BATS_TEST_TMPDIR/multi.tar.gz
	{
		head -c "$half" "$BUSYBOX_TAR" | gzip -c
		tail -c +$((half + 1)) "$BUSYBOX_TAR" | gzip -c
	} >"$tgz"
	run "$GPURUN" "$tgz" /bin/sh -c 'ls /bin/busybox /bin/probe'
	assert_success
	assert_output "$(printf '/bin/busybox\n/bin/probe')"
}

@test "bytes after the last gzip member are ignored, as gzip -d and libarchive do" {
	local tgz=$BATS_TEST_TMPDIR/padded.tar.gz
	{
		gzip -c "$BUSYBOX_TAR"
		head -c 5000 /dev/zero
	} >"$tgz"
	run "$GPURUN" "$tgz" /bin/echo ok
	assert_success
	assert_output ok
}

# ISA-L inflates raw deflate; the extracting thread checks each member's
# CRC-32 on the blocks that member filled, the decompressor its length.
# Stricter than libarchive's zlib filter, which does not check the trailer.
@test "with ISA-L, a .tar.gz whose CRC-32 does not match is refused, also on the first of two members, with and without the cache" {
	local tgz=$BATS_TEST_TMPDIR/img.tar.gz first=$BATS_TEST_TMPDIR/first.gz
	local msg="decompression failed: gzip: checksum mismatch (ISA-L error -6)"
	ldconfig -p | grep -q 'libisal\.so\.2 ' || skip "libisal.so.2 is not installed (libisal2)"
	gzip -c "$BUSYBOX_TAR" >"$tgz"
	# The trailer: CRC-32, then the length, both little-endian.
	flip_byte "$tgz" 8
	refused "$tgz" "unpack $tgz: $msg"
	run --separate-stderr "$GPURUN" --no-cache "$tgz" /bin/true
	assert_gpurun_error 125 "unpack $tgz: $msg"

	head -c 1048576 "$BUSYBOX_TAR" | gzip -c >"$first"
	flip_byte "$first" 8
	{ cat "$first"; tail -c +1048577 "$BUSYBOX_TAR" | gzip -c; } >"$tgz"
	refused "$tgz" "unpack $tgz: $msg"
}

@test "with ISA-L, a .tar.gz whose length field does not match its data is refused" {
	local tgz=$BATS_TEST_TMPDIR/img.tar.gz
	ldconfig -p | grep -q 'libisal\.so\.2 ' || skip "libisal.so.2 is not installed (libisal2)"
	gzip -c "$BUSYBOX_TAR" >"$tgz"
	flip_byte "$tgz" 4
	run --separate-stderr "$GPURUN" --no-cache "$tgz" /bin/true
	assert_gpurun_error 125 "unpack $tgz: decompression failed: gzip: length mismatch (ISA-L error -6)"
}

# The probe inflates only the first 8 KiB of a .tar.gz to find the first
# entry (rootfs/unpack/probe.c); where that is not enough, the full look decides.
@test "a .tar.gz whose first gzip member holds less than one tar header still unpacks" {
	local tgz=$BATS_TEST_TMPDIR/short-first.tar.gz
	{
		head -c 100 "$BUSYBOX_TAR" | gzip -c
		tail -c +101 "$BUSYBOX_TAR" | gzip -c
	} >"$tgz"
	run "$GPURUN" --no-cache "$tgz" /bin/echo ok
	assert_success
	assert_output ok
}

@test "a .tar.gz whose first entry has a pax header longer than the probe's look is still read" {
	# A root file system, and an OCI layout whose first entry is found
	# only past the first 8 KiB of the stream.
	python3 - "$BUSYBOX_TAR" "$BATS_TEST_TMPDIR/rootfs.tar" "$BATS_TEST_TMPDIR/layout.tar" <<-'EOF'
		import io, sys, tarfile
		long = {'comment': 'x' * 20000}
		with tarfile.open(sys.argv[1]) as src, tarfile.open(sys.argv[2], 'w', format=tarfile.PAX_FORMAT) as out:
		    t = tarfile.TarInfo('./')
		    t.type, t.mode, t.pax_headers = tarfile.DIRTYPE, 0o755, long
		    out.addfile(t)
		    for m in src.getmembers():
		        out.addfile(m, src.extractfile(m) if m.isfile() else None)
		with tarfile.open(sys.argv[3], 'w', format=tarfile.PAX_FORMAT) as out:
		    data = b'{"imageLayoutVersion": "1.0.0"}'
		    t = tarfile.TarInfo('oci-layout')
		    t.size, t.pax_headers = len(data), long
		    out.addfile(t, io.BytesIO(data))
	EOF
	gzip "$BATS_TEST_TMPDIR/rootfs.tar" "$BATS_TEST_TMPDIR/layout.tar"
	run "$GPURUN" --no-cache "$BATS_TEST_TMPDIR/rootfs.tar.gz" /bin/echo ok
	assert_success
	assert_output ok
	run --separate-stderr "$GPURUN" --no-cache "$BATS_TEST_TMPDIR/layout.tar.gz" /bin/true
	assert_gpurun_error 125 "image $BATS_TEST_TMPDIR/layout.tar.gz: no member 'index.json'"
}

@test "a refusal stops the decompressor that waits for room in its full blocks (gzip, zstd)" {
	# 4,000 one-byte files (4 MB of tar for the extracting side to work
	# through while the decompressor runs ahead and fills every block), then
	# '../evil', then 64 MiB of zeros: at the refusal the decompressor
	# waits for room, and only the reader's going away may end that wait.
	local tar=$BATS_TEST_TMPDIR/refuse.tar
	python3 - "$tar" <<-'EOF'
		import io, sys, tarfile
		class Zeros(io.RawIOBase):
		    def __init__(self, n): self.left = n
		    def readable(self): return True
		    def readinto(self, b):
		        n = min(len(b), self.left); b[:n] = bytes(n); self.left -= n; return n
		with tarfile.open(sys.argv[1], 'w', format=tarfile.GNU_FORMAT) as tf:
		    for i in range(4000):
		        t = tarfile.TarInfo('f%d' % i); t.size = 1
		        tf.addfile(t, io.BytesIO(b'x'))
		    t = tarfile.TarInfo('../evil'); t.size = 1
		    tf.addfile(t, io.BytesIO(b'x'))
		    t = tarfile.TarInfo('zeros'); t.size = 64 << 20
		    tf.addfile(t, Zeros(t.size))
	EOF
	gzip -1 -c "$tar" >"$tar.gz"
	zstd -1 -q -c "$tar" >"$tar.zst"
	rm "$tar"
	for img in "$tar.gz" "$tar.zst"; do
		run --separate-stderr timeout -s KILL 60 "$GPURUN" --no-cache "$img" /bin/true
		assert_gpurun_error 125
		assert_equal "${stderr_lines[0]}" "gpurun: unpack $img: entry '../evil': path contains '..'"
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a zip archive is refused with a message that says what to use" {
	python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1], "w").writestr("bin/sh", "x")' \
		"$BATS_TEST_TMPDIR/image.tar"
	refused "$BATS_TEST_TMPDIR/image.tar" "image $BATS_TEST_TMPDIR/image.tar: not a tar archive (zip archives are not supported; use tar, optionally compressed with gzip, xz, zstd or bzip2)"
}

@test "a gzip-compressed zip archive is refused as zip" {
	python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1], "w").writestr("bin/sh", "x")' \
		"$BATS_TEST_TMPDIR/a.zip"
	gzip -c "$BATS_TEST_TMPDIR/a.zip" >"$BATS_TEST_TMPDIR/image.tar.gz"
	refused "$BATS_TEST_TMPDIR/image.tar.gz" "image $BATS_TEST_TMPDIR/image.tar.gz: not a tar archive (zip archives are not supported; use tar, optionally compressed with gzip, xz, zstd or bzip2)"
}

@test "gzip-compressed text is not a tar archive" {
	seq 1 2000 | gzip -c >"$BATS_TEST_TMPDIR/t.tar.gz"
	refused "$BATS_TEST_TMPDIR/t.tar.gz" "image $BATS_TEST_TMPDIR/t.tar.gz: not a tar archive"
}

@test "an empty file is refused: 'empty file'" {
	: >"$IMG"
	refused "$IMG" "image $IMG: empty file"
}

@test "a tar with no entries is refused: 'archive has no entries'" {
	head -c 10240 /dev/zero >"$IMG"
	refused "$IMG" "image $IMG: archive has no entries"
}

@test "an OCI image layout is read as an image, not unpacked as a root file system" {
	mktar "$IMG" "f|oci-layout|{\"imageLayoutVersion\": \"1.0.0\"}" "d|blobs/"
	run --separate-stderr "$GPURUN" "$IMG" /bin/true
	assert_gpurun_error 125 "image $IMG: no member 'index.json'"
}

# ---- damaged archives are errors, never a shorter tree ---------------------------------

@test "a tar cut off at an entry boundary is refused: 'truncated archive'" {
	# Drop the end-of-archive blocks: every entry is whole, the end is not.
	local size
	mktar "$BATS_TEST_TMPDIR/full.tar" --base "$BUSYBOX_TAR" "f|zzz|last"
	size=$(python3 -c '
import sys, tarfile
with tarfile.open(sys.argv[1]) as tf:
    last = tf.getmembers()[-1]
    print(last.offset_data + (last.size + 511) // 512 * 512)' "$BATS_TEST_TMPDIR/full.tar")
	head -c "$size" "$BATS_TEST_TMPDIR/full.tar" >"$IMG"
	refused "$IMG" "unpack $IMG: truncated archive"
}

@test "a tar cut off inside file data is refused: 'truncated archive'" {
	head -c $(($(stat -c %s "$BUSYBOX_TAR") / 2)) "$BUSYBOX_TAR" >"$IMG"
	refused "$IMG" "unpack $IMG: truncated archive"
}

@test "a .tar.gz cut off is refused: 'truncated archive'" {
	local tgz=$BATS_TEST_TMPDIR/img.tar.gz
	head -c $(($(stat -c %s "$BUSYBOX_TGZ") * 3 / 4)) "$BUSYBOX_TGZ" >"$tgz"
	refused "$tgz" "unpack $tgz: truncated archive"
}

@test "a .tar.xz cut off is refused: 'truncated archive'" {
	local txz=$BATS_TEST_TMPDIR/img.tar.xz
	xz -0 -c "$BUSYBOX_TAR" | head -c 300000 >"$txz"
	refused "$txz" "unpack $txz: truncated archive"
}

@test "a damaged header in the middle is refused, not skipped: 'damaged tar header'" {
	mktar "$IMG" --base "$BUSYBOX_TAR" "f|a|1" "f|b|2" "f|c|3"
	# Break the checksum of the header of "b": libarchive would skip ahead.
	python3 - "$IMG" <<-'EOF'
		import sys, tarfile
		with tarfile.open(sys.argv[1]) as tf:
		    off = [m for m in tf.getmembers() if m.name == 'b'][0].offset
		with open(sys.argv[1], 'r+b') as f:
		    f.seek(off + 148)
		    f.write(b'0000000\0')
	EOF
	refused "$IMG" "unpack $IMG: damaged tar header"
}

@test "a .tar.zst cut off is refused: 'truncated archive'" {
	local tzst=$BATS_TEST_TMPDIR/img.tar.zst
	zstd -q -c "$BUSYBOX_TAR" | head -c 300000 >"$tzst"
	refused "$tzst" "unpack $tzst: truncated archive"
}

@test "corrupt zstd data is refused with zstd's reason" {
	local tzst=$BATS_TEST_TMPDIR/img.tar.zst
	zstd -q -c "$BUSYBOX_TAR" >"$tzst"
	printf 'garbage!' | dd of="$tzst" bs=1 seek=$(($(stat -c %s "$tzst") / 2)) conv=notrunc status=none
	run --separate-stderr "$GPURUN" "$tzst" /bin/true
	assert_gpurun_error 125 "unpack $tzst: decompression failed: zstd: "
}

@test "bytes after the last zstd frame are refused, as zstd -d does" {
	local tzst=$BATS_TEST_TMPDIR/img.tar.zst
	zstd -q -c "$BUSYBOX_TAR" >"$tzst"
	printf 'trailing bytes that are no frame' >>"$tzst"
	run --separate-stderr "$GPURUN" "$tzst" /bin/true
	assert_gpurun_error 125 "unpack $tzst: decompression failed: zstd: "
}

# The extracting thread checks each zstd frame's checksum (XXH64, low 32
# bits, the frame's last four bytes) while the decompressor goes on.
@test "a .tar.zst whose checksum does not match its data is refused with zstd's words" {
	local tzst=$BATS_TEST_TMPDIR/img.tar.zst
	zstd -q --check -c "$BUSYBOX_TAR" >"$tzst"
	flip_byte "$tzst" 4
	refused "$tzst" "unpack $tzst: decompression failed: zstd: Restored data doesn't match checksum"
}

@test "a wrong checksum on the first of two zstd frames is refused; frames without one are read" {
	local tzst=$BATS_TEST_TMPDIR/img.tar.zst half=$BATS_TEST_TMPDIR/half first=$BATS_TEST_TMPDIR/first.zst
	head -c 1048576 "$BUSYBOX_TAR" >"$half"
	zstd -q --check -c "$half" >"$first"
	flip_byte "$first" 4
	{ cat "$first"; tail -c +1048577 "$BUSYBOX_TAR" | zstd -q --check -c; } >"$tzst"
	refused "$tzst" "unpack $tzst: decompression failed: zstd: Restored data doesn't match checksum"

	{ zstd -q --no-check -c "$half"; tail -c +1048577 "$BUSYBOX_TAR" | zstd -q --check -c; } >"$tzst"
	run "$GPURUN" "$tzst" /bin/sh -c 'ls /bin/busybox /bin/probe'
	assert_success
	assert_output "$(printf '/bin/busybox\n/bin/probe')"
}

@test "a .tar.zst made by pzstd (a skippable frame before each frame) unpacks, with and without the cache" {
	local tzst=$BATS_TEST_TMPDIR/img.tar.zst
	pzstd -q -p 2 -c "$BUSYBOX_TAR" >"$tzst"
	# It starts with a skippable frame, not a zstd frame.
	assert_equal "$(head -c 4 "$tzst" | od -An -tx1 | tr -d ' ')" 502a4d18
	run "$GPURUN" --no-cache "$tzst" /bin/sh -c 'ls /bin/busybox /bin/probe'
	assert_success
	assert_output "$(printf '/bin/busybox\n/bin/probe')"
	run "$GPURUN" "$tzst" /bin/sh -c 'ls /bin/busybox /bin/probe'
	assert_success
	assert_output "$(printf '/bin/busybox\n/bin/probe')"
}

@test "a .tar.zst of two concatenated frames unpacks as one tar" {
	local tzst=$BATS_TEST_TMPDIR/img.tar.zst half=$BATS_TEST_TMPDIR/half
	head -c 1048576 "$BUSYBOX_TAR" >"$half"
	{ zstd -q -c "$half"; tail -c +1048577 "$BUSYBOX_TAR" | zstd -q -c; } >"$tzst"
	run "$GPURUN" "$tzst" /bin/sh -c 'ls /bin/busybox /bin/probe'
	assert_success
	assert_output "$(printf '/bin/busybox\n/bin/probe')"
}

@test "corrupt xz data is refused: 'decompression failed'" {
	local txz=$BATS_TEST_TMPDIR/img.tar.xz
	xz -0 -c "$BUSYBOX_TAR" >"$txz"
	printf 'garbage!' | dd of="$txz" bs=1 seek=$(($(stat -c %s "$txz") / 2)) conv=notrunc status=none
	run --separate-stderr "$GPURUN" "$txz" /bin/true
	assert_gpurun_error 125 "unpack $txz: decompression failed: "
}

# liblzma is loaded on the first xz stream only (rootfs/unpack/xz.c); an
# empty file where the loader looks first is a library that cannot load.
broken_liblzma() {
	mkdir "$BATS_TEST_TMPDIR/lib"
	: >"$BATS_TEST_TMPDIR/lib/liblzma.so.5"
}

@test "an xz image whose liblzma cannot be loaded is refused, naming the library" {
	local txz=$BATS_TEST_TMPDIR/img.tar.xz
	xz -0 -c "$BUSYBOX_TAR" >"$txz"
	broken_liblzma
	run --separate-stderr env LD_LIBRARY_PATH="$BATS_TEST_TMPDIR/lib" "$GPURUN" --no-cache "$txz" /bin/true </dev/null
	assert_gpurun_error 125
	# The reason in parentheses is the loader's own words.
	[[ ${stderr_lines[0]} == "gpurun: image $txz: xz data: cannot load liblzma.so.5 ("*")" ]]
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "a gzip image launches without loading liblzma" {
	local tgz=$BATS_TEST_TMPDIR/img.tar.gz
	gzip -c "$BUSYBOX_TAR" >"$tgz"
	broken_liblzma
	run env LD_LIBRARY_PATH="$BATS_TEST_TMPDIR/lib" "$GPURUN" --no-cache "$tgz" /bin/echo ok
	assert_success
	assert_output ok
}

# ---- --user against a hostile /etc -------------------------------------------------------

@test "--user NAME does not follow /etc/passwd when it is a symlink to the host's" {
	printf 'hostonly:x:4242:4242::/nonexistent:/bin/sh\n' >"$BATS_TEST_TMPDIR/hostpasswd"
	python3 - "$BUSYBOX_TAR" "$IMG" "$BATS_TEST_TMPDIR/hostpasswd" <<-'EOF'
		import sys, tarfile
		src, out, target = sys.argv[1:]
		with tarfile.open(src) as tin, tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as tout:
		    for m in tin.getmembers():
		        if m.name.lstrip('./') == 'etc/passwd':
		            m.type, m.linkname, m.size = tarfile.SYMTYPE, target, 0
		            tout.addfile(m)
		        else:
		            tout.addfile(m, tin.extractfile(m) if m.isfile() else None)
	EOF
	run --separate-stderr "$GPURUN" -u hostonly "$IMG" /bin/true
	assert_gpurun_error 125 "user 'hostonly'" "passwd: Too many levels of symbolic links"
	# A number needs no entry: it still runs, with gid 0 as docker does.
	run "$GPURUN" -u 4242 "$IMG" /bin/sh -c 'echo "$(id -u) $(id -g)"'
	assert_success
	assert_output "4242 0"
}

@test "--user NAME resolves a symlinked /etc inside the image, not on the host" {
	mktar "$BATS_TEST_TMPDIR/base.tar" --base "$BUSYBOX_TAR" "d|private/" "d|private/etc/" \
		$'f|private/etc/passwd|carol:x:2024:2025::/home/carol:/bin/sh\n'
	python3 - "$BATS_TEST_TMPDIR/base.tar" "$IMG" <<-'EOF'
		import sys, tarfile
		src, out = sys.argv[1:]
		with tarfile.open(src) as tin, tarfile.open(out, 'w', format=tarfile.GNU_FORMAT) as tout:
		    for m in tin.getmembers():
		        n = m.name[2:] if m.name.startswith('./') else m.name
		        if n == 'etc' or n.startswith('etc/'):
		            continue
		        tout.addfile(m, tin.extractfile(m) if m.isfile() else None)
		    link = tarfile.TarInfo('etc')
		    link.type, link.linkname = tarfile.SYMTYPE, '/private/etc'
		    tout.addfile(link)
	EOF
	run "$GPURUN" -u carol "$IMG" /bin/sh -c 'echo "$(id -u) $(id -g) $HOME"'
	assert_success
	assert_output "2024 2025 /home/carol"
}

@test "--user with an unknown name names the user and the image's passwd" {
	cp "$BUSYBOX_TAR" "$IMG"
	refused_user() {
		run --separate-stderr "$GPURUN" -u "$1" "$IMG" /bin/true
		assert_gpurun_error 125
		assert_equal "${stderr_lines[0]}" "gpurun: $2"
	}
	refused_user mallory "user 'mallory': no such user in the image's /etc/passwd"
	refused_user alice:nogroupx "group 'nogroupx': no such group in the image's /etc/group"
	refused_user 4294967295 "user '4294967295': not a valid uid (0 to 4294967294)"
}
