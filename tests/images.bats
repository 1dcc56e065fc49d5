#!/usr/bin/env bats
# Images users already hold: `docker save` archives (the legacy layout, and
# the OCI layout Docker 25 writes), OCI image layouts as directories and as
# tar archives in any compression, and skopeo's dir: layout.  Built offline
# with Debian's umoci and skopeo (tests/lib/oci.bash, tests/lib/buildah.bash);
# what they cannot write, and every hostile image, by
# tests/lib/hostile_images.py.  Layers are applied with their
# whiteouts and opaque directories, every blob is verified, the config is
# honoured, and a hostile image is refused with one line and leaves the host
# and the cache as they were.

load lib/common
load lib/gpu
load lib/buildah

setup_file() {
	require_gpurun
	common_images
}

setup() {
	# A cache of the test's own, so that each test sees what it made.
	export GPURUN_CACHE=$BATS_TEST_TMPDIR/cache
}

# What the three layers of the test image leave: layer 2's and 3's files,
# nothing that layer 3 deleted, /data/opaque with only `new`.
LAYERS_CHECK='cat /etc/gpurun-layer2 /etc/gpurun-layer3 >/dev/null && echo files-ok
	[ -e /etc/deleted-later ] && echo deleted-later-is-back
	[ -e /data/gone ] && echo gone-is-back
	ls /data/opaque | tr "\n" " "; echo
	ls /data | tr "\n" " "; echo'

assert_layers_applied() {
	assert_success
	assert_line files-ok
	refute_line deleted-later-is-back
	refute_line gone-is-back
	assert_line "new "
	assert_line "keep opaque "
}

