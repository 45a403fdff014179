#!/bin/sh
# CI: builds the fuzz targets as libFuzzer binaries (clang,
# -fsanitize=fuzzer,address,undefined; Meson option -Dfuzzing=true) and
# runs each for FUZZ_SECONDS (default 60) on a copy of its seed corpus in
# tests/fuzz/corpus, printing the executions each reached. Fails on any
# crash, sanitizer report, leak, timeout (an input that runs over 10 s) or
# out-of-memory; the input that caused it is kept under
# $FUZZ_BUILDDIR/fuzz-artifacts (add it to the corpus once fixed, and it
# is replayed by every `meson test` from then on).
set -eu
cd "$(dirname "$0")/.."
builddir=${FUZZ_BUILDDIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-60}
targets="proto ctrlreq config npy"

if [ ! -f "$builddir/build.ninja" ]; then
	# Coverage instrumentation (fuzzer-no-link) and the sanitizers for
	# every object, so libFuzzer sees the parsers, not only the targets;
	# any UBSan report aborts, so libFuzzer records it as a crash.
	CC=clang meson setup "$builddir" -Dfuzzing=true -Dcuda=disabled \
		-Dtests=enabled -Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args="-fsanitize=fuzzer-no-link -fno-sanitize-recover=all" \
		>/dev/null
fi
ninja -C "$builddir" $(for t in $targets; do echo tests/fuzz/fuzz_$t; done) \
	>/dev/null

artifacts=$builddir/fuzz-artifacts
rm -rf "$artifacts"
mkdir -p "$artifacts"
status=0
for t in $targets; do
	work=$builddir/fuzz-corpus/$t
	rm -rf "$work"
	mkdir -p "$work"
	cp tests/fuzz/corpus/$t/* "$work/"
	dict=""
	[ -f tests/fuzz/$t.dict ] && dict="-dict=tests/fuzz/$t.dict"
	log=$builddir/fuzz-$t.log
	rc=0
	"$builddir/tests/fuzz/fuzz_$t" -max_total_time="$seconds" \
		-print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$artifacts/$t-" $dict "$work" >"$log" 2>&1 ||
		rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | sed -n 's/.*\(cov: [0-9]*\).*/\1/p')
	if [ "$rc" -eq 0 ]; then
		echo "fuzz_$t: ${execs:-?} executions in ${seconds} s, $cov, corpus $(ls "$work" | wc -l) inputs: ok"
	else
		echo "fuzz_$t: FAILED (exit $rc) after ${execs:-?} executions"
		grep -E 'ERROR|SUMMARY|runtime error|check failed|Test unit written' "$log" | head -20
		status=1
	fi
done
exit $status
