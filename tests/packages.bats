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

setup_file() {
	require_gpurun
	DEBIAN_TGZ=$(bash "$BATS_TEST_DIRNAME/lib/debian_minbase.sh" 2>"$BATS_FILE_TMPDIR/minbase.err") ||
		skip "no Debian minbase image: $(tail -n1 "$BATS_FILE_TMPDIR/minbase.err") (built as root by tests/run-bats.sh)"
	export DEBIAN_TGZ
	# The repository: one package with a program and a data file.
	REPO=$BATS_FILE_TMPDIR/repo
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
	chmod -R a+rX "$BATS_FILE_TMPDIR"
	export REPO
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
		assert_line --partial "[ ! -d etc/apt/apt.conf.d ] || printf 'APT::Sandbox::User \"root\";\\n' > etc/apt/apt.conf.d/00gpurun-single-id"
	else
		refute_line --partial "APT::Sandbox"
	fi
}