# The test image's entrypoint is /bin/sh -c: a COMMAND is its script.
@test "an OCI image layout directory: layers applied with whiteouts and an opaque directory" {
	run "$GPURUN" --gpus void "$(oci_fixture oci)" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "an OCI layout packed as a plain tar, .tar.gz, .tar.zst and .tar.xz" {
	local f
	for f in oci.tar oci.tar.gz oci.tar.zst oci.tar.xz; do
		run "$GPURUN" --gpus void "$(oci_fixture "$f")" "$LAYERS_CHECK"
		assert_layers_applied
	done
}

@test "an OCI layout packed with tar -C DIR -cf X.tar . runs as an image, in any member order, plain and gzip" {
	local dir t=$BATS_TEST_TMPDIR f
	dir=$(oci_fixture oci)
	# As a user packs a directory: "./" first, then the rest in the
	# directory's order; sorted, blobs/ comes before index.json.
	tar -C "$dir" -cf "$t/dot.tar" .
	tar -C "$dir" --sort=name -cf "$t/sorted.tar" .
	run tar -tf "$t/sorted.tar"
	assert_line --index 0 ./
	assert_line --index 1 ./blobs/
	# "./"-prefixed members without a "./" entry, index.json first.
	tar -C "$dir" -cf "$t/members.tar" ./index.json ./blobs ./oci-layout
	gzip -k "$t/dot.tar" "$t/sorted.tar"
	for f in dot.tar dot.tar.gz sorted.tar sorted.tar.gz members.tar; do
		run "$GPURUN" --gpus void "$t/$f" "$LAYERS_CHECK"
		assert_layers_applied
	done
}

@test "a root file system whose top holds a directory named blobs, first, runs as a root file system" {
	local root=$BATS_TEST_TMPDIR/root t=$BATS_TEST_TMPDIR f
	local -a rest
	cp -a "$(fixture busybox)" "$root"
	mkdir -p "$root/blobs/sha256"
	echo kept >"$root/blobs/sha256/notes"
	mapfile -t rest < <(cd "$root" && find . -mindepth 1 -maxdepth 1 ! -name blobs)
	# "./", then ./blobs and what it holds, then the rest: an order
	# tar -C DIR -cf X.tar . may give.
	tar -C "$root" --no-recursion -cf "$t/dot.tar" .
	tar -C "$root" -rf "$t/dot.tar" ./blobs "${rest[@]}"
	# Plain names, blobs/ the very first member.
	tar -C "$root" -cf "$t/plain.tar" blobs "${rest[@]#./}"
	run tar -tf "$t/plain.tar"
	assert_line --index 0 blobs/
	gzip -k "$t/dot.tar" "$t/plain.tar"
	for f in dot.tar dot.tar.gz plain.tar plain.tar.gz; do
		run "$GPURUN" --gpus void "$t/$f" cat /blobs/sha256/notes
		assert_success
		assert_output kept
	done
}

@test "a docker save archive in the legacy layout (manifest.json, repositories, <id>/layer.tar)" {
	run "$GPURUN" --gpus void "$(oci_fixture docker-legacy.tar)" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a docker-archive written by skopeo" {
	run "$GPURUN" --gpus void "$(oci_fixture docker.tar)" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a docker save archive in the Docker 25 layout (OCI layout plus manifest.json)" {
	run "$GPURUN" --gpus void "$(oci_fixture docker25.tar)" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "the image's Entrypoint and Cmd run when no command is given, in its WorkingDir, as its User" {
	run --separate-stderr "$GPURUN" --gpus void "$(oci_fixture oci)"
	assert_success
	assert_output $'cmd-from-config\n/data\n1000'
}

@test "the command line overrides the image: COMMAND replaces Cmd, -w WorkingDir, -u User, -e Env" {
	run --separate-stderr "$GPURUN" --gpus void -w /etc -u 0 -e GPURUN_IMAGE_ENV=from-cli \
		"$(oci_fixture oci)" 'pwd; id -u; echo $GPURUN_IMAGE_ENV; echo $NVIDIA_DRIVER_CAPABILITIES'
	assert_success
	assert_output $'/etc\n0\nfrom-cli\nutility'
}

@test "the image's Env reaches GPU selection: NVIDIA_VISIBLE_DEVICES=all selects every GPU" {
	local fake
	fake=$(fake_driver four) || skip "no fake NVIDIA driver (build it as root: tests/run-bats.sh)"
	run --separate-stderr "$GPURUN" --driver-root "$fake" -u 0 "$(oci_fixture oci)" 'ls /dev | grep -c "^nvidia[0-9]"'
	assert_success
	assert_output 4
	# --gpus wins over the image's config.
	run --separate-stderr "$GPURUN" --driver-root "$fake" --gpus 1 -u 0 "$(oci_fixture oci)" \
		'ls /dev | grep -c "^nvidia[0-9]"'
	assert_success
	assert_output 1
}

@test "IMAGE@NAME:TAG picks one image of several; without it the error lists them" {
	local two
	two=$(oci_fixture oci-two)
	run --separate-stderr "$GPURUN" --gpus void "$two@one"
	assert_success
	assert_output one
	run --separate-stderr "$GPURUN" --gpus void "$two@two"
	assert_output two
	run --separate-stderr "$GPURUN" --gpus void "$two" true
	assert_gpurun_error 125 "image $two: holds 2 images; pick one with $two@NAME:TAG (one, two)"
	run --separate-stderr "$GPURUN" --gpus void "$two@three" true
	assert_gpurun_error 125 "image $two: no image named three (there are: one, two)"
}

# The host's platform as the OCI names it, and one that is not the host's.
host_oci_platform() {
	case $(uname -m) in
	x86_64) echo linux/amd64 ;;
	aarch64) echo linux/arm64 ;;
	*) return 1 ;;
	esac
}

@test "a local multi-platform OCI layout gives this machine's platform, wherever it is listed" {
	local host other
	host=$(host_oci_platform) || skip "a platform name for $(uname -m)"
	other=linux/s390x
	build_oci_platforms "$BATS_TEST_TMPDIR/multi" "$other" "$host"
	run --separate-stderr "$GPURUN" --gpus void "$BATS_TEST_TMPDIR/multi" 'echo "$GPURUN_PLATFORM"'
	assert_success
	assert_output "$host"
}

@test "a local multi-platform OCI layout follows uname: linux/386 under setarch i686" {
	[[ $(uname -m) == x86_64 ]] || skip "setarch i686 is an x86_64 kernel's"
	build_oci_platforms "$BATS_TEST_TMPDIR/multi" linux/amd64 linux/386
	run --separate-stderr setarch i686 "$GPURUN" --gpus void "$BATS_TEST_TMPDIR/multi" 'echo "$GPURUN_PLATFORM"'
	assert_success
	assert_output linux/386
}

@test "a local multi-platform OCI layout without this machine's platform is refused, naming those it holds" {
	local host
	host=$(host_oci_platform) || skip "a platform name for $(uname -m)"
	build_oci_platforms "$BATS_TEST_TMPDIR/multi" linux/s390x linux/riscv64
	run --separate-stderr "$GPURUN" --gpus void "$BATS_TEST_TMPDIR/multi" true
	assert_gpurun_error 125 "image $BATS_TEST_TMPDIR/multi: no image for platform $host (there are: linux/s390x, linux/riscv64)"
}

