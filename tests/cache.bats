#!/usr/bin/env bats
# The image cache (rootfs/cache*.c): archives are unpacked once, keyed by
# content; a second launch takes the fast path and reads no archive; every
# run writes only to its own tmpfs layer; launches at once, launches killed
# half-way, damaged entries and a full disk leave nothing a later run would
# trust; `gpurun cache ls|rm|prune` manage it.  Its caches are on the disk,
# where a user's cache is, not on run-bats.sh's tmpfs:
# run-bats: on-disk

load lib/common
load lib/buildah

setup_file() {
	require_gpurun
	common_images
}

setup() {
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
	IMG=$BATS_TEST_TMPDIR/img.tar.gz
	cp "$BUSYBOX_TGZ" "$IMG"
}

# per_file NAME BUILDER ARGS...: print $BATS_FILE_TMPDIR/NAME, made by
# BUILDER PATH ARGS... for the first test of this file that asks for it (a
# large input two tests read, never change, and made it each).
per_file() {
	local f=$BATS_FILE_TMPDIR/$1
	if [[ ! -e $f ]]; then
		"$2" "$f.part" "${@:3}" && mv "$f.part" "$f" || return 1
	fi
	printf '%s\n' "$f"
}

layer_dirs() {
	find "$GPURUN_CACHE/layers" -mindepth 1 -maxdepth 1 -type d | wc -l
}

@test "an archive is unpacked into the cache once; a second launch reads no archive" {
	run "$GPURUN" "$IMG" cat /etc/passwd
	assert_success
	assert_equal "$(layer_dirs)" 1
	run --separate-stderr "$GPURUN" --verbose "$IMG" echo hit
	assert_success
	assert_output hit
	[[ "$stderr" == *"1 layer, from the cache"* ]] || fail "$stderr"
	# A new mtime is a new file: read again (the same layer, kept once).
	touch "$IMG"
	run --separate-stderr "$GPURUN" --verbose "$IMG" echo miss
	assert_success
	assert_output miss
	[[ "$stderr" == *"1 layer, unpacked into the cache"* ]] || fail "$stderr"
	assert_equal "$(layer_dirs)" 1
}

@test "an archive rewritten in place with the same size and its mtime put back is read again" {
	local t=$BATS_TEST_TMPDIR/msg.tar off
	mktar "$t" --base "$BUSYBOX_TAR" "f|etc/msg|gpurun-first-bytes"
	run "$GPURUN" "$t" cat /etc/msg
	assert_success
	assert_output gpurun-first-bytes
	# The same inode, size and mtime, other bytes: only the ctime tells.
	local before after
	before=$(stat -c '%d %i %s %y' "$t")
	touch -r "$t" "$BATS_TEST_TMPDIR/when"
	off=$(grep -obaF gpurun-first-bytes "$t" | cut -d: -f1)
	printf gpurun-other-bytes | dd of="$t" bs=1 seek="$off" conv=notrunc status=none
	touch -d "$(stat -c %y "$BATS_TEST_TMPDIR/when")" "$t"
	after=$(stat -c '%d %i %s %y' "$t")
	assert_equal "$after" "$before"
	run "$GPURUN" "$t" cat /etc/msg
	assert_success
	assert_output gpurun-other-bytes
}

@test "--verbose tells a hit from a miss" {
	run --separate-stderr "$GPURUN" --verbose "$IMG" true
	[[ "$stderr" == *"1 layer, unpacked into the cache"* ]] || fail "$stderr"
	run --separate-stderr "$GPURUN" --verbose "$IMG" true
	[[ "$stderr" == *"1 layer, from the cache"* ]] || fail "$stderr"
}

@test "what one run writes is never seen by the next, and the cached tree is not modified" {
	run "$GPURUN" "$IMG" sh -c 'echo one >/etc/run1 && rm /etc/passwd && echo done'
	assert_success
	assert_output done
	run "$GPURUN" "$IMG" sh -c 'ls /etc/run1 2>&1; grep -c alice /etc/passwd'
	assert_output --partial "No such file or directory"
	assert_line 1
	run find "$GPURUN_CACHE/layers" -name run1
	assert_output ""
	assert_file_exists "$(find "$GPURUN_CACHE/layers" -maxdepth 1 -mindepth 1 -type d)/etc/passwd"
}

