#!/usr/bin/env bash
# tests/lib/debian_minbase.sh — a Debian 12 minbase root file system made by
# debootstrap, as a .tar.gz kept OUTSIDE the clone (downloaded fixtures
# survive `git clean` and fresh clones), keyed by suite, architecture and
# debootstrap's version, built once and reused.  Prints the archive's path.
# Needs root the first time (debootstrap); later calls only read.
#
#   tests/lib/debian_minbase.sh            build when missing, print the path
#   GPURUN_TEST_CACHE=/var/cache/gpurun-test (where downloaded fixtures live)
#   DEBIAN_MIRROR=URL (default: the host's own Debian mirror, else deb.debian.org)
set -euo pipefail

cache=${GPURUN_TEST_CACHE:-/var/cache/gpurun-test}/debian
suite=bookworm
arch=$(dpkg --print-architecture)
ver=$(dpkg-query -W -f='${Version}' debootstrap 2>/dev/null || echo none)
out=$cache/$suite-minbase-$arch-debootstrap_$ver.tar.gz

if [[ -s $out ]]; then
	echo "$out"
	exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
	echo "debian_minbase: $out is missing and building it needs root (debootstrap)" >&2
	exit 1
fi
command -v debootstrap >/dev/null || {
	echo "debian_minbase: debootstrap is not installed" >&2
	exit 1
}

mirror() {
	local m
	m=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | awk '{print $2}' |
		grep -v -- '-security' | grep -m1 debian || true)
	[[ -n $m ]] || m=$(grep -hs '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk '{print $2}' | grep -v -- '-security' | grep -m1 debian || true)
	echo "${m:-http://deb.debian.org/debian}"
}

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
m=${DEBIAN_MIRROR:-$(mirror)}
echo "debian_minbase: first fetch: debootstrap --variant=minbase $suite from $m (once; kept in $cache)" >&2
if ! debootstrap --variant=minbase "$suite" "$tmp/root" "$m" >"$tmp/log" 2>&1 </dev/null; then
	echo "debian_minbase: debootstrap failed; last lines:" >&2
	tail -n 5 "$tmp/log" >&2
	exit 1
fi
tar --numeric-owner -C "$tmp/root" -czf "$tmp/out.tar.gz" .
mv "$tmp/out.tar.gz" "$out"
echo "debian_minbase: first fetch took $((SECONDS - start)) s" >&2
echo "$out"