@test "a docker archive of two images: NAME:TAG as in RepoTags, with or without docker.io/" {
	local two
	two=$(oci_fixture docker-two.tar)
	run --separate-stderr "$GPURUN" --gpus void "$two@gpurun/two:2"
	assert_success
	assert_output two
	run --separate-stderr "$GPURUN" --gpus void "$two@docker.io/gpurun/one:1"
	assert_output one
	run --separate-stderr "$GPURUN" --gpus void "$two" true
	assert_gpurun_error 125 "holds 2 images" "docker.io/gpurun/one:1, docker.io/gpurun/two:2"
}

@test "--dry-run shows the layers and the config values, and writes nothing" {
	run --separate-stderr "$GPURUN" --dry-run --gpus void "$(oci_fixture docker.tar)"
	assert_success
	assert_line --regexp '^# image .*docker.tar@docker.io/gpurun/test:latest: 3 layers$'
	assert_line --partial "gpurun plan: cannot run as a script: launch it once to fill the cache"
	# Each layer by its digest, where step 2 mounts it.
	assert_line --regexp '^mkdir "\$S/layers/2"; mount --bind -o ro "\$L"/[0-9a-f]{64} "\$S/layers/2"$'
	assert_line --partial "#   Entrypoint: /bin/sh -c"
	assert_line --partial "#   Cmd: 'echo cmd-from-config; pwd; id -u'"
	assert_line "#   WorkingDir: /data"
	assert_line "#   User: 1000:1000"
	assert_line --partial "GPURUN_IMAGE_ENV=from-config"
	assert_line --regexp "(^setpriv |^	).* \"\\\$S/go\" /data /bin/sh -c 'echo cmd-from-config; pwd; id -u'$"
	assert_not_exist "$GPURUN_CACHE"
}

@test "--verbose says where the layers come from, then the same steps" {
	run --separate-stderr "$GPURUN" --verbose --gpus void "$(oci_fixture oci)" true
	assert_success
	[[ "$stderr" == *"+ # image "*": 3 layers, unpacked into the cache"* ]] || fail "$stderr"
	[[ "$stderr" == *'+ mount -t overlay -o "nosuid,nodev,lowerdir=$S/layers/2:$S/layers/1:$S/layers/0,'* ]] ||
		fail "$stderr"
	run --separate-stderr "$GPURUN" --verbose --gpus void "$(oci_fixture oci)" true
	[[ "$stderr" == *": 3 layers, from the cache"* ]] || fail "$stderr"
}

# ---- hostile images -----------------------------------------------------------------

# hostile KIND FRAGMENT...: the image is refused with exit 125 and one line
# holding each FRAGMENT, and neither the host nor the cache keeps anything.
hostile() {
	local kind=$1 img
	shift
	img=$(oci_fixture "hostile-$kind.tar") || fail "cannot build hostile-$kind.tar"
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	run --separate-stderr "$GPURUN" --gpus void "$img" true
	assert_gpurun_error 125 "$img" "$@"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
	assert_cache_consistent
	run find "$GPURUN_CACHE/images" "$GPURUN_CACHE/sources" "$GPURUN_CACHE/tmp" -mindepth 1
	assert_output ""
}

@test "a manifest.json layer path with ../ is refused" {
	hostile manifest-traversal "manifest.json: layer path '../../etc/passwd' leaves the archive"
}

@test "a manifest.json layer path that is absolute is refused" {
	hostile manifest-absolute "manifest.json: layer path '/etc/passwd' leaves the archive"
}

@test "a manifest.json config path with ../ is refused" {
	hostile manifest-config-traversal "manifest.json: config path '../../etc/passwd' leaves the archive"
}

@test "an archive member named with ../ is refused" {
	hostile index-traversal "path contains '..'"
}

@test "a layer that is a symbolic link member is refused" {
	hostile member-symlink "is a link"
}

@test "a layer that is a hard link member is refused" {
	hostile member-hardlink "is a link"
}

@test "a digest that is not sha256: and 64 hex digits is refused" {
	hostile bad-digest "invalid digest 'sha256:xyz' (want sha256: and 64 hex digits)"
	hostile bad-digest-md5 "invalid digest 'md5:"
	hostile digest-traversal "invalid digest 'sha256:../"
}