@test "--no-cache unpacks into the run's tmpfs and leaves the cache alone" {
	run "$GPURUN" --no-cache "$IMG" echo ok
	assert_success
	assert_not_exist "$GPURUN_CACHE"
}

@test "--no-cache unpacks a layered image into the run's tmpfs, verified, and leaves the cache alone" {
	run --separate-stderr "$GPURUN" --no-cache --gpus void "$(oci_fixture docker.tar)" \
		'ls /data/opaque; [ -e /etc/deleted-later ] || echo deleted'
	assert_success
	assert_output $'new\ndeleted'
	run --separate-stderr "$GPURUN" --no-cache --gpus void "$(oci_fixture oci-two)@two"
	assert_output two
	run --separate-stderr "$GPURUN" --no-cache --gpus void "$(oci_fixture hostile-blob-mismatch.tar)" true
	assert_gpurun_error 125 "--no-cache: image" "content does not match its digest"
	run --separate-stderr "$GPURUN" --no-cache --dry-run --gpus void "$(oci_fixture oci)" true
	assert_line --regexp "^# image .*: 3 layers, unpacked into this run's tmpfs \(--no-cache\)$"
	assert_not_exist "$GPURUN_CACHE"
}

@test "layers shared by images are stored once" {
	local f
	# One image in four formats: the same diff_ids.
	for f in oci docker.tar docker-legacy.tar oci.tar.zst; do
		run "$GPURUN" --gpus void "$(oci_fixture "$f")" true
		assert_success
	done
	assert_equal "$(layer_dirs)" 3
	# Two images on one base layer: three layers in all.
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache2
	run "$GPURUN" "$(oci_fixture oci-two)@one"
	run "$GPURUN" "$(oci_fixture oci-two)@two"
	assert_success
	assert_equal "$(layer_dirs)" 3
}

@test "20 launches of a new image at once unpack it once and all succeed" {
	local i pids=() failed=0
	for i in $(seq 20); do
		"$GPURUN" --verbose --gpus void "$(oci_fixture oci.tar.gz)" true 2>"$BATS_TEST_TMPDIR/err.$i" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do
		wait "$i" || failed=$((failed + 1))
	done
	assert_equal "$failed" 0
	assert_equal "$(cat "$BATS_TEST_TMPDIR"/err.* | grep -c 'unpacked into the cache')" 1
	assert_equal "$(cat "$BATS_TEST_TMPDIR"/err.* | grep -c 'from the cache')" 19
	assert_equal "$(layer_dirs)" 3
	assert_cache_consistent
	run find "$GPURUN_CACHE/tmp" -mindepth 1
	assert_output ""
}

