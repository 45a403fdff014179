#!/bin/sh
# A CUDA-enabled gemmd where the CUDA libraries cannot be loaded from the
# loader's path, in a mount namespace of its own (unshare -m; unshare -rm
# when not root):
#  1. with no loader entry for the toolkit (an empty ld.so.cache, as after
#     NVIDIA's runfile installer), the plugin finds the toolkit through
#     its rpath, and gemmd -e auto opens it;
#  2. with the toolkit's directories hidden under empty tmpfs mounts (so
#     that ldd reports libcudart missing), gemmd starts, -e auto serves a
#     job on the CPU and logs the library the loader could not find,
#     -e cuda fails with that text, and a GPU test exits 77 (skipped).
# Needs CUDA_PLUGIN (the built plugin) and GPU_TEST (a GPU test binary);
# exits 77 (skipped) only in a build without CUDA.
set -eu
if [ -z "${CUDA_PLUGIN:-}" ]; then
	echo "built without CUDA: skipped"
	exit 77
fi
if [ -z "${GM_NOCUDA_NS:-}" ]; then
	ns=-m
	[ "$(id -u)" -eq 0 ] || ns=-rm
	GM_NOCUDA_NS=1 exec unshare $ns sh "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"

# resolved LIB: where the loader finds LIB for the plugin, or nothing.
resolved() {
	ldd "$CUDA_PLUGIN" | awk -v lib="$1" \
		'index($1, lib) == 1 && $3 ~ /^\// { print $3 }'
}

# served LOGNAME: gemmd, started with -e auto, serves a job; its log is
# kept as $work/LOGNAME.
served() {
	start_gemmd --engine auto
	"$GEMMCTL" submit "$work/A.npy" "$work/B.npy" -o "$work/O.npy" \
		--verify --url "$ipc" >/dev/null || fail "no job served"
	stop_gemmd
	cp "$work/gemmd.log" "$work/$1"
}

"$GEMMCTL" rand 33x17 -o "$work/A.npy"
"$GEMMCTL" rand 17x9 -o "$work/B.npy"

# 1. No loader entry: the rpath finds the toolkit.
: >"$work/empty-cache"
[ ! -e /etc/ld.so.cache ] || mount --bind "$work/empty-cache" /etc/ld.so.cache
cudart=$(resolved libcudart.so)
[ -n "$cudart" ] || fail "no rpath: $(ldd "$CUDA_PLUGIN")"
echo "without a loader entry: $cudart"
served rpath.log
grep -q "engine auto: using .* CUDA device(s): .*$CUDA_PLUGIN" "$work/rpath.log" &&
	! grep -q "cannot load the CUDA engine" "$work/rpath.log" ||
	fail "the plugin did not load: $(grep 'engine auto' "$work/rpath.log")"
! mountpoint -q /etc/ld.so.cache || umount /etc/ld.so.cache

# 2. No CUDA libraries at all: every directory the loader finds one in
# (the toolkit's, the loader cache's, a copy elsewhere) goes under tmpfs.
for lib in libcudart.so libcublas.so libcublasLt.so; do
	for _ in 1 2 3 4; do
		path=$(resolved $lib)
		[ -n "$path" ] || break
		for dir in "$(dirname "$path")" "$(dirname "$(readlink -f "$path")")"; do
			case $dir in
			/lib | /lib/* | /usr/lib | /usr/lib/* | /lib64 | /usr/lib64)
				fail "$path is in a system directory, which cannot be hidden" ;;
			esac
			mountpoint -q "$dir" || mount -t tmpfs none "$dir"
		done
	done
done
ldd "$CUDA_PLUGIN" | grep -q 'libcudart\.so.* => not found' ||
	fail "libcudart is still found: $(ldd "$CUDA_PLUGIN")"
"$GEMMD" --help >/dev/null || fail "gemmd --help does not start"
served hidden.log
grep 'engine auto' "$work/hidden.log"
grep -q "engine auto: using cpu (0 CUDA device(s): cannot load the CUDA engine: libcudart\.so\.[0-9]*: cannot open shared object file" \
	"$work/hidden.log" || fail "no log line names libcudart"
expect_exit 1 "$GEMMD" --engine cuda --listen "ipc://$work/cuda.sock"
grep -q "cannot load the CUDA engine: libcudart" "$work/err" ||
	fail "-e cuda does not say what is missing: $(cat "$work/err")"
expect_exit 77 "$GPU_TEST"
echo "ok"