@test "a blob that does not match its digest is refused by name, and nothing of it is kept" {
	hostile blob-mismatch "blob sha256:" "content does not match its digest"
}

@test "a layer that does not match the config's diff_id is refused, and nothing of it is kept" {
	hostile diffid-mismatch "content does not match its diff_id sha256:"
}

@test "a whiteout of .. is refused" {
	hostile whiteout-dotdot "whiteout of '..'"
	hostile whiteout-dotdot-dir "whiteout of '..'"
}

@test "a whiteout through a symlink is refused and deletes nothing outside" {
	local canary=$BATS_TEST_TMPDIR/canary img
	mkdir -p "$canary" && echo alive >"$canary/victim"
	img=$BATS_TEST_TMPDIR/ws.tar
	build_hostile_image whiteout-symlink "$img" --link-target="$canary" --victim=victim
	run --separate-stderr "$GPURUN" --gpus void "$img" true
	assert_gpurun_error 125 "whiteout passes through a symlink"
	assert_file_exists "$canary/victim"
	assert_cache_consistent
}

@test "a layer with a whiteout and the opaque marker in one directory leaves only that layer's entries there" {
	local img=$BATS_TEST_TMPDIR/mixed.tar
	build_hostile_image opaque-mixed "$img"
	# ls -A lists what the directory holds, stat -c proves each entry is real:
	# a whiteout left in an opaque directory is listed but cannot be stat'ed.
	run --separate-stderr "$GPURUN" --gpus void "$img" \
		'for d in /data/m1 /data/m2; do echo "$d:" $(ls -A $d); for f in $(ls -A $d); do stat -c "%n %F" "$d/$f"; done; done'
	assert_success
	assert_output "/data/m1: c
/data/m1/c regular file
/data/m2: c
/data/m2/c regular file"
	assert_equal "$stderr" ""
}

@test "a JSON document far above the size cap is refused before it is read" {
	hostile huge-json "index.json is larger than 4194304 bytes"
	hostile huge-json-manifest "manifest.json is larger than 4194304 bytes"
}

@test "a 3 MiB image config is read from a layout directory, an OCI archive (plain, gzip) and a docker save archive" {
	local f img
	for f in oci oci.tar oci.tar.gz docker.tar; do
		img=$BATS_TEST_TMPDIR/big-config.$f
		build_made_image "$img" "$f" --config-size $((3 << 20))
		# A dry run copies nothing out of a compressed archive first.
		run --separate-stderr "$GPURUN" --dry-run --gpus void "$img" true
		assert_success
		run --separate-stderr "$GPURUN" --gpus void "$img" echo ran
		assert_success
		assert_output ran
	done
}

# json_cap_case WHAT: an image whose WHAT (config or manifest) is exactly
# the 4 MiB cap is read, one byte more refused, from every format.
json_cap_case() {
	local f img
	for f in oci oci.tar oci.tar.gz docker.tar; do
		img=$BATS_TEST_TMPDIR/cap.$f
		build_made_image "$img" "$f" "--$1-size" $((4 << 20))
		run --separate-stderr "$GPURUN" --gpus void "$img" echo ran
		assert_success
		assert_output ran
		img=$BATS_TEST_TMPDIR/over.$f
		build_made_image "$img" "$f" "--$1-size" $(((4 << 20) + 1))
		run --separate-stderr "$GPURUN" --gpus void "$img" true
		assert_gpurun_error 125 "image $img: " " is larger than 4194304 bytes"
	done
	assert_cache_consistent
}

@test "an image config of exactly 4 MiB is read, one byte more is refused, from every format" {
	json_cap_case config
}

@test "an image manifest of exactly 4 MiB is read, one byte more is refused, from every format" {
	json_cap_case manifest
}

@test "a manifest with 1000 layers is refused above the cap of 128" {
	hostile many-layers "layers (at most 128)"
}

@test "an OCI layout directory whose blob is a symlink, or whose index.json is huge, is refused" {
	local dir=$BATS_TEST_TMPDIR/layout blob
	cp -a "$(oci_fixture oci)" "$dir"
	blob=$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]+"/index.json"))["manifests"][0]["digest"]; print(m.split(":")[1])' "$dir")
	rm "$dir/blobs/sha256/$blob"
	ln -s /etc/passwd "$dir/blobs/sha256/$blob"
	run --separate-stderr "$GPURUN" --gpus void "$dir" true
	assert_gpurun_error 125 "image $dir: 'blobs/sha256/$blob' is a symbolic link"
	rm -rf "$dir" && cp -a "$(oci_fixture oci)" "$dir"
	python3 -c 'import sys; f=open(sys.argv[1], "w"); f.write("{\"x\": \"" + "a" * (5 << 20) + "\"}")' "$dir/index.json"
	run --separate-stderr "$GPURUN" --gpus void "$dir" true
	assert_gpurun_error 125 "image $dir: index.json is larger than 4194304 bytes"
	assert_cache_consistent
}