@test "a launch killed with SIGKILL while unpacking leaves nothing a later run trusts" {
	local big
	big=$(per_file big.tar.gz big_tgz 0 600 262144) # 150 MB
	local i ok
	for i in 0.05 0.1 0.2; do
		timeout -s KILL "$i" "$GPURUN" "$big" true || true
		# An .ok is written last: never without its layer.
		for ok in "$GPURUN_CACHE"/layers/*.ok; do
			[[ -e $ok ]] || continue
			assert_dir_exists "${ok%.ok}"
		done
		# A kill between a layer's rename into layers/ and its .ok (whose
		# fsync can take a while after 150 MB) leaves the directory without
		# its .ok: never trusted (cache_has_layer wants both), and swept by
		# the next launch that finds the cache idle.  That launch must see
		# the whole image, and leave every layer with its .ok.
		run "$GPURUN" "$big" sh -c 'ls /big | wc -l'
		assert_success
		assert_output 600
		assert_cache_consistent
		# Cold again for the next kill.
		run "$GPURUN" cache prune --max-size 0
		assert_success
	done
	run "$GPURUN" cache prune
	assert_success
	run find "$GPURUN_CACHE/tmp" "$GPURUN_CACHE/locks" -mindepth 1
	assert_output ""
}

@test "a partial layer (no .ok) and a damaged image record are detected and rebuilt" {
	run "$GPURUN" "$IMG" true
	assert_success
	local ok rec
	ok=$(ls "$GPURUN_CACHE"/layers/*.ok)
	rm "$ok"
	run "$GPURUN" "$IMG" cat /etc/hostname
	assert_success
	assert_file_exists "$ok"
	rec=$(ls "$GPURUN_CACHE"/images/*.json)
	echo '{ not json' >"$rec"
	run "$GPURUN" "$IMG" echo rebuilt
	assert_success
	assert_output rebuilt
	run python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$rec"
	assert_success
}

@test "a full disk gives one clear line, exit 125, and no half entry" {
	skip_unless_root "mounting a small tmpfs"
	local small=$BATS_TEST_TMPDIR/small
	mkdir -p "$small"
	# Room for the archive (1.4 MB), not for what it unpacks to (3 MB).
	mount -t tmpfs -o size=2m tmpfs "$small"
	export GPURUN_CACHE=$small/cache
	run --separate-stderr "$GPURUN" "$IMG" true
	local status_=$status stderr_=$stderr
	local layers tmp
	layers=$(find "$small/cache/layers" -mindepth 1 | wc -l)
	tmp=$(find "$small/cache/tmp" -mindepth 1 | wc -l)
	umount "$small"
	[[ $status_ -eq 125 ]] || fail "status $status_: $stderr_"
	[[ "$stderr_" == *"No space left on device"* ]] || fail "$stderr_"
	[[ $(grep -c '^gpurun: ' <<<"$stderr_") -eq 1 ]] || fail "want one line: $stderr_"
	assert_equal "$layers" 0
	assert_equal "$tmp" 0
}

# small_fs_launch SIZE [OPTION...] IMAGE: `gpurun OPTION... IMAGE true`
# with the cache on a tmpfs of SIZE, in a mount namespace of its own (and a
# user namespace when not root), so that the host never sees it; then what
# the cache holds besides its empty directories, in $BATS_TEST_TMPDIR/left.
small_fs_launch() {
	local size=$1 small=$BATS_TEST_TMPDIR/small ns=(unshare -m)
	shift
	[[ $(id -u) -eq 0 ]] || ns=(unshare -Urm)
	mkdir -p "$small"
	"${ns[@]}" bash -c 'size=$1 small=$2 left=$3; shift 3
		mount -t tmpfs -o "size=$size" tmpfs "$small" || exit 99
		GPURUN_CACHE=$small/cache "$@" true
		rc=$?
		find "$small/cache/layers" "$small/cache/tmp" "$small/cache/images" "$small/cache/sources" \
			-mindepth 1 >"$left"
		exit $rc' sh "$size" "$small" "$BATS_TEST_TMPDIR/left" "$GPURUN" --gpus void "$@"
}

@test "an image larger than the free space of the cache's file system is refused before anything is written" {
	local img what
	host_snapshot "$BATS_TEST_TMPDIR/host"
	for img in "$IMG" "$(oci_fixture oci)" "$(oci_fixture oci.tar.gz)"; do
		case $img in
		*/oci) what="what its layers take packed" ;;
		*.gz) what="the archive's size" ;;
		esac
		# 1 MiB: less than the busybox layer (1.4 MB gzip'ed).
		run --separate-stderr small_fs_launch 1m "$img"
		assert_gpurun_error 125 "image $img: needs at least " "($what" \
			"but the file system of $BATS_TEST_TMPDIR/small/cache has 1048576 bytes free"
		assert_equal "$(cat "$BATS_TEST_TMPDIR/left")" ""
	done
	assert_host_unchanged "$BATS_TEST_TMPDIR/host"
}

# zeros_tgz OUT BYTES: the busybox image plus /zeros, BYTES of zeros, gzip'ed
# (a small file that unpacks to much more; at the fast level, which makes
# 50 MB of zeros 1.8 MB instead of 1.5 in a third of the time).
zeros_tgz() {
	python3 - "$1" "$BUSYBOX_TAR" "$2" <<-'PY'
		import io, sys, tarfile
		out, base, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
		class Zeros(io.RawIOBase):
		    def readable(self):
		        return True
		    def readinto(self, b):
		        b[:] = bytes(len(b))
		        return len(b)
		with tarfile.open(base) as src, tarfile.open(out, "w:gz", compresslevel=1) as dst:
		    for m in src.getmembers():
		        dst.addfile(m, src.extractfile(m) if m.isfile() else None)
		    t = tarfile.TarInfo("zeros"); t.size = n
		    dst.addfile(t, io.BufferedReader(Zeros()))
	PY
}

