#!/bin/sh
# Installs the Debian packages gemmd needs to build and test, when any
# is missing. Run as root (or with sudo available) on Debian 12.
set -eu

pkgs="build-essential pkg-config meson ninja-build libuv1-dev libnng-dev
libcjson-dev libcmocka-dev libopenblas-dev"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing:$missing"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
