#!/bin/sh
# Test 'examples' (suite 'examples'): the build installed into a
# temporary DESTDIR, and each example run from there the way a user
# would: gemm_service.c compiled with the installed pkg-config file (no
# --static), numpy_gemm.py with the installed Python package, matmul.py
# under the installed BLAS shim, each against a real gemmd; gemmd's
# stats count the shim's two large products. $1 is the build directory;
# PREFIX, LIBDIR and PYDIR where the build installs; CC the C compiler;
# PYTHON the Python with numpy and cffi; in a sanitizer build,
# SAN_CFLAGS its -fsanitize and SAN_PRELOAD its runtimes, for Python.
set -eu
build=$1
here=$(dirname "$0")
. "$here/../tests/integration/lib.sh"

dest="$work/dest"
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
lib="$dest$LIBDIR"
[ -f "$lib/libgemmd.so.0" ] && [ -f "$lib/libgemmd_blas.so" ] ||
	fail "not installed: $(ls "$lib")"

# The C service, against the installed headers and library only.
flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR= \
	pkg-config --define-variable=prefix="$dest$PREFIX" --cflags --libs gemmd)
# shellcheck disable=SC2086 # one word per flag
"$CC" "$here/gemm_service.c" $flags ${SAN_CFLAGS:-} -o "$work/gemm_service" ||
	fail "gemm_service.c does not build with: $flags"

start_gemmd --engine cpu
# python [VAR=VALUE...] ARGS: $PYTHON with the installed package, and
# the sanitizer runtimes ahead of preload (the shim, or nothing).
python() {
	env PYTHONPATH="$dest$PYDIR" GEMMD_LIBRARY="$lib/libgemmd.so.0" \
		LD_LIBRARY_PATH="$lib" ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" \
		LD_PRELOAD="${SAN_PRELOAD:-} ${preload:-}" "$@"
}
LD_LIBRARY_PATH="$lib" "$work/gemm_service" "$ipc" >"$work/out" ||
	fail "gemm_service: $(cat "$work/out")"
grep -q "^16 of 16 jobs right$" "$work/out" || fail "gemm_service: $(cat "$work/out")"

# The Python example, with the installed package.
python "$PYTHON" "$here/numpy_gemm.py" "$ipc" >"$work/out" 2>&1 ||
	fail "numpy_gemm.py: $(cat "$work/out")"
grep -q "^ok$" "$work/out" || fail "numpy_gemm.py: $(cat "$work/out")"
where=$(python "$PYTHON" -c 'import gemmd; print(gemmd.__file__)')
case $where in "$dest"/*) ;; *) fail "the example imported gemmd from $where" ;; esac

# The unchanged numpy program under the installed shim, default threshold.
ok() {
	"$GEMMCTL" stats --json --url "$ipc" |
		"$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["stats"]["jobs"]["ok"])'
}
before=$(ok)
preload="$lib/libgemmd_blas.so" python GEMMD_URL="$ipc" GEMMD_BLAS_VERBOSE=1 \
	"$PYTHON" "$here/matmul.py" >"$work/out" 2>"$work/log" ||
	fail "matmul.py under the shim: $(cat "$work/log")"
[ $(($(ok) - before)) -eq 2 ] || fail "gemmd counted $(($(ok) - before)) jobs of matmul.py, not 2: $(cat "$work/log")"
grep -q "checksum" "$work/out" || fail "matmul.py printed: $(cat "$work/out")"

stop_gemmd
echo "examples: ok"
