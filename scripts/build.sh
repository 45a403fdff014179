#!/bin/sh
# Configures and builds gemmd into BUILDDIR (default: build); options are
# passed to meson setup. An existing build directory is reconfigured, so
# dependencies installed since (cmocka for the tests, say) are found. The
# CUDA engine is built when the CUDA Toolkit is found.
set -eu
cd "$(dirname "$0")/.."
builddir=${BUILDDIR:-build}
[ -d /usr/local/cuda/bin ] && PATH=/usr/local/cuda/bin:$PATH && export PATH
reconf=""
[ -f "$builddir/build.ninja" ] && reconf="--reconfigure"
meson setup $reconf "$builddir" "$@" >/dev/null ||
	meson setup $reconf "$builddir" "$@"
ninja -C "$builddir" >/dev/null || ninja -C "$builddir"
