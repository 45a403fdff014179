#!/bin/sh
# What a new user meets first, run as they would: gemmctl's version; a
# daemon that is not running, named as such; --json failures found
# before any daemon is asked, each one document; ping's state while
# drained and while stopping; a dtype the engine does not run refused
# before it is sent; jobs, the caller's own; two daemons on two sockets of one directory, each
# with its own region socket, and a clash that names its key.
set -eu
. "$(dirname "$0")/lib.sh"

ctl() { "$GEMMCTL" "$@"; }
# one_doc: stdout of the last expect_exit is exactly one JSON document;
# prints KEY's value (lib.sh's json).
one_doc() {
	[ "$(wc -l <"$work/out")" -eq 1 ] || fail "not one line: $(cat "$work/out")"
	json "$1" <"$work/out"
}
requests() { ctl stats --json --url "$ipc" | json stats.requests.total; }

# ---- version, with no daemon ----
v=$(ctl -V)
echo "$v" | grep -Eq '^gemmctl [0-9]+\.[0-9]+\.[0-9]+$' || fail "-V: $v"
[ "$(ctl --version)" = "$v" ] || fail "--version: $(ctl --version)"
expect_exit 0 ctl version --url "$ipc"
[ "$(head -1 "$work/out")" = "$v" ] || fail "version: $(cat "$work/out")"
grep -q "^gemmd: no answer (no gemmd listening at $work/gemmd.sock (is it running?))$" \
	"$work/out" || fail "version, no daemon: $(cat "$work/out")"

# ---- no daemon at the socket ----
expect_exit 3 ctl ping --url "$ipc"
grep -q "cannot reach the daemon: no gemmd listening at $work/gemmd.sock (is it running?)$" \
	"$work/err" || fail "ping, no daemon: $(cat "$work/err")"
grep -q "Connection refused" "$work/err" && fail "ping, no daemon: $(cat "$work/err")"
expect_exit 3 ctl stats --json --url "$ipc"
[ "$(one_doc error)" = ETRANSPORT ] &&
	[ "$(one_doc detail)" = "no gemmd listening at $work/gemmd.sock (is it running?)" ] ||
	fail "stats --json, no daemon: $(cat "$work/out")"

# ---- --json: local failures are one document each (no daemon needed) ----
ctl rand 5x4 -o "$work/A.npy"
ctl rand 4x3 -o "$work/B.npy"
ctl rand 2x2 -o "$work/C.npy"
python3 -c 'import sys
h = b"{\x27descr\x27: \x27<i8\x27, \x27fortran_order\x27: False, \x27shape\x27: (2, 2), }"
h += b" " * (63 - 10 - len(h)) + b"\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + bytes([len(h), 0]) + h + bytes(32))' \
	"$work/I.npy"
python3 -c 'import sys
h = b"{\x27descr\x27: \x27<f8\x27, \x27fortran_order\x27: False, \x27shape\x27: (0, 4), }"
h += b" " * (63 - 10 - len(h)) + b"\n"
open(sys.argv[1], "wb").write(b"\x93NUMPY\x01\x00" + bytes([len(h), 0]) + h)' \
	"$work/E.npy"
# exit, error, detail (a prefix), then the command's arguments.
while IFS='|' read -r code err detail args; do
	# shellcheck disable=SC2086 # args are words
	expect_exit "$code" ctl submit $args -o "$work/O.npy" --json --url "$ipc"
	[ "$(one_doc ok)" = false ] && [ "$(one_doc error)" = "$err" ] &&
		one_doc detail | grep -q "^$detail" ||
		fail "submit $args --json: $(cat "$work/out")"
	grep -q "^gemmctl: $detail" "$work/err" || fail "submit $args: $(cat "$work/err")"
