#!/bin/sh
# Test 'install': `meson install --destdir` of the build whose directory
# is $1 into a scratch directory, then each installed piece used the way
# README.md tells a user of that prefix (a staged prefix is one the
# loader does not search: LD_LIBRARY_PATH and PYTHONPATH name it):
# gemmd --help, the installed gemmd serving the installed gemmctl, its
# CUDA plugin found in LIBDIR/gemmd/ (and carrying the toolkit's rpath),
# `import gemmd` with the Python that ran Meson, the shim under
# LD_PRELOAD by its README name (and by its path, with no
# LD_LIBRARY_PATH: it finds libgemmd.so.0 beside itself). For the default
# prefix, the package directory must be on that Python's sys.path and the
# libdir one the loader searches (the install's ldconfig then finds the
# library). Needs PREFIX, SBINDIR, BINDIR, LIBDIR, PYDIR (installed
# paths), PYTHON, CUDA_RPATH (empty without CUDA), SAN_PRELOAD.
set -eu
build=$1
. "$(dirname "$0")/lib.sh"

dest=$work/dest
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
GEMMD=$dest$SBINDIR/gemmd
GEMMCTL=$dest$BINDIR/gemmctl
libdir=$dest$LIBDIR
pydir=$dest$PYDIR
unset GEMMD_CUDA_PLUGIN GEMMD_LIBRARY LD_LIBRARY_PATH PYTHONPATH || true

"$GEMMD" --help >/dev/null || fail "installed gemmd --help"
"$GEMMCTL" --help >/dev/null || fail "installed gemmctl --help"
start_gemmd --engine auto
"$GEMMCTL" rand 40x30 -o "$work/A.npy"
"$GEMMCTL" rand 30x20 -o "$work/B.npy"
"$GEMMCTL" submit "$work/A.npy" "$work/B.npy" -o "$work/O.npy" --verify \
	--url "$ipc" >/dev/null || fail "the installed gemmd served no job"

plugin=$libdir/gemmd/gemmd-cuda.so
if [ -n "$CUDA_RPATH" ]; then
	grep -q "engine auto: .*$plugin" "$work/gemmd.log" &&
		! grep -q "cannot load the CUDA engine" "$work/gemmd.log" ||
		fail "the installed plugin was not used: $(grep 'engine auto' "$work/gemmd.log")"
	readelf -d "$plugin" | grep -q "R.*PATH.*\[$CUDA_RPATH\]" ||
		fail "the installed plugin has no rpath to $CUDA_RPATH"
fi

# The Python package, by import, from where it was installed (under the
# sanitizers, their runtime first, as for the shim below).
LD_LIBRARY_PATH=$libdir PYTHONPATH=$pydir LD_PRELOAD="$SAN_PRELOAD" \
	ASAN_OPTIONS=detect_leaks=0 "$PYTHON" -c '
import sys
import numpy as np
import gemmd
assert gemmd.__file__.startswith(sys.argv[1]), gemmd.__file__
a = np.arange(12.0).reshape(4, 3)
b = np.ones((3, 5))
with gemmd.Client(sys.argv[2]) as c:
    assert np.allclose(c.gemm(a, b), a @ b)
' "$pydir" "$ipc" || fail "import gemmd from $pydir"

# The shim by the name README.md gives, and libgemmd.so.0 beside it.
maps() {
	LD_PRELOAD="$SAN_PRELOAD $1" cat /proc/self/maps
}
LD_LIBRARY_PATH=$libdir maps libgemmd_blas.so | grep -q "$libdir/libgemmd_blas.so" ||
	fail "LD_PRELOAD=libgemmd_blas.so did not load $libdir/libgemmd_blas.so"
maps "$libdir/libgemmd_blas.so" | grep -q "$libdir/libgemmd.so.0" ||
	fail "the installed shim does not find $libdir/libgemmd.so.0"
jobs() {
	"$GEMMCTL" stats --json --url "$ipc" |
		"$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["stats"]["jobs"]["ok"])'
}
before=$(jobs)
LD_LIBRARY_PATH=$libdir LD_PRELOAD="$SAN_PRELOAD libgemmd_blas.so" \
	ASAN_OPTIONS=detect_leaks=0 GEMMD_URL=$ipc GEMMD_BLAS_MIN_FLOPS=0 \
	"$PYTHON" -c 'import numpy as np; a = np.ones((64, 64)); assert (a @ a)[0, 0] == 64' ||
	fail "numpy under the installed shim"
[ "$(jobs)" -gt "$before" ] || fail "the shim sent no GEMM to gemmd"
stop_gemmd

if [ "$PREFIX" = /usr/local ]; then
	"$PYTHON" -c 'import sys; print("\n".join(sys.path))' | grep -x "$PYDIR" >/dev/null ||
		fail "$PYDIR is not on $PYTHON's sys.path"
	# ldconfig lists only directories that exist: its configuration.
	cat /etc/ld.so.conf /etc/ld.so.conf.d/*.conf 2>/dev/null | grep -x "$LIBDIR" >/dev/null ||
		fail "$LIBDIR is not a directory the dynamic loader searches"
fi
echo "ok"