# ---- skopeo's dir: layout ------------------------------------------------------

# dir_copy: a private, modifiable copy of the fixture dir; prints its path.
dir_copy() {
	local d=$BATS_TEST_TMPDIR/dirlayout
	cp -r "$(buildah_fixture dir)" "$d" && chmod -R u+w "$d" && printf '%s\n' "$d"
}

# dir_blob DIR N: the hex digest of the dir: layout's layer N (1 is the
# lowest), or of its config for N = config.
dir_blob() {
	python3 -c 'import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
print((m["config"] if sys.argv[2] == "config" else m["layers"][int(sys.argv[2]) - 1])["digest"][7:])' "$1" "$2"
}

# dir_to_v1_0 DIR: the dir: layout DIR as version 1.0 wrote it, every blob
# named HEX.tar.
dir_to_v1_0() {
	local f
	for f in "$1"/*; do
		if [[ $(basename "$f") =~ ^[0-9a-f]{64}$ ]]; then mv "$f" "$f.tar" || return 1; fi
	done
	echo "Directory Transport Version: 1.0" >"$1/version"
}

# dir_refused DIR FRAGMENT...: DIR is refused with exit 125 and one line
# holding each FRAGMENT, and neither the host nor the cache keeps anything.
dir_refused() {
	local dir=$1
	shift
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	run --separate-stderr "$GPURUN" --gpus void "$dir" true
	assert_gpurun_error 125 "$@"
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
	assert_cache_consistent
	run find "$GPURUN_CACHE/images" "$GPURUN_CACHE/sources" "$GPURUN_CACHE/tmp" -mindepth 1
	assert_output ""
}

@test "a dir: layout directory (skopeo copy ... dir:) is read as an image: layers applied with whiteouts and an opaque directory" {
	run "$GPURUN" --gpus void "$(buildah_fixture dir)" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a dir: layout is unpacked into the cache once, then run from it, and cache ls names it as the source" {
	local dir
	dir=$(buildah_fixture dir)
	run --separate-stderr "$GPURUN" --verbose --gpus void "$dir" true
	assert_success
	[[ "$stderr" == *"+ # image $dir: 3 layers, unpacked into the cache"* ]] || fail "$stderr"
	run --separate-stderr "$GPURUN" --verbose --gpus void "$dir" true
	assert_success
	[[ "$stderr" == *"+ # image $dir: 3 layers, from the cache"* ]] || fail "$stderr"
	run --separate-stderr "$GPURUN" cache ls
	assert_success
	assert_line --regexp "^[0-9a-f]{12} .* $dir\$"
}

@test "--dry-run of a dir: layout shows its layers and config values, and writes nothing" {
	local dir
	dir=$(buildah_fixture dir)
	run --separate-stderr "$GPURUN" --dry-run --gpus void "$dir"
	assert_success
	assert_line "# image $dir: 3 layers"
	assert_line --partial "gpurun plan: cannot run as a script: launch it once to fill the cache"
	assert_line --regexp '^mkdir "\$S/layers/2"; mount --bind -o ro "\$L"/[0-9a-f]{64} "\$S/layers/2"$'
	assert_line --partial "#   Cmd: 'echo cmd-from-config; pwd; id -u'"
	assert_line "#   WorkingDir: /data"
	assert_not_exist "$GPURUN_CACHE"
}

@test "a dir: layout runs with --no-cache, unpacked in the run and kept nowhere" {
	run --separate-stderr "$GPURUN" --no-cache --gpus void "$(buildah_fixture dir)" "$LAYERS_CHECK"
	assert_layers_applied
	assert_not_exist "$GPURUN_CACHE"
}

@test "a dir: layout of several platforms (skopeo copy --all) gives this machine's image" {
	local dir host
	host=$(host_oci_platform) || skip "a platform name for $(uname -m)"
	dir=$(dir_copy)
	# What copy --all writes: the index as manifest.json, each image's
	# manifest as HEX.manifest.json.  The other platform's is never read.
	python3 - "$dir" "$host" <<-'PY'
		import hashlib, json, sys
		d, host = sys.argv[1], sys.argv[2]
		raw = open(d + "/manifest.json", "rb").read()
		h = hashlib.sha256(raw).hexdigest()
		open(d + "/" + h + ".manifest.json", "wb").write(raw)
		def entry(digest, p):
		    os_, arch = p.split("/")[:2]
		    return {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + digest,
		            "size": len(raw), "platform": {"os": os_, "architecture": arch}}
		index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
		         "manifests": [entry("0" * 64, "linux/s390x"), entry(h, host)]}
		json.dump(index, open(d + "/manifest.json", "w"))
	PY
	run "$GPURUN" --gpus void "$dir" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a dir: layout of version 1.0, whose blobs are named HEX.tar, is read" {
	local dir
	dir=$(dir_copy)
	dir_to_v1_0 "$dir"
	run "$GPURUN" --gpus void "$dir" "$LAYERS_CHECK"
	assert_layers_applied
}

@test "a dir: layout whose layer blob is missing is refused in one line naming it, and nothing is kept" {
	local dir blob
	dir=$(dir_copy)
	blob=$(dir_blob "$dir" 2)
	rm "$dir/$blob"
	dir_refused "$dir" "image $dir: $blob: No such file or directory"
}

@test "a dir: layout whose layer blob does not match its digest is refused by name, and nothing of it is kept" {
	local dir blob
	dir=$(dir_copy)
	blob=$(dir_blob "$dir" 3)
	cp "$(buildah_fixture dir)/$(dir_blob "$dir" 2)" "$dir/$blob"
	dir_refused "$dir" "image $dir: blob sha256:$blob (layer 3): content does not match its digest"
}

@test "a dir: layout whose config does not match its digest is refused by name" {
	local dir blob
	dir=$(dir_copy)
	blob=$(dir_blob "$dir" config)
	sed -i 's/cmd-from-config/cmd-from-elsewhere/' "$dir/$blob"
	dir_refused "$dir" "image $dir: blob sha256:$blob: content does not match its digest"
}

@test "a dir: layout of version 1.0 whose config does not match its digest is refused by name" {
	local dir blob
	dir=$(dir_copy)
	blob=$(dir_blob "$dir" config)
	dir_to_v1_0 "$dir"
	sed -i 's/cmd-from-config/cmd-from-elsewhere/' "$dir/$blob.tar"
	dir_refused "$dir" "image $dir: blob sha256:$blob: content does not match its digest"
}

@test "a dir: layout whose version gpurun does not read is refused, not run as a root file system" {
	local dir
	dir=$(dir_copy)
	echo "Directory Transport Version: 2.0" >"$dir/version"
	dir_refused "$dir" "image $dir: version 'Directory Transport Version: 2.0': not a dir: layout version gpurun reads (Directory Transport Version: 1.0 or 1.1)"
}

@test "a dir: layout without its manifest.json is refused by name, not run as a root file system" {
	local dir
	dir=$(dir_copy)
	rm "$dir/manifest.json"
	dir_refused "$dir" "image $dir: manifest.json: No such file or directory"
}

@test "a dir: layout holding a Docker schema 1 manifest is refused, with the conversion to use" {
	local dir
	dir=$(dir_copy)
	echo '{"schemaVersion": 1, "mediaType": "application/vnd.docker.distribution.manifest.v1+prettyjws", "fsLayers": []}' \
		>"$dir/manifest.json"
	dir_refused "$dir" "image $dir: manifest.json is not a schema 2 image manifest (media type 'application/vnd.docker.distribution.manifest.v1+prettyjws'; convert it with skopeo copy --format oci)"
}

@test "a dir: layout whose manifest.json is a symbolic link is refused" {
	local dir
	dir=$(dir_copy)
	mv "$dir/manifest.json" "$BATS_TEST_TMPDIR/manifest.json"
	ln -s "$BATS_TEST_TMPDIR/manifest.json" "$dir/manifest.json"
	dir_refused "$dir" "image $dir: 'manifest.json' is a symbolic link"
}

@test "a dir: layout holds one image: IMAGE@NAME:TAG is refused" {
	local dir
	dir=$(buildah_fixture dir)
	run --separate-stderr "$GPURUN" --gpus void "$dir@latest" true
	assert_gpurun_error 125 "image $dir: a dir: layout holds one image; drop @latest"
}
