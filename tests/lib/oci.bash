# tests/lib/oci.bash — container images in the formats gpurun unpacks: OCI
# image layouts, `docker save` archives (legacy and Docker 25+) and OCI
# archives, built offline from the busybox image of images.bash with
# Debian's umoci and skopeo; what those cannot write (an opaque whiteout, the
# Docker 25 and pre-25 `docker save` layouts, an archive of two images, every
# hostile image) is written by hostile_images.py next to this file.
# Sourced after images.bash (it uses fixture and the busybox image).
#
#   build_oci_layout DIR [TAG]
#       an OCI layout (DIR must not exist) holding one image, ref name TAG
#       (default latest), three gzip layers:
#         1. the busybox rootfs (sh, the applets, probe, alice uid 1000);
#         2. adds /etc/gpurun-layer2, /data/keep/k, /data/gone/g,
#            /data/opaque/old1, /data/opaque/old2, /etc/deleted-later;
#         3. deletes /etc/deleted-later and /data/gone (whiteouts
#            etc/.wh.deleted-later, data/.wh.gone), makes /data/opaque anew
#            with only `new` (opaque whiteout data/opaque/.wh..wh..opq) and
#            adds /etc/gpurun-layer3.
#       Config: Env GPURUN_IMAGE_ENV=from-config, NVIDIA_VISIBLE_DEVICES=all,
#       NVIDIA_DRIVER_CAPABILITIES=utility and $OCI_IMAGE_PATH; Entrypoint
#       ["/bin/sh","-c"]; Cmd ["echo cmd-from-config; pwd; id -u"];
#       WorkingDir /data; User 1000:1000.
#   build_oci_two_images DIR
#       one layout, two images: `one` and `two`, each the busybox layer plus
#       a layer writing /etc/which ("one" / "two"); Cmd ["cat","/etc/which"].
#   build_docker_archive OUT [NAME:TAG [LAYOUT:TAG]]
#       skopeo's docker-archive (the legacy `docker save` layout) of
#       LAYOUT:TAG (default the fixture oci, tag latest), RepoTags NAME:TAG
#       (default gpurun/test:latest; skopeo writes it docker.io/gpurun/test:latest).
#   build_docker_archive_two OUT
#       one docker-archive, two images: gpurun/one:1 and gpurun/two:2 (the
#       images of oci-two).  skopeo writes one image per archive: two of its
#       archives merged.
#   build_docker_legacy_archive OUT [NAME:TAG [LAYOUT:TAG]]
#       the pre-25 `docker save` layout as Docker writes it (regular
#       <id>/layer.tar files, familiar names), by hostile_images.py.
#   build_docker25_archive OUT [NAME:TAG [LAYOUT:TAG]]
#       the Docker 25+ `docker save` layout (OCI layout with uncompressed
#       layers + manifest.json + repositories), by hostile_images.py.
#   build_oci_archive OUT [COMPRESS [LAYOUT:TAG]]
#       skopeo's oci-archive (a tar of the layout); COMPRESS gz, zst, xz or
#       bz2 compresses that tar (default: as OUT's suffix says, else none).
#   build_oci_platforms OUT PLATFORM...
#       a copy of the fixture oci (OUT must not exist) whose tag `latest`
#       names a multi-platform index, one entry per PLATFORM
#       (OS/ARCH[/VARIANT]), in that order: each the fixture's layers and a
#       config saying that platform, with GPURUN_PLATFORM=PLATFORM in its Env.
#   build_hostile_image KIND OUT [OPTION...]
#       hostile_images.py KIND on top of the fixture docker.tar (kinds:
#       `python3 hostile_images.py list`, options: its --help).
#   build_made_image OUT FORMAT [--config-size BYTES] [--manifest-size BYTES] [LAYER...]
#       an image written here without umoci or skopeo, to sizes a test
#       picks: FORMAT oci (a layout directory), oci.tar, oci.tar.gz (the
#       layout packed) or docker.tar (the legacy `docker save` layout, tag
#       gpurun/made:latest).  Layer 1 is the busybox image's tar; each LAYER
#       adds one gzip layer: zeros:PATH:BYTES (a file of zeros) or
#       random:PATH:BYTES (incompressible).  The config (Cmd ["/bin/sh"]) is
#       padded to exactly BYTES with a label when --config-size is given;
#       the manifest (OCI: the image manifest; docker.tar: manifest.json)
#       likewise with --manifest-size (an annotation, or a Comment field).
#       Needs common_images.
#   oci_fixture NAME
#       the shared, cached copy, as images.bash's fixture does it: built once
#       under a flock, published by rename(2), readable by everyone; keyed by
#       a stamp of the busybox image's inputs, this file, hostile_images.py
#       and the tools' versions.  NAME is oci, oci-two, docker.tar,
#       docker-two.tar, docker-legacy.tar, docker25.tar, oci.tar, oci.tar.gz,
#       oci.tar.zst, oci.tar.xz or hostile-KIND.tar (default options).
#       Never modify one: copy it first.
#
# Needs umoci, skopeo, python3 and gzip/zstd/xz (Debian packages umoci
# skopeo python3 gzip zstd xz-utils).  Builds as root or not (umoci
# --rootless: every file of the layers is then owned by 0).

