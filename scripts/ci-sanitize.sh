#!/bin/sh
# CI: builds gemmd with AddressSanitizer and UndefinedBehaviorSanitizer
# in its own build directory and runs every test suite; any sanitizer
# report fails the run, including one from a gemmd or gemmctl that an
# integration test started with its stderr in a log file: ASan and LSan
# reports go to files here, which must stay empty, and both sanitizers
# abort the process on their first report, so its exit status shows it
# too (GCC's UBSan, linked beside ASan, ignores log_path).
#
# The CUDA engine is left out (-Dcuda=disabled): ASan reserves the low
# "shadow gap" of the address space, where the CUDA driver maps memory,
# so CUDA calls fail under ASan unless protect_shadow_gap=0, which in
# turn weakens ASan's own checks. The CPU engine runs the same daemon
# code; the GPU suite has its own tests on a device.
set -eu
cd "$(dirname "$0")/.."
builddir=${SAN_BUILDDIR:-build-sanitize}

if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" -Dcuda=disabled -Dtests=enabled \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
ninja -C "$builddir" >/dev/null || ninja -C "$builddir"

reports=$(mktemp -d)
trap 'rm -rf "$reports"' EXIT
UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:log_path=$reports/asan
export UBSAN_OPTIONS ASAN_OPTIONS
# Every test, unless tests are named.
if [ $# -eq 0 ]; then
	set -- $(meson test -C "$builddir" --list 2>/dev/null |
		sed -n 's|^gemmd:[a-z]* / ||p' | sort -u)
fi
status=0
meson test -C "$builddir" --print-errorlogs "$@" || status=$?
if [ -n "$(ls "$reports")" ]; then
	for f in "$reports"/*; do
		echo "==== $f"
		cat "$f"
	done
	echo "sanitizer reports: see above"
	status=1
fi
exit $status
