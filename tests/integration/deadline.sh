#!/bin/sh
# gemmctl against a gemmd that stops answering or dies under a call:
# stopped (SIGSTOP), submit (staged through shared memory) and ping with
# --timeout return within it and SLACK_MS, exit 3 with ETIMEDOUT, and
# serve again once gemmd is continued; killed (SIGKILL) under a submit
# with a minute's timeout, it exits 3 with ETRANSPORT within DEAD_MS of
# the kill, and the next ping at once.
set -eu
. "$(dirname "$0")/lib.sh"

TIMEOUT_MS=500
SLACK_MS=400
DEAD_MS=1000

start_gemmd --engine cpu
ctl() { "$GEMMCTL" "$@"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# timed CODE NAME MAX_MS command...: exit status CODE, stderr naming
# NAME (unless ""), within MAX_MS.
timed() {
	code=$1 name=$2 max=$3
	shift 3
	t0=$(now_ms)
	expect_exit "$code" "$@"
	took=$(($(now_ms) - t0))
	[ -z "$name" ] || grep -q "($name)" "$work/err" ||
		fail "'$*': $(cat "$work/err")"
	[ "$took" -le "$max" ] || fail "'$*' took $took ms, at most $max"
}

# 400x400 fp64: 1.3 MB per operand, staged through shared memory.
ctl rand 400x400 -o "$work/A.npy"
ctl submit "$work/A.npy" "$work/A.npy" -o "$work/O.npy" --url "$ipc" >/dev/null

kill -STOP "$pid"
timed 3 ETIMEDOUT $((TIMEOUT_MS + SLACK_MS)) ctl submit "$work/A.npy" \
	"$work/A.npy" -o "$work/O.npy" --url "$ipc" --timeout $TIMEOUT_MS
timed 3 ETIMEDOUT $((TIMEOUT_MS + SLACK_MS)) ctl submit "$work/A.npy" \
	"$work/A.npy" -o "$work/O.npy" --url "$tcp" --timeout $TIMEOUT_MS
timed 3 ETIMEDOUT $((TIMEOUT_MS + SLACK_MS)) ctl ping --url "$ipc" \
	--timeout $TIMEOUT_MS
kill -CONT "$pid"
ctl ping --url "$ipc" --timeout 5000 >/dev/null
ctl submit "$work/A.npy" "$work/A.npy" -o "$work/O.npy" --verify --url "$ipc" >/dev/null

kill -STOP "$pid"
(sleep 0.3 && kill -KILL "$pid") &
timed 3 ETRANSPORT $((300 + DEAD_MS)) ctl submit "$work/A.npy" \
	"$work/A.npy" -o "$work/O.npy" --url "$ipc" --timeout 60000
wait "$pid" || true
pid=
# Nobody listens: gemmd_open says so (its words are gemmctl's).
timed 3 "" "$DEAD_MS" ctl ping --url "$ipc" --timeout 60000
echo "deadline-cli: ok"