# shellcheck source-path=SCRIPTDIR
# Without a fork: a suite sources this again for every test.
OCI_LIB_DIR=${BASH_SOURCE[0]%/*}
[[ $OCI_LIB_DIR == "${BASH_SOURCE[0]}" ]] && OCI_LIB_DIR=$PWD
[[ $OCI_LIB_DIR == /* ]] || OCI_LIB_DIR=$PWD/$OCI_LIB_DIR
HOSTILE_IMAGES_PY="$OCI_LIB_DIR/hostile_images.py"
OCI_IMAGE_PATH="PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# skopeo needs a signature policy only to be told to ignore it: local
# layouts and archives carry no signatures.
OCI_SKOPEO=(skopeo --insecure-policy)

oci_require_tools() {
	local t missing=()
	for t in umoci skopeo python3; do
		command -v "$t" >/dev/null 2>&1 || missing+=("$t")
	done
	if [[ ${#missing[@]} -gt 0 ]]; then
		echo "oci.bash: missing ${missing[*]}: apt-get install -y umoci skopeo python3" >&2
		return 1
	fi
}

# umoci chowns what it unpacks; an unprivileged builder cannot, so it asks
# for the rootless mode (repack reads the mode back from the bundle).
oci_rootless() {
	[[ $(id -u) -eq 0 ]] || echo --rootless
}

# oci_repack IMAGE BUNDLE WHAT: one more layer on IMAGE from BUNDLE's rootfs;
# --refresh-bundle makes the next repack diff against this state, so each
# call yields exactly the changes made since the last one.
oci_repack() {
	umoci repack --refresh-bundle --history.created_by "gpurun test: $3" --image "$1" "$2"
}

# oci_tmpdir: a scratch directory for bundles; oci_rmtmp DIR removes it,
# rootless bundles included (they may hold directories without u+w).
oci_tmpdir() {
	mktemp -d "${TMPDIR:-/tmp}/gpurun-oci.XXXXXX"
}
oci_rmtmp() {
	chmod -R u+rwX "$1" 2>/dev/null
	rm -rf "$1"
}

build_oci_layout() {
	local dir=$1 tag=${2:-latest} work rc
	oci_require_tools || return 1
	work=$(oci_tmpdir) || return 1
	oci_layout_in "$dir" "$tag" "$work/bundle"
	rc=$?
	oci_rmtmp "$work"
	return $rc
}

oci_layout_in() {
	local dir=$1 tag=$2 b=$3 busybox r
	local img="$dir:$tag"
	busybox=$(fixture busybox) || return 1
	r=$b/rootfs
	# shellcheck disable=SC2046 # oci_rootless prints nothing or one word
	umoci init --layout "$dir" &&
		umoci new --image "$img" &&
		umoci unpack $(oci_rootless) --image "$img" "$b" || return 1

	cp -a "$busybox/." "$r/" &&
		oci_repack "$img" "$b" "layer 1: the busybox rootfs" || return 1

	mkdir -p "$r/data/keep" "$r/data/gone" "$r/data/opaque" &&
		echo layer2 >"$r/etc/gpurun-layer2" &&
		echo k >"$r/data/keep/k" &&
		echo g >"$r/data/gone/g" &&
		echo old1 >"$r/data/opaque/old1" &&
		echo old2 >"$r/data/opaque/old2" &&
		echo deleted-later >"$r/etc/deleted-later" &&
		oci_repack "$img" "$b" "layer 2: files to keep, delete and hide" || return 1

	# umoci's repack writes a removed-and-remade directory as one whiteout
	# per vanished file (data/opaque/.wh.old1, .wh.old2); fix-opaque turns
	# those into the opaque whiteout data/opaque/.wh..wh..opq that Docker
	# and buildah write, so the fixture has both kinds.
	rm -rf "$r/etc/deleted-later" "$r/data/gone" "$r/data/opaque" &&
		mkdir "$r/data/opaque" &&
		echo new >"$r/data/opaque/new" &&
		echo layer3 >"$r/etc/gpurun-layer3" &&
		oci_repack "$img" "$b" "layer 3: whiteouts, an opaque directory" &&
		python3 "$HOSTILE_IMAGES_PY" fix-opaque "$dir" "$tag" /data/opaque || return 1

	umoci config --image "$img" \
		--config.env GPURUN_IMAGE_ENV=from-config \
		--config.env NVIDIA_VISIBLE_DEVICES=all \
		--config.env NVIDIA_DRIVER_CAPABILITIES=utility \
		--config.env "$OCI_IMAGE_PATH" \
		--config.entrypoint /bin/sh --config.entrypoint -c \
		--config.cmd "echo cmd-from-config; pwd; id -u" \
		--config.workingdir /data \
		--config.user 1000:1000 &&
		umoci gc --layout "$dir" &&
		chmod -R a+rX "$dir"
}

build_oci_two_images() {
	local dir=$1 work rc
	oci_require_tools || return 1
	work=$(oci_tmpdir) || return 1
	oci_two_in "$dir" "$work/bundle"
	rc=$?
	oci_rmtmp "$work"
	return $rc
}

oci_two_in() {
	local dir=$1 b=$2 busybox r t
	busybox=$(fixture busybox) || return 1
	r=$b/rootfs
	# shellcheck disable=SC2046
	umoci init --layout "$dir" &&
		umoci new --image "$dir:one" &&
		umoci unpack $(oci_rootless) --image "$dir:one" "$b" &&
		cp -a "$busybox/." "$r/" &&
		oci_repack "$dir:one" "$b" "the busybox rootfs" || return 1
	# No --refresh-bundle from here: both tags get their one layer on top of
	# the same busybox layer.
	echo one >"$r/etc/which" &&
		umoci repack --history.created_by "gpurun test: /etc/which one" --image "$dir:one" "$b" &&
		echo two >"$r/etc/which" &&
		umoci repack --history.created_by "gpurun test: /etc/which two" --image "$dir:two" "$b" || return 1
	for t in one two; do
		umoci config --image "$dir:$t" --config.env "$OCI_IMAGE_PATH" \
			--config.cmd cat --config.cmd /etc/which || return 1
	done
	umoci gc --layout "$dir" && chmod -R a+rX "$dir"
}

# oci_source LAYOUT:TAG|"": the layout image to convert, by default the
# fixture oci's latest.
oci_source() {
	if [[ -n "${1:-}" ]]; then
		printf '%s\n' "$1"
	else
		local d
		d=$(oci_fixture oci) || return 1
		printf '%s:latest\n' "$d"
	fi
}

# Archives are written as OUT.tmp and renamed once complete: an interrupted
# build leaves nothing that looks whole.
build_docker_archive() {
	local out=$1 name=${2:-gpurun/test:latest} src
	oci_require_tools || return 1
	src=$(oci_source "${3:-}") || return 1
	rm -f "$out.tmp"
	"${OCI_SKOPEO[@]}" copy -q "oci:$src" "docker-archive:$out.tmp:$name" &&
		chmod 0644 "$out.tmp" && mv -f "$out.tmp" "$out"
}

build_docker_archive_two() {
	local out=$1 two work rc
	oci_require_tools || return 1
	two=$(oci_fixture oci-two) || return 1
	work=$(oci_tmpdir) || return 1
	build_docker_archive "$work/one.tar" gpurun/one:1 "$two:one" &&
		build_docker_archive "$work/two.tar" gpurun/two:2 "$two:two" &&
		python3 "$HOSTILE_IMAGES_PY" merge-docker "$out" "$work/one.tar" "$work/two.tar"
	rc=$?
	oci_rmtmp "$work"
	return $rc
}

# oci_python_convert WHAT OUT NAME:TAG LAYOUT:TAG: hostile_images.py's
# conversion WHAT (the tag is what follows the last colon).
oci_python_convert() {
	local what=$1 out=$2 name=$3 src=$4
	python3 "$HOSTILE_IMAGES_PY" "$what" "$out" "${src%:*}" "${src##*:}" "$name"
}

build_docker_legacy_archive() {
	local src
	src=$(oci_source "${3:-}") || return 1
	oci_python_convert docker-legacy "$1" "${2:-gpurun/test:latest}" "$src"
}

build_docker25_archive() {
	local src
	src=$(oci_source "${3:-}") || return 1
	oci_python_convert docker25 "$1" "${2:-gpurun/test:latest}" "$src"
}

build_oci_archive() {
	local out=$1 comp=${2:-} src tag work rc
	oci_require_tools || return 1
	src=$(oci_source "${3:-}") || return 1
	tag=${src##*:}
	if [[ -z "$comp" ]]; then
		case $out in
		*.tar.gz | *.tgz) comp=gz ;;
		*.tar.zst) comp=zst ;;
		*.tar.xz) comp=xz ;;
		*.tar.bz2) comp=bz2 ;;
		esac
	fi
	local filter
	case $comp in
	"") filter="cat" ;;
	gz) filter="gzip -n" ;;
	zst) filter="zstd -q" ;;
	xz) filter="xz -T1" ;;
	bz2) filter=bzip2 ;;
	*)
		echo "oci.bash: unknown compression '$comp' (gz, zst, xz, bz2)" >&2
		return 1
		;;
	esac
	work=$(oci_tmpdir) || return 1
	"${OCI_SKOPEO[@]}" copy -q "oci:$src" "oci-archive:$work/oci.tar:$tag" &&
		$filter <"$work/oci.tar" >"$out.tmp" &&
		chmod 0644 "$out.tmp" && mv -f "$out.tmp" "$out"
	rc=$?
	rm -f "$out.tmp"
	oci_rmtmp "$work"
	return $rc
}

build_made_image() {
	python3 - "$BUSYBOX_TAR" "$@" <<-'PY'
		import gzip, hashlib, io, json, os, sys, tarfile
		base, out, fmt, *args = sys.argv[1:]
		config_size, manifest_size, specs = None, None, []
		while args:
		    a = args.pop(0)
		    if a == '--config-size':
		        config_size = int(args.pop(0))
		    elif a == '--manifest-size':
		        manifest_size = int(args.pop(0))
		    else:
		        specs.append(a)
		def sha(b):
		    return hashlib.sha256(b).hexdigest()
		layers = []  # (blob, diff_id hex)
		plain = open(base, 'rb').read()
		layers.append((plain, sha(plain)))
		for spec in specs:
		    kind, path, size = spec.split(':')
		    size = int(size)
		    data = bytes(size) if kind == 'zeros' else os.urandom(size)
		    buf = io.BytesIO()
		    with tarfile.open(fileobj=buf, mode='w', format=tarfile.PAX_FORMAT) as tf:
		        t = tarfile.TarInfo(path)
		        t.size, t.mtime = size, 1700000000
		        tf.addfile(t, io.BytesIO(data))
		    tar = buf.getvalue()
		    layers.append((gzip.compress(tar, compresslevel=6, mtime=0), sha(tar)))
		def config(pad):
		    c = {'architecture': 'amd64', 'os': 'linux',
		         'config': {'Cmd': ['/bin/sh'], 'Labels': {'pad': 'p' * pad}},
		         'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + d for _, d in layers]}}
		    return json.dumps(c, separators=(',', ':')).encode()
		cfg = config(0)
		if config_size is not None:
		    cfg = config(config_size - len(cfg))
		    assert len(cfg) == config_size
		members = {}
		if fmt == 'docker.tar':
		    members['manifest.json'] = b''  # the first member, as the probe expects
		    names = []
		    for blob, _ in layers:
		        names.append(sha(blob) + '/layer.tar')
		        members[names[-1]] = blob
		    members[sha(cfg) + '.json'] = cfg
		    def docker_manifest(pad):
		        return json.dumps([{'Config': sha(cfg) + '.json', 'RepoTags': ['gpurun/made:latest'],
		                            'Layers': names, 'Comment': 'p' * pad}]).encode()
		    mraw = docker_manifest(0)
		    if manifest_size is not None:
		        mraw = docker_manifest(manifest_size - len(mraw))
		        assert len(mraw) == manifest_size
		    members['manifest.json'] = mraw
		else:
		    def desc(mt, b):
		        members['blobs/sha256/' + sha(b)] = b
		        return {'mediaType': mt, 'digest': 'sha256:' + sha(b), 'size': len(b)}
		    manifest = {'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',
		        'config': desc('application/vnd.oci.image.config.v1+json', cfg),
		        'layers': [desc('application/vnd.oci.image.layer.v1.tar' + ('' if i == 0 else '+gzip'), b)
		                   for i, (b, _) in enumerate(layers)]}
		    manifest['annotations'] = {'pad': ''}
		    mraw = json.dumps(manifest).encode()
		    if manifest_size is not None:
		        manifest['annotations']['pad'] = 'p' * (manifest_size - len(mraw))
		        mraw = json.dumps(manifest).encode()
		        assert len(mraw) == manifest_size
		    m = desc('application/vnd.oci.image.manifest.v1+json', mraw)
		    m['annotations'] = {'org.opencontainers.image.ref.name': 'latest'}
		    members['index.json'] = json.dumps({'schemaVersion': 2, 'manifests': [m]}).encode()
		    members['oci-layout'] = b'{"imageLayoutVersion":"1.0.0"}'
		if fmt == 'oci':
		    for name, b in members.items():
		        os.makedirs(os.path.join(out, os.path.dirname(name)), exist_ok=True)
		        with open(os.path.join(out, name), 'wb') as f:
		            f.write(b)
		    sys.exit(0)
		mode = {'oci.tar': 'w', 'docker.tar': 'w', 'oci.tar.gz': 'w:gz'}[fmt]
		with tarfile.open(out, mode) as tf:
		    for name, b in members.items():
		        t = tarfile.TarInfo(name)
		        t.size, t.mtime, t.mode = len(b), 1700000000, 0o644
		        tf.addfile(t, io.BytesIO(b))
	PY
}

build_oci_platforms() {
	local out=$1 src
	shift
	src=$(oci_fixture oci) || return 1
	cp -r "$src" "$out" && chmod -R u+w "$out" || return 1
	python3 - "$out" "$@" <<-'PY'
		import hashlib, json, os, sys
		d, platforms = sys.argv[1], sys.argv[2:]
		def path(desc):
		    return os.path.join(d, 'blobs/sha256', desc['digest'][7:])
		def blob(data):
		    h = hashlib.sha256(data).hexdigest()
		    with open(os.path.join(d, 'blobs/sha256', h), 'wb') as f:
		        f.write(data)
		    return {'digest': 'sha256:' + h, 'size': len(data)}
		index = json.load(open(os.path.join(d, 'index.json')))
		mdesc = [m for m in index['manifests']
		         if m.get('annotations', {}).get('org.opencontainers.image.ref.name') == 'latest'][0]
		manifest = json.load(open(path(mdesc)))
		config = json.load(open(path(manifest['config'])))
		entries = []
		for p in platforms:
		    os_, arch, *variant = p.split('/')
		    pf = {'os': os_, 'architecture': arch}
		    if variant:
		        pf['variant'] = variant[0]
		    c = dict(config, **pf)
		    c['config'] = dict(config.get('config', {}))
		    c['config']['Env'] = c['config'].get('Env', []) + ['GPURUN_PLATFORM=' + p]
		    m = dict(manifest, config=dict(manifest['config'], **blob(json.dumps(c).encode())))
		    entries.append(dict(blob(json.dumps(m).encode()), mediaType=mdesc['mediaType'], platform=pf))
		mt = 'application/vnd.oci.image.index.v1+json'
		nested = {'schemaVersion': 2, 'mediaType': mt, 'manifests': entries}
		ndesc = dict(blob(json.dumps(nested).encode()), mediaType=mt,
		             annotations={'org.opencontainers.image.ref.name': 'latest'})
		json.dump({'schemaVersion': 2, 'manifests': [ndesc]}, open(os.path.join(d, 'index.json'), 'w'))
	PY
}

build_hostile_image() {
	local kind=$1 out=$2 base
	shift 2
	base=$(oci_fixture docker.tar) || return 1
	python3 "$HOSTILE_IMAGES_PY" "$@" "$kind" "$out" "$base"
}

# The stamp: what the OCI fixtures are made from.  images_stamp covers the
# busybox image; the tools' versions decide the bytes they write.  Not
# python3's: root's and the test user's PATH may find different ones, and
# the stamp must be the same for both to share the fixtures.
oci_stamp() {
	{
		images_stamp
		cat "$OCI_LIB_DIR/oci.bash" "$HOSTILE_IMAGES_PY"
		umoci --version
		skopeo --version
	} 2>/dev/null | sha256sum | cut -c1-12
}

# Where the fixtures are: images.bash's keyed_init and keyed_fixture, in
# $TESTS_BUILD/oci-images/KEY (beside images.bash's, not inside: each kind
# deletes every other key in its directory).
oci_init() {
	[[ -n "${OCI_IMAGES_BUILD:-}" ]] || keyed_init oci-images OCI_IMAGES "$(oci_stamp)"
}

oci_fixture() {
	oci_init && keyed_fixture oci-images OCI_IMAGES "$1" oci_fixture_build
}

oci_fixture_build() {
	local name=$1 out=$2
	case $name in
	oci) build_oci_layout "$out" latest ;;
	oci-two) build_oci_two_images "$out" ;;
	docker.tar) build_docker_archive "$out" ;;
	docker-two.tar) build_docker_archive_two "$out" ;;
	docker-legacy.tar) build_docker_legacy_archive "$out" ;;
	docker25.tar) build_docker25_archive "$out" ;;
	oci.tar) build_oci_archive "$out" "" ;;
	oci.tar.gz | oci.tar.zst | oci.tar.xz) build_oci_archive "$out" "${name#oci.tar.}" ;;
	hostile-*.tar)
		local kind=${name#hostile-}
		build_hostile_image "${kind%.tar}" "$out"
		;;
	*)
		echo "oci.bash: unknown fixture $name" >&2
		return 1
		;;
	esac
}

# Every fixture but the hostile ones (built on demand), ahead of a run:
#   bash tests/lib/oci.bash all
OCI_ALL=(oci oci-two docker.tar docker-two.tar docker-legacy.tar docker25.tar
	oci.tar oci.tar.gz oci.tar.zst oci.tar.xz)

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	set -eu
	: "${TESTS_BUILD:=$OCI_LIB_DIR/../build}"
	mkdir -p "$TESTS_BUILD"
	TESTS_BUILD=$(cd "$TESTS_BUILD" && pwd)
	# shellcheck source=images.bash
	declare -F fixture >/dev/null || source "$OCI_LIB_DIR/images.bash"
	case ${1:-all} in
	all) for f in "${OCI_ALL[@]}"; do oci_fixture "$f"; done ;;
	*) for f in "$@"; do oci_fixture "$f"; done ;;
	esac
fi
