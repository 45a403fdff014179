#!/bin/sh
# Installs the Debian packages gemmd needs, when any is missing: to build
# and run it, or with --test also what the test suites and CI use. Run as
# root (or with sudo available) on Debian 12.
set -eu

# scdoc: the manual pages (man/*.scd), built when it is found.
build="build-essential pkg-config meson ninja-build libuv1-dev libnng-dev libssl-dev
libcjson-dev libopenblas-dev scdoc"
# cmocka: the unit and integration tests. clang and its runtime (libclang-rt-14-dev): the libFuzzer targets of
# scripts/ci-fuzz.sh. libsystemd-dev: sd_notify and the unit file;
# systemd: systemd-analyze, which checks the unit in the tests.
# openssl: the command makes the certificates of the TLS tests.
# python3-numpy, python3-cffi, python3-pytest: the Python package's
# tests, the BLAS shim's (Debian's numpy calls the system BLAS) and the
# examples; python3-setuptools, python3-pip: `pip install ./python`;
# python3-yaml: the test of contrib/'s alert rules reads them.
# man-db: man(1), which the test of the manual pages renders them with.
# procps: kill(1), which the systemd unit's test copies into its root.
# mount, util-linux: mount(8) and unshare(1), with which the nocuda test
# hides the CUDA libraries from a gemmd.
# debootstrap: CI's check of the Quick start on a fresh Debian root
# (scripts/ci-fresh.sh).
test="libcmocka-dev clang libclang-rt-14-dev libsystemd-dev systemd openssl
python3-numpy python3-cffi python3-pytest python3-setuptools python3-pip
python3-yaml man-db procps debootstrap mount util-linux"
# prometheus: promtool checks /metrics, and the tests run a Prometheus
# of their own that scrapes gemmd. Without the node exporter it
# recommends, which the tests do not need.
test_norec="prometheus"

pkgs=$build
pkgs_norec=""
if [ "${1:-}" = "--test" ]; then
	pkgs="$build $test"
	pkgs_norec=$test_norec
fi

installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"
}
missing=""
norec=""
for p in $pkgs; do
	installed "$p" || missing="$missing $p"
done
for p in $pkgs_norec; do
	installed "$p" || norec="$norec $p"
done
[ -z "$missing$norec" ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing:$missing$norec"
$sudo apt-get update -qq
[ -z "$missing" ] ||
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
[ -z "$norec" ] ||
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
		--no-install-recommends $norec >/dev/null
