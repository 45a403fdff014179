#!/bin/sh
# Configures (once) and builds gemmd into BUILDDIR (default: build).
# The CUDA engine is built when the CUDA Toolkit is found.
set -eu
cd "$(dirname "$0")/.."
builddir=${BUILDDIR:-build}
[ -d /usr/local/cuda/bin ] && PATH=/usr/local/cuda/bin:$PATH && export PATH
if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" "$@" >/dev/null ||
		meson setup "$builddir" "$@"
fi
ninja -C "$builddir" >/dev/null || ninja -C "$builddir"
