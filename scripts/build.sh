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
# Meson 1.0 gives ninja no header dependencies for CUDA sources: a CUDA
# object older than any header of the project is rebuilt, so that it
# never keeps a struct's old layout.
for o in $(find "$builddir" -name '*.cu.o' 2>/dev/null); do
	if [ -n "$(find gpu proto sched -name '*.h' -newer "$o" | head -n 1)" ]; then
		rm -f "$o"
	fi
done
ninja -C "$builddir" >/dev/null || ninja -C "$builddir"