CAP_MSG="the cap on an image's size (--max-image-size or GPURUN_MAX_IMAGE_SIZE)"

@test "an image that unpacks to more than --max-image-size is stopped as it is written: one line, nothing kept" {
	local bomb
	bomb=$(per_file bomb.tar.gz zeros_tgz 50000000)
	host_snapshot "$BATS_TEST_TMPDIR/host"
	# 30 MiB of disk for 50 MB of zeros: stopped at the cap, before the
	# disk is full.
	run --separate-stderr small_fs_launch 30m --max-image-size 10M "$bomb"
	assert_gpurun_error 125 "unpack $bomb: the image unpacks to more than 10 MB, $CAP_MSG"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/left")" ""
	GPURUN_MAX_IMAGE_SIZE=10M run --separate-stderr small_fs_launch 30m "$bomb"
	assert_gpurun_error 125 "unpack $bomb: the image unpacks to more than 10 MB, $CAP_MSG"
	assert_equal "$(cat "$BATS_TEST_TMPDIR/left")" ""
	assert_host_unchanged "$BATS_TEST_TMPDIR/host"
	# Under the cap it runs.
	run "$GPURUN" --max-image-size 60M "$bomb" stat -c %s /zeros
	assert_success
	assert_output 50000000
}

@test "--no-cache stops an image at --max-image-size too, a flat archive and a layered image" {
	local bomb layered=$BATS_TEST_TMPDIR/layered
	bomb=$(per_file bomb.tar.gz zeros_tgz 50000000)
	build_made_image "$layered" oci zeros:zeros:50000000
	host_snapshot "$BATS_TEST_TMPDIR/host"
	run --separate-stderr "$GPURUN" --no-cache --max-image-size 10M "$bomb" true
	assert_gpurun_error 125 "unpack $bomb: the image unpacks to more than 10 MB, $CAP_MSG"
	run --separate-stderr "$GPURUN" --no-cache --max-image-size 10M --gpus void "$layered" true
	assert_gpurun_error 125 "--no-cache: unpack $layered: layer 2 of 2 (blobs/sha256/" \
		"): the image unpacks to more than 10 MB, $CAP_MSG"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host"
	assert_not_exist "$GPURUN_CACHE"
}

@test "the cap on an image's size counts its layers together, those found in the cache too" {
	local img=$BATS_TEST_TMPDIR/layered
	# busybox (about 3 MB) and three layers of 4 MB: each under 12 MB,
	# all four over.
	build_made_image "$img" oci zeros:a:4000000 zeros:b:4000000 zeros:c:4000000
	local i
	for i in 1 2; do
		run --separate-stderr "$GPURUN" --max-image-size 12M --gpus void "$img" true
		assert_gpurun_error 125 "unpack $img: layer 4 of 4 (blobs/sha256/" \
			"): the image unpacks to more than 12 MB, $CAP_MSG"
		# The three complete layers are kept (by content, for `cache
		# prune` to collect); nothing of the fourth, and no image.
		assert_equal "$(layer_dirs)" 3
		run find "$GPURUN_CACHE/tmp" "$GPURUN_CACHE/images" "$GPURUN_CACHE/sources" -mindepth 1
		assert_output ""
	done
	run "$GPURUN" --max-image-size 20M --gpus void "$img" sh -c 'cat /a /b /c | wc -c'
	assert_success
	assert_output 12000000
}

@test "--max-image-size and GPURUN_MAX_IMAGE_SIZE want a size" {
	run --separate-stderr "$GPURUN" --max-image-size lots "$IMG" true
	assert_gpurun_error 125 "--max-image-size: not a size; expected one such as 500M or 10G"
	run --separate-stderr env GPURUN_MAX_IMAGE_SIZE=0 "$GPURUN" "$IMG" true
	assert_gpurun_error 125 "GPURUN_MAX_IMAGE_SIZE: not a size; expected one such as 500M or 10G"
	run "$GPURUN" --help
	assert_output --partial "--max-image-size SIZE"
}

