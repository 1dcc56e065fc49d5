#!/usr/bin/env bats
# Package managers in containers: apt-get update and apt-get install from a
# local repository inside a Debian 12 minbase image (debootstrap's, kept
# outside the clone by tests/lib/debian_minbase.sh), as root and, the point
# of this suite, unprivileged.  Unprivileged with one id mapped, apt's switch
# to _apt (setgroups, setgid, setuid) and dpkg's chown succeed doing nothing
# (the seccomp filter of the id calls, ns/security.c).  No network: the
# repository is a directory the test builds with dpkg-deb and
# dpkg-scanpackages, bound into the container read-only.

load lib/common
load lib/subuser

setup_file() {
	require_gpurun
	DEBIAN_TGZ=$(bash "$BATS_TEST_DIRNAME/lib/debian_minbase.sh" 2>"$BATS_FILE_TMPDIR/minbase.err") ||
		skip "no Debian minbase image: $(tail -n1 "$BATS_FILE_TMPDIR/minbase.err") (built as root by tests/run-bats.sh)"
	export DEBIAN_TGZ
	# Readable by every user the suite runs (bats' own directories are not).
	SHARED=$(mktemp -d "${TMPDIR:-/tmp}/gpurun-packages.XXXXXX")
	chmod 0755 "$SHARED"
	export SHARED
	# The repository: one package with a program and a data file.
	REPO=$SHARED/repo
	local pkg=$BATS_FILE_TMPDIR/pkg
	mkdir -p "$pkg/DEBIAN" "$pkg/usr/bin" "$pkg/var/lib/gpurun-hello" "$REPO"
	cat >"$pkg/DEBIAN/control" <<-'CTL'
		Package: gpurun-hello
		Version: 1.0
		Architecture: all
		Maintainer: gpurun tests <tests@gpurun.invalid>
		Description: a program installed by the package-manager tests
	CTL
	printf '#!/bin/sh\necho hello from a package\n' >"$pkg/usr/bin/gpurun-hello"
	chmod 0755 "$pkg/usr/bin/gpurun-hello"
	echo state >"$pkg/var/lib/gpurun-hello/state"
	dpkg-deb --root-owner-group -Zgzip --build "$pkg" "$REPO/gpurun-hello_1.0_all.deb" >/dev/null
	(cd "$REPO" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null)
	chmod -R a+rX "$REPO"
	export REPO
}

teardown_file() {
	[[ -z ${SHARED:-} ]] || rm -rf "$SHARED"
}