done <<EOF
4|EIO|$work/missing.npy: No such file or directory|$work/missing.npy $work/B.npy
4|ENPY|$work/I.npy: dtype '<i8' unsupported|$work/I.npy $work/B.npy
2|EDIM|M = 0: must be 1..|$work/E.npy $work/B.npy
2|EINVAL|inner dimensions differ|$work/A.npy $work/A.npy
2|EINVAL|C is 2x2, op(A)\*op(B) is 5x3|$work/A.npy $work/B.npy --c $work/C.npy
EOF
expect_exit 2 ctl submit "$work/A.npy" --json
[ "$(one_doc error)" = EINVAL ] && [ "$(one_doc call)" = usage ] ||
	fail "usage error, --json: $(cat "$work/out")"

# ---- a daemon: version, ping's state and dtypes ----
start_gemmd --engine cpu --set cpu_threads=1
expect_exit 0 ctl version --url "$ipc"
grep -q "^gemmd [0-9.]* (cpu engine) at $ipc$" "$work/out" ||
	fail "version: $(cat "$work/out")"
expect_exit 0 ctl version --json --url "$ipc"
[ "$(one_doc client)" = "${v#gemmctl }" ] && [ "$(one_doc engine)" = cpu ] ||
	fail "version --json: $(cat "$work/out")"
expect_exit 0 ctl ping --json --url "$ipc"
[ "$(one_doc state)" = ready ] && [ "$(one_doc dtypes)" = '["fp64", "fp32"]' ] ||
	fail "ping --json: $(cat "$work/out")"

# ---- a dtype the engine does not run: refused before it is sent ----
before=$(requests)
for mode in "-o $work/O.npy" --detach; do
	# shellcheck disable=SC2086
	expect_exit 1 ctl submit "$work/A.npy" "$work/B.npy" --dtype fp16 $mode --url "$ipc"
	grep -q "job failed: unsupported by this engine (EUNSUPPORTED): dtype fp16 is unsupported by the cpu engine" \
		"$work/err" || fail "fp16 $mode: $(cat "$work/err")"
	# shellcheck disable=SC2086
	expect_exit 1 ctl submit "$work/A.npy" "$work/B.npy" --dtype bf16 $mode --json --url "$ipc"
	[ "$(one_doc error)" = EUNSUPPORTED ] || fail "bf16 $mode --json: $(cat "$work/out")"
done
[ "$(requests)" = "$before" ] || fail "an unsupported job reached the daemon"
ctl submit "$work/A.npy" "$work/B.npy" --dtype fp32 -o "$work/O.npy" --url "$ipc" >/dev/null
[ "$(requests)" = $((before + 1)) ] || fail "the fp32 job was not counted"

# The check before sending counts against --timeout: a stopped daemon
# costs one --timeout, not one for the check and one for the job.
ms() { date +%s%3N; }
kill -STOP "$pid"
t0=$(ms)
expect_exit 3 ctl submit "$work/A.npy" "$work/B.npy" -o "$work/O.npy" \
	--timeout 1000 --url "$ipc"
t1=$(ms)
kill -CONT "$pid"
grep -q "ETIMEDOUT" "$work/err" || fail "submit, stopped daemon: $(cat "$work/err")"
[ $((t1 - t0)) -lt 1800 ] || fail "submit, stopped daemon: took $((t1 - t0)) ms of a 1000 ms --timeout"

# ---- ping while drained, then while stopping with jobs in flight ----
ctl drain --url "$ipc" >/dev/null
expect_exit 0 ctl ping --url "$ipc"
grep -q "  state draining  " "$work/out" || fail "ping while drained: $(cat "$work/out")"
ctl resume --url "$ipc" >/dev/null
expect_exit 0 ctl ping --url "$ipc"
grep -q "  state ready  " "$work/out" || fail "ping after resume: $(cat "$work/out")"
ctl rand 1500x1500 -o "$work/L.npy"
for _ in 1 2 3; do
	ctl submit "$work/L.npy" "$work/L.npy" --detach --url "$ipc" >/dev/null
done
kill -TERM "$pid"
expect_exit 0 ctl ping --url "$ipc"
grep -q "  state draining (stopping: gemmd exits once its jobs are done)" \
	"$work/out" || fail "ping while stopping: $(cat "$work/out")"
expect_exit 0 ctl ping --json --url "$ipc"
[ "$(one_doc state)" = draining ] && [ "$(one_doc stopping)" = true ] ||
	fail "ping --json while stopping: $(cat "$work/out")"