@test "the cache is private (0700), and holds no setuid bit and no security. or trusted. xattr" {
	mktar "$BATS_TEST_TMPDIR/suid.tar" --base "$BUSYBOX_TAR" "f|bin/su|x|4755" "f|bin/sg|x|2755"
	run "$GPURUN" "$BATS_TEST_TMPDIR/suid.tar" true
	assert_success
	run "$GPURUN" --gpus void "$(oci_fixture oci)" true
	assert_success
	run stat -c %a "$GPURUN_CACHE"
	assert_output 700
	run find "$GPURUN_CACHE" -perm /6000
	assert_output ""
	run python3 - "$GPURUN_CACHE" <<-'PY'
		import os, sys
		for d, dirs, files in os.walk(sys.argv[1]):
		    for n in dirs + files:
		        p = os.path.join(d, n)
		        for x in os.listxattr(p, follow_symlinks=False):
		            if x.startswith(("security.", "trusted.")):
		                print(p, x)
	PY
	assert_success
	assert_output ""
}

@test "gpurun cache ls shows digest, size, last use and source" {
	run "$GPURUN" cache ls
	assert_success
	assert_output ""
	run "$GPURUN" "$IMG" true
	run "$GPURUN" --gpus void "$(oci_fixture docker.tar)" true
	run "$GPURUN" cache ls
	assert_success
	assert_line --index 0 --regexp '^IMAGE ID +SIZE +LAST USE +SOURCE$'
	assert_line --regexp "^[0-9a-f]{12} +[0-9.]+[kM]B +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{5} +$IMG$"
	assert_line --regexp "^[0-9a-f]{12} +.*docker.tar@docker.io/gpurun/test:latest$"
}

@test "gpurun cache ls lists every source that led to an image, the latest first" {
	local again=$BATS_TEST_TMPDIR/again.tar.gz
	cp "$IMG" "$again"
	run "$GPURUN" "$IMG" true
	run "$GPURUN" "$again" true
	run "$GPURUN" "$IMG" true # a hit: the sources stay as they are
	run "$GPURUN" cache ls
	assert_success
	assert_equal "${#lines[@]}" 3
	assert_line --index 1 --regexp "^[0-9a-f]{12} +[0-9.]+[kM]B +[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{5} +$again$"
	# The others on lines of their own, in the SOURCE column.
	assert_line --index 2 "$(printf '%42s%s' '' "$IMG")"
	run "$GPURUN" cache ls --json
	assert_success
	python3 -c '
import json, sys
doc = json.loads(sys.stdin.read())
[img] = doc["images"]
assert img["source"] == sys.argv[2], img
assert [s["source"] for s in img["sources"]] == [sys.argv[1], sys.argv[2]], img["sources"]
assert all(s["ref"] is None for s in img["sources"]), img["sources"]' "$IMG" "$again" <<<"$output"
}

