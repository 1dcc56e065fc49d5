#!/bin/sh
# Install the Debian packages named on the command line that are missing.
# Used by `make demo`, `make check` and `make bench` so that the README's two
# commands work on a fresh Debian 12 machine.  Needs root (or sudo) only when
# something is actually missing.
set -eu
missing=""
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "gpurun: installing missing Debian packages:$missing"
if [ "$(id -u)" = 0 ]; then
	SUDO=""
elif command -v sudo >/dev/null 2>&1; then
	SUDO="sudo"
else
	echo "gpurun: please install as root: apt-get install -y$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