wait "$pid" || fail "gemmd exited $? after SIGTERM"
pid=

# ---- jobs: the caller's own, an admin's everyone's ----
start_gemmd --engine cpu --set cpu_threads=1
expect_exit 0 ctl jobs --url "$tcp"
[ "$(cat "$work/out")" = "no jobs of yours" ] || fail "jobs, none: $(cat "$work/out")"
mine=$(ctl submit "$work/A.npy" "$work/B.npy" --detach --url "$tcp")
root=$(ctl submit "$work/A.npy" "$work/B.npy" --detach --url "$ipc")
# Plain tcp:// is anonymous, no admin: its own job alone.
expect_exit 0 ctl jobs --json --url "$tcp"
[ "$(one_doc all)" = false ] &&
	[ "$(json jobs <"$work/out" | python3 -c 'import json, sys
print(" ".join(str(j["job"]) for j in json.load(sys.stdin)))')" = "$mine" ] ||
	fail "jobs over tcp://: $(cat "$work/out")"
expect_exit 0 ctl jobs --url "$tcp"
grep -Eq "^$mine +(queued|running|done) +5x3x4 fp64  priority 1  detached" "$work/out" &&
	! grep -q "$root" "$work/out" || fail "jobs over tcp://, text: $(cat "$work/out")"
# uid 0 over ipc:// is an admin: everyone's, with owners.
expect_exit 0 ctl jobs --url "$ipc"
grep -q "^$mine .*  owner anonymous$" "$work/out" &&
	grep -q "^$root .*  owner uid 0$" "$work/out" ||
	fail "jobs over ipc://: $(cat "$work/out")"
# A job that is not detached, while it waits or runs: by its request.
ctl rand 2000x2000 -o "$work/L.npy"
ctl submit "$work/L.npy" "$work/L.npy" --detach --url "$tcp" >/dev/null
"$GEMMCTL" submit "$work/L.npy" "$work/L.npy" -o "$work/LL.npy" --url "$tcp" \
	>/dev/null 2>&1 &
sub=$!
seen=
for _ in $(seq 200); do
	ctl jobs --url "$tcp" >"$work/jobs"
	if grep -Eq "^request [0-9]+\.0 +(queued|running) +2000x2000x2000 fp64" \
		"$work/jobs"; then
		seen=1
		break
	fi
	sleep 0.05
done
[ -n "$seen" ] || fail "jobs never listed the job in flight: $(cat "$work/jobs")"
wait "$sub" || fail "the job in flight failed"
stop_gemmd

# ---- two daemons, two sockets, one directory ----
start_gemmd --engine cpu
"$GEMMD" --engine cpu --listen "ipc://$work/b.sock" 2>"$work/b.log" &
pid_b=$!
trap 'kill -KILL "$pid_b" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do
	ctl ping --url "ipc://$work/b.sock" --timeout 300 >/dev/null 2>&1 && break
	kill -0 "$pid_b" 2>/dev/null || fail "the second gemmd exited: $(cat "$work/b.log")"
	sleep 0.1
done
[ -S "$work/gemmd-regions.sock" ] && [ -S "$work/b-regions.sock" ] ||
	fail "region sockets: $(ls "$work")"
for url in "$ipc" "ipc://$work/b.sock"; do
	ctl bench --regions -n 2 -s 16x16x16 --url "$url" >/dev/null ||
		fail "bench --regions at $url"
	[ "$(ctl stats --json --url "$url" | json stats.regions.created)" -ge 1 ] ||
		fail "no region made at $url"
done
# A region socket that another daemon serves: its key is named.
expect_exit 1 "$GEMMD" --engine cpu --listen "ipc://$work/c.sock" \
	--set "region_socket=$work/b-regions.sock"
grep -q "region socket $work/b-regions.sock: another process serves on it; set region_socket" \
	"$work/err" || fail "clash: $(cat "$work/err")"
kill -TERM "$pid_b"
wait "$pid_b" || fail "the second gemmd exited $?"
stop_gemmd
echo "first: ok"