@test "a record written before sources were listed still shows its one source" {
	run "$GPURUN" "$IMG" true
	local rec
	rec=$(echo "$GPURUN_CACHE"/images/*.json)
	python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
del r["sources"]
json.dump(r, open(sys.argv[1], "w"))' "$rec"
	run "$GPURUN" cache ls --json
	assert_success
	python3 -c '
import json, sys
[img] = json.loads(sys.stdin.read())["images"]
assert img["sources"] == [{"source": sys.argv[1], "ref": None}], img' "$IMG" <<<"$output"
}

@test "gpurun cache rm takes a digest or an image, and removes layers nobody else uses" {
	run "$GPURUN" "$IMG" true
	run "$GPURUN" --gpus void "$(oci_fixture oci)" true
	assert_equal "$(layer_dirs)" 4
	run "$GPURUN" cache rm "$IMG"
	assert_success
	assert_output --regexp '^removed [0-9a-f]{12}$'
	assert_equal "$(layer_dirs)" 3
	local id
	id=$("$GPURUN" cache ls | awk 'NR == 2 { print $1 }')
	run "$GPURUN" cache rm "sha256:$id"
	assert_success
	assert_equal "$(layer_dirs)" 0
	run --separate-stderr "$GPURUN" cache rm deadbeef
	assert_gpurun_error 125 "cache: no image deadbeef in $GPURUN_CACHE (see gpurun cache ls)"
}

@test "gpurun cache rm takes an OCI layout directory or a dir: layout, as it takes an archive" {
	local img
	for img in "$(oci_fixture oci)" "$(buildah_fixture dir)"; do
		run "$GPURUN" --gpus void "$img" true
		assert_success
		assert_equal "$(layer_dirs)" 3
		run "$GPURUN" cache rm "$img"
		assert_success
		assert_output --regexp '^removed [0-9a-f]{12}$'
		assert_equal "$(layer_dirs)" 0
	done
}

@test "cache rm does not follow a symlink swapped in where a directory of a layer was: it removes the symlink" {
	local canary=$BATS_TEST_TMPDIR/canary away=$BATS_TEST_TMPDIR/away shim=$BATS_TEST_TMPDIR/swap_on_unlink.so
	local layers before stamp
	gcc -std=gnu11 -Wall -Wextra -Werror -shared -fPIC -o "$shim" "$TESTS_DIR/lib/swap_on_unlink.c"
	echo canary >"$canary"
	chmod 0600 "$canary"
	touch -d '1 hour ago' "$canary"
	stamp=$(stat -c '%a %Y' "$canary")
	run "$GPURUN" "$IMG" true
	assert_success
	layers=$(realpath "$GPURUN_CACHE/layers")
	before=$(cd "$layers"/*/bin && find . -printf '%p %m %s\n' | LC_ALL=C sort)
	host_snapshot "$BATS_TEST_TMPDIR/host"
	# tests/lib/swap_on_unlink.c: when the removal's unlinkat() of the
	# layer's bin says EISDIR, bin is moved out of the cache and a symlink
	# to the canary left in its place, before the removal acts again.
	run --separate-stderr env LD_PRELOAD="$shim" SWAP_ON_UNLINK_UNDER="$layers" SWAP_ON_UNLINK_NAME=bin \
		SWAP_ON_UNLINK_AWAY="$away" SWAP_ON_UNLINK_LINK="$canary" "$GPURUN" cache rm "$IMG"
	assert_success
	assert_output --regexp '^removed [0-9a-f]{12}$'
	[[ -d $away ]] || fail "the symlink was never swapped in"
	assert_equal "$(stat -c '%a %Y' "$canary")" "$stamp"
	assert_equal "$(cat "$canary")" canary
	# What was moved out of the cache is as it was: nothing followed it.
	assert_equal "$(cd "$away" && find . -printf '%p %m %s\n' | LC_ALL=C sort)" "$before"
	assert_equal "$(layer_dirs)" 0
	assert_host_unchanged "$BATS_TEST_TMPDIR/host"
	chmod -R u+w "$away"
}

@test "cache prune removes nothing through a directory of the cache that is a symlink" {
	local elsewhere=$BATS_TEST_TMPDIR/elsewhere
	run "$GPURUN" "$IMG" true
	assert_success
	mkdir "$elsewhere"
	echo canary >"$elsewhere/keep"
	rmdir "$GPURUN_CACHE/tmp"
	ln -s "$elsewhere" "$GPURUN_CACHE/tmp"
	run "$GPURUN" cache prune --max-size 0
	assert_success
	assert_output "pruned 1 image"
	assert_equal "$(cat "$elsewhere/keep")" canary
	assert_equal "$(layer_dirs)" 0
}

@test "gpurun cache prune --max-size removes the least recently used images first" {
	run "$GPURUN" "$IMG" true
	run "$GPURUN" --gpus void "$(oci_fixture oci)" true
	# A record's mtime is its image's last use: both an hour old, then
	# the busybox archive used again is the most recent.
	find "$GPURUN_CACHE" -path '*/images/*.json' -exec touch -d '1 hour ago' {} +
	run "$GPURUN" "$IMG" true
	run "$GPURUN" cache prune --max-size 100G
	assert_output "pruned 0 images"
	assert_equal "$(layer_dirs)" 4
	run "$GPURUN" cache prune --max-size 4M
	assert_success
	assert_output "pruned 1 image"
	assert_equal "$(layer_dirs)" 1
	run "$GPURUN" "$IMG" echo still-here
	assert_output still-here
	run "$GPURUN" cache prune --max-size 0
	assert_equal "$(layer_dirs)" 0
	run --separate-stderr "$GPURUN" cache prune --max-size lots
	assert_gpurun_error 125 "--max-size 'lots': expected a size such as 500M or 10G"
}

