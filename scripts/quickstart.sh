#!/bin/sh
# Quick start, first command: install what is missing, build, start
# gemmd (the CUDA engine when a GPU is found, else the CPU engine),
# multiply two random matrices through it with gemmctl, check the
# result, print the timings and the stats, and stop the daemon. Each
# step says what it does before it starts, since the first run installs
# and builds for minutes; if gemmd exits before it answers, its log is
# shown at once.
set -eu
cd "$(dirname "$0")/.."
say() { echo "quickstart: $*"; }
say "checking the Debian packages gemmd needs (scripts/install-deps.sh)"
scripts/install-deps.sh
say "building into ${BUILDDIR:-build} (scripts/build.sh; the first build takes a few minutes)"
scripts/build.sh
b=${BUILDDIR:-build}

work=$(mktemp -d /tmp/gemmd-quickstart.XXXXXX)
url="ipc://$work/gemmd.sock"
cleanup() {
	[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

say "starting gemmd --engine auto --listen $url"
"$b/daemon/gemmd" --engine auto --listen "$url" 2>"$work/gemmd.log" &
pid=$!
i=0
until "$b/ctl/gemmctl" ping --url "$url" --timeout 500 >/dev/null 2>&1; do
	if ! kill -0 "$pid" 2>/dev/null; then
		rc=0
		wait "$pid" || rc=$?
		pid=
		cat "$work/gemmd.log" >&2
		say "gemmd exited with status $rc before it answered" >&2
		exit 1
	fi
	i=$((i + 1))
	if [ $i -ge 150 ]; then
		cat "$work/gemmd.log" >&2
		say "gemmd did not answer within 30 s" >&2
		exit 1
	fi
	sleep 0.2
done
grep -o 'engine [a-z]*: .*' "$work/gemmd.log" || true

ctl() { "$b/ctl/gemmctl" "$@" --url "$url"; }
"$b/ctl/gemmctl" rand 512x384 -o "$work/A.npy"
"$b/ctl/gemmctl" rand 384x256 -o "$work/B.npy"
echo "\$ gemmctl submit A.npy B.npy -o C.npy --verify"
ctl submit "$work/A.npy" "$work/B.npy" -o "$work/C.npy" --verify
echo "\$ gemmctl stats"
ctl stats
kill -TERM "$pid"
wait "$pid"
pid=
echo "gemmd stopped cleanly"