# apt_in_container ARGS...: apt-get update and install from /repo, then run
# the installed program.
APT_SCRIPT='set -e
echo "deb [trusted=yes] file:/repo ./" >/etc/apt/sources.list
rm -f /etc/apt/sources.list.d/*
apt-get -q update >/tmp/update.log 2>&1 || { cat /tmp/update.log; exit 1; }
apt-get -q install -y gpurun-hello >/tmp/install.log 2>&1 || { cat /tmp/install.log; exit 1; }
gpurun-hello
id -u'

@test "apt-get update and apt-get install work in a Debian image, and the program runs" {
	run "$GPURUN" -v "$REPO:/repo:ro" "$DEBIAN_TGZ" sh -c "$APT_SCRIPT"
	assert_success
	assert_line --index 0 "hello from a package"
	assert_line --index 1 0
}

@test "unprivileged, setgroups, setuid and chown to an unmapped id succeed and change nothing" {
	skip_unless_user "the emulation is for a single-id user namespace"
	run "$GPURUN" "$DEBIAN_TGZ" sh -c 'touch /f && chown 42:42 /f && stat -c "%u:%g" /f &&
		setpriv --reuid 42 --regid 42 --clear-groups id -u'
	assert_success
	assert_line --index 0 "0:0"
	# The switch "succeeded" and nothing changed: there is no uid 42 here.
	assert_line --index 1 0
}

@test "as root, chown and setuid are real: no emulation" {
	skip_unless_root
	run "$GPURUN" "$DEBIAN_TGZ" sh -c 'touch /f && chown 42:42 /f && stat -c "%u:%g" /f &&
		setpriv --reuid 42 --regid 42 --clear-groups id -u'
	assert_success
	assert_line --index 0 "42:42"
	assert_line --index 1 42
}

@test "unprivileged, an image without apt gets no apt configuration" {
	skip_unless_user "the apt setting is for a single-id user namespace"
	common_images
	run "$GPURUN" "$BUSYBOX_TGZ" sh -c '[ ! -e /etc/apt ] && echo no-apt'
	assert_success
	assert_output no-apt
}

@test "the plan shows the apt setting only when one id is mapped" {
	run --separate-stderr "$GPURUN" --dry-run "$DEBIAN_TGZ" true
	assert_success
	if [[ $GPURUN_TEST_MODE == user ]]; then
		assert_line --regexp "^write_if_dir etc/apt/apt.conf.d/00gpurun-single-id [0-9]+ body_00gpurun_single_id "
		assert_line --partial "body_00gpurun_single_id() { cat <<"
		assert_line 'APT::Sandbox::User "root";'
	else
		refute_line --partial "APT::Sandbox"
	fi
}

# ---- a caller with subordinate id ranges (/etc/subuid, /etc/subgid) ------------
# Run by the root suite as GPURUN_TEST_SUBUSER, an ordinary user to whom
# useradd gave ranges (tests/run-bats.sh creates it); newuidmap and
# newgidmap come from Debian's uidmap.  Its cache unpacks images under the
# same map (an area of their own: rootfs/cache/cache.c), so that files keep the
# image's owners.

# as_subuser CMD...: CMD as the subordinate user (lib/subuser.bash), with a
# cache and TMPDIR that the file's tests share (each unpack of the Debian
# image under the map costs seconds), or the test's own after
# fresh_subuser_cache, for a test that looks at or changes the cache itself.
as_subuser() {
	subuser_run "$(sub_home)" "$@"
}

sub_home() {
	echo "$SHARED/subuser-${SUB_SLOT:-shared}"
}

fresh_subuser_cache() {
	SUB_SLOT=$BATS_TEST_NUMBER
}

need_subuser() {
	subuser_need
	as_subuser test -x "$GPURUN" -a -r "$DEBIAN_TGZ" || skip "$SUBUSER cannot run $GPURUN or read the image"
}

@test "with subordinate ranges and uidmap, an unprivileged container gets the full id map podman makes" {
	need_subuser
	run as_subuser "$GPURUN" "$DEBIAN_TGZ" cat /proc/self/uid_map
	assert_success
	assert_line --index 0 --regexp "^ +0 +$(id -u "$SUBUSER") +1$"
	assert_line --index 1 --regexp "^ +1 +$SUB_START +$SUB_COUNT$"
}

@test "with subordinate ranges, chown and setuid are real, and apt needs no setting" {
	need_subuser
	run as_subuser "$GPURUN" "$DEBIAN_TGZ" sh -c 'touch /f && chown 42:42 /f && stat -c "%u:%g" /f &&
		setpriv --reuid 42 --regid 42 --clear-groups id -u; ls /etc/apt/apt.conf.d'
	assert_success
	assert_line --index 0 "42:42"
	assert_line --index 1 42
	refute_line 00gpurun-single-id
}

# apt_image: the minbase image as Docker's Debian images have it after
# apt ran: apt's partial directories belong to _apt (0700), one with a file
# in it; _apt's uid read from the image's own /etc/passwd into APT_UID.
# They come first in the archive, so that an unpack cut short early has
# made them.  Plain tar, made once per file at $SHARED/debian-apt.tar.
apt_image() {
	APT_TAR=$SHARED/debian-apt.tar
	APT_UID=$(tar -xOzf "$DEBIAN_TGZ" ./etc/passwd | awk -F: '$1 == "_apt" { print $3 }')
	[[ -n $APT_UID && $APT_UID != 0 ]] || fail "no _apt user in the image's /etc/passwd"
	[[ -f $APT_TAR ]] && return 0
	local st=$BATS_FILE_TMPDIR/apt-stage rest=$BATS_FILE_TMPDIR/minbase.tar
	mkdir -p "$st/var/cache/apt/archives/partial" "$st/var/lib/apt/lists/partial"
	echo partial >"$st/var/lib/apt/lists/partial/deb.debian.org_InRelease"
	tar -cf "$APT_TAR.tmp" -C "$st" --numeric-owner --owner="$APT_UID" --group=0 --mode=0700 --no-recursion \
		./var/cache/apt/archives/partial ./var/lib/apt/lists/partial
	tar -rf "$APT_TAR.tmp" -C "$st" --numeric-owner --owner="$APT_UID" --group=0 --mode=0600 \
		./var/lib/apt/lists/partial/deb.debian.org_InRelease
	gzip -dc "$DEBIAN_TGZ" >"$rest"
	tar --delete -f "$rest" ./var/cache/apt/archives/partial ./var/lib/apt/lists/partial
	tar -A -f "$APT_TAR.tmp" "$rest"
	rm -f "$rest"
	chmod 0644 "$APT_TAR.tmp"
	mv "$APT_TAR.tmp" "$APT_TAR"
}

# sub_cache: the subordinate user's cache of this test (as_subuser's).
sub_cache() {
	echo "$(sub_home)/cache"
}

@test "with subordinate ranges, apt-get update and install switch to _apt for real and work" {
	need_subuser
	apt_image
	run as_subuser "$GPURUN" -v "$REPO:/repo:ro" "$APT_TAR" sh -c "$APT_SCRIPT"
	assert_success
	assert_line --index 0 "hello from a package"
}

@test "with subordinate ranges, files keep the image's owners inside: apt's partial directory is _apt's" {
	need_subuser
	apt_image
	run as_subuser "$GPURUN" "$APT_TAR" stat -c '%u:%g %a' /var/cache/apt/archives/partial \
		/var/lib/apt/lists/partial/deb.debian.org_InRelease
	assert_success
	assert_output "$APT_UID:0 700"$'\n'"$APT_UID:0 600"
}

@test "with subordinate ranges, --no-cache keeps the image's owners too" {
	need_subuser
	apt_image
	run as_subuser "$GPURUN" --no-cache "$APT_TAR" stat -c '%u:%g %a' /var/cache/apt/archives/partial \
		/var/lib/apt/lists/partial/deb.debian.org_InRelease
	assert_success
	assert_output "$APT_UID:0 700"$'\n'"$APT_UID:0 600"
	# The plan says so: GNU tar keeps the owners, as root of the same map.
	run as_subuser "$GPURUN" --dry-run --no-cache "$APT_TAR" true
	assert_success
	assert_line --partial "tar -C \"\$S/root\" --exclude='dev/*' -xpf "
	# A layered image, whose layers are unpacked in the run.
	local img=$SHARED/owned-docker.tar
	python3 - "$(fixture busybox.tar)" "$img" <<-'EOF'
		import hashlib, io, json, sys, tarfile
		buf = io.BytesIO(open(sys.argv[1], 'rb').read())
		with tarfile.open(fileobj=buf, mode='a') as tf:
		    t = tarfile.TarInfo('owned'); t.uid, t.gid, t.mode, t.size = 42, 43, 0o640, 2
		    tf.addfile(t, io.BytesIO(b'x\n'))
		layer = buf.getvalue()
		diff = hashlib.sha256(layer).hexdigest()
		config = json.dumps({'architecture': 'amd64', 'os': 'linux', 'config': {'Cmd': ['/bin/sh']},
		                     'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + diff]}}).encode()
		cid = hashlib.sha256(config).hexdigest()
		manifest = json.dumps([{'Config': cid + '.json', 'RepoTags': ['owned:latest'],
		                        'Layers': [diff + '/layer.tar']}]).encode()
		with tarfile.open(sys.argv[2], 'w') as tf:
		    for name, data in ((diff + '/layer.tar', layer), (cid + '.json', config), ('manifest.json', manifest)):
		        t = tarfile.TarInfo(name); t.size, t.mode = len(data), 0o644
		        tf.addfile(t, io.BytesIO(data))
	EOF
	run as_subuser "$GPURUN" --no-cache "$img" stat -c '%u:%g %a' /owned
	assert_success
	assert_output "42:43 640"
}

@test "a launch with another id map is not served the tree unpacked under the range" {
	need_subuser
	fresh_subuser_cache
	apt_image
	run as_subuser "$GPURUN" "$APT_TAR" stat -c %u /var/cache/apt/archives/partial
	assert_success
	assert_output "$APT_UID"
	# The same user and cache, one id mapped: its own unpack, files its own.
	run as_subuser env GPURUN_NO_SUBID=1 "$GPURUN" "$APT_TAR" sh -c \
		'stat -c %u /var/cache/apt/archives/partial; wc -l </proc/self/uid_map'
	assert_success
	assert_output $'0\n1'
	# And back: the range's tree is still the range's.
	run as_subuser "$GPURUN" "$APT_TAR" stat -c %u /var/cache/apt/archives/partial
	assert_success
	assert_output "$APT_UID"
}

@test "cache ls shows the id map each image was unpacked under" {
	need_subuser
	fresh_subuser_cache
	apt_image
	run as_subuser "$GPURUN" "$APT_TAR" true
	assert_success
	run as_subuser env GPURUN_NO_SUBID=1 "$GPURUN" "$APT_TAR" true
	assert_success
	run as_subuser "$GPURUN" cache ls
	assert_success
	assert_line --index 0 --regexp '^IMAGE ID +SIZE +LAST USE +IDS +SOURCE$'
	assert_line --regexp "^[0-9a-f]{12} +[0-9.]+MB +[0-9-]{10} [0-9:]{5} +$SUB_START\+$SUB_COUNT +$APT_TAR$"
	assert_line --regexp "^[0-9a-f]{12} +[0-9.]+MB +[0-9-]{10} [0-9:]{5} +one id +$APT_TAR$"
	run as_subuser "$GPURUN" cache ls --json
	assert_success
	run python3 -c 'import json, sys
for i in json.load(sys.stdin)["images"]:
	m = i["id_map"]
	print("none" if m is None else "%d+%d %d+%d" % (m["uid_start"], m["uid_count"], m["gid_start"], m["gid_count"]))' <<<"$output"
	assert_success
	assert_line "none"
	assert_line "$SUB_START+$SUB_COUNT $SUBG_START+$SUBG_COUNT"
}

# assert_cache_empty_of_trees: no layer, record or partial unpack is left
# in any area of the subordinate user's cache, and no file of it belongs to
# anyone but that user.
assert_cache_empty_of_trees() {
	local c u=$SUBUSER
	c=$(sub_cache)
	run bash -c 'cd "$1" && find . -mindepth 1 \( -path "*/layers/*" -o -path "*/images/*" -o -path "*/tmp/*" \)' - "$c"
	assert_success
	assert_output ""
	run find "$c" ! -user "$u"
	assert_success
	assert_output ""
}

# apt_tree_cached: the apt image launched once by the subordinate user, in
# a fresh cache of its own: its tree unpacked under the range.  The host's
# state before, in $BATS_TEST_TMPDIR/host.before.
apt_tree_cached() {
	need_subuser
	fresh_subuser_cache
	apt_image
	host_snapshot "$BATS_TEST_TMPDIR/host.before"
	run as_subuser "$GPURUN" "$APT_TAR" true
	assert_success
}

@test "with subordinate ranges, cache rm removes a tree owned by the range and leaves nothing" {
	apt_tree_cached
	run find "$(sub_cache)" -user "$((SUB_START + APT_UID - 1))"
	assert_output --partial /var/lib/apt/lists/partial/deb.debian.org_InRelease
	local id
	id=$(as_subuser "$GPURUN" cache ls | awk 'NR == 2 { print $1 }')
	run as_subuser "$GPURUN" cache rm "$id"
	assert_success
	assert_output "removed $id"
	assert_cache_empty_of_trees
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "with subordinate ranges, cache prune removes trees owned by the range and leaves nothing" {
	apt_tree_cached
	run as_subuser env GPURUN_NO_SUBID=1 "$GPURUN" "$APT_TAR" true
	assert_success
	run as_subuser "$GPURUN" cache prune --max-size 0
	assert_success
	assert_output "pruned 2 images"
	assert_cache_empty_of_trees
	assert_host_unchanged "$BATS_TEST_TMPDIR/host.before"
}

@test "with subordinate ranges, what a killed unpack left is swept by the next launch, files of the range too" {
	need_subuser
	fresh_subuser_cache
	apt_image
	local c tmp i
	c=$(sub_cache)
	as_subuser setsid "$GPURUN" "$APT_TAR" true &
	local pid=$!
	# Until the unpack has made a file of the range (_apt's), then SIGKILL.
	for ((i = 0; i < 1200; i++)); do
		tmp=$(find "$c"/idmaps/*/tmp -mindepth 1 -user "$((SUB_START + APT_UID - 1))" -print -quit 2>/dev/null || true)
		[[ -n $tmp ]] && break
		kill -0 "$pid" 2>/dev/null || fail "the launch ended before its unpack made a file of the range"
		sleep 0.05
	done
	[[ -n $tmp ]] || fail "no file of the range in $c/idmaps/*/tmp after 60s"
	# gpurun leads its own session (setsid): its process group goes at once.
	local gp
	gp=$(ps -eo pid=,sid=,args= | awk -v g="$GPURUN $APT_TAR true" '$1 == $2 && index($0, g) { print $1 }')
	[[ -n $gp ]] || fail "no gpurun process leading a session"
	kill -KILL -- "-$gp"
	wait "$pid" || true
	run as_subuser "$GPURUN" "$APT_TAR" stat -c %u /var/cache/apt/archives/partial
	assert_success
	assert_output "$APT_UID"
	run find "$c"/idmaps/*/tmp -mindepth 1
	assert_success
	assert_output ""
}

@test "with subordinate ranges, -u 1000:1000 switches to that user inside the full map" {
	need_subuser
	run as_subuser "$GPURUN" -u 1000:1000 "$DEBIAN_TGZ" sh -c 'id -u; id -g; cat /proc/self/uid_map | wc -l'
	assert_success
	assert_output $'1000\n1000\n2'
}

@test "with subordinate ranges, the plan maps them as the launch does" {
	need_subuser
	run as_subuser "$GPURUN" --dry-run "$DEBIAN_TGZ" true
	assert_success
	assert_line --partial "--map-root-user --map-users=$SUB_START,1,$SUB_COUNT --map-groups="
	refute_line --partial "APT::Sandbox"
}