@test "rm and prune wait for no one: a running launch keeps the cache busy" {
	# The launch holds the cache's lock for its lifetime: once its command
	# has printed, the lock is taken.
	"$GPURUN" "$IMG" sh -c 'echo running; exec sleep 30' >"$BATS_TEST_TMPDIR/out" &
	local pid=$!
	wait_for_line "$BATS_TEST_TMPDIR/out" running
	run --separate-stderr "$GPURUN" cache prune
	assert_gpurun_error 125 "is in use by a running gpurun; try again when it ends"
	kill "$pid"
	wait "$pid" || true
	run "$GPURUN" cache prune
	assert_success
}

@test "Ctrl-C during an unpack ends the progress line before gpurun dies of it" {
	local big=$BATS_TEST_TMPDIR/big.tar.gz
	big_tgz "$big" 0 1200 262144 # 300 MB
	# gpurun in the foreground of a terminal of its own; Ctrl-C typed
	# there once the progress line shows.  Prints what the terminal got,
	# then how gpurun ended.
	run python3 - "$GPURUN" "$big" <<-'PY'
		import os, pty, sys
		pid, fd = pty.fork()
		if pid == 0:
		    os.execv(sys.argv[1], [sys.argv[1], sys.argv[2], "true"])
		out = b""
		sent = False
		while True:
		    try:
		        chunk = os.read(fd, 4096)
		    except OSError:
		        break
		    if not chunk:
		        break
		    out += chunk
		    if not sent and b"MB/s" in out:
		        os.write(fd, b"\x03")
		        sent = True
		_, status = os.waitpid(pid, 0)
		sys.stdout.write(repr(out[-40:]) + "\n")
		sys.stdout.write("signal %d\n" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit %d\n" % os.WEXITSTATUS(status))
	PY
	assert_success
	assert_line "signal 2"
	# The terminal's echo of the key, then the newline gpurun wrote.
	[[ "${lines[0]}" == *"MB/s^C\\r\\n'" ]] || fail "the terminal's last bytes: ${lines[0]}"
}

@test "a progress line while unpacking on a terminal; nothing otherwise, nothing with --quiet" {
	local big
	big=$(per_file big.tar.gz big_tgz 0 600 262144) # 150 MB
	tty_run "$GPURUN" "$big" echo ran
	assert_success
	assert_output --regexp "gpurun: unpacking $big: layer 1 of 1, [0-9.]+ MB, [0-9]+ files, [0-9.]+ MB/s"
	assert_output --regexp "gpurun: unpacked $big into the cache: 1 layer, [0-9.]+ MB, [0-9]+ files in [0-9.]+ s"
	assert_line ran
	# A hit has nothing to say.
	tty_run "$GPURUN" "$big" echo ran
	assert_output ran
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache2
	tty_run "$GPURUN" --quiet "$big" echo ran
	assert_output ran
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache3
	run --separate-stderr "$GPURUN" "$big" echo ran
	assert_output ran
	assert_equal "$stderr" ""
	# Layers of an image count as such.
	tty_run "$GPURUN" --gpus void "$(oci_fixture oci)" true
	assert_output --partial "into the cache: 3 layers,"
}

@test "--help documents the cache" {
	run "$GPURUN" --help
	assert_output --partial "gpurun cache ls [--json] | rm DIGEST|IMAGE | prune [--max-size SIZE]"
	assert_output --partial "--no-cache"
}

@test "a cache that cannot be made: one line, a hint, exit 125" {
	skip_unless_user "root can make any directory"
	run --separate-stderr env -u GPURUN_CACHE -u XDG_CACHE_HOME HOME=/nonexistent "$GPURUN" "$IMG" true
	assert_gpurun_error 125 "cache: mkdir /nonexistent: Permission denied"
	[[ "$stderr" == *"hint: set GPURUN_CACHE to a directory of your own, or use --no-cache"* ]] || fail "$stderr"
}
