#!/bin/sh
# gemmctl against a real gemmd, the way a user runs it: every transpose,
# both layouts, both dtypes, beta with C, over ipc:// and tcp://; ping
# and stats; the documented exit codes for bad files and no daemon.
set -eu
. "$(dirname "$0")/lib.sh"

start_gemmd --engine cpu
ctl() { "$GEMMCTL" "$@"; }

ctl rand 37x19 -o "$work/A.npy"
ctl rand 19x23 -o "$work/B.npy"
ctl rand 23x19 -o "$work/Bt.npy"
ctl rand 19x37 -o "$work/At.npy" --fortran
ctl rand 37x23 -o "$work/C.npy"
ctl rand 37x19 -o "$work/Af.npy" --fortran --dtype fp32

for url in "$ipc" "$tcp"; do
	ctl submit "$work/A.npy" "$work/B.npy" -o "$work/O.npy" --verify --url "$url"
	ctl submit "$work/At.npy" "$work/B.npy" --transa -o "$work/O.npy" --verify --url "$url"
	ctl submit "$work/A.npy" "$work/Bt.npy" --transb -o "$work/O.npy" --verify --url "$url"
	ctl submit "$work/At.npy" "$work/Bt.npy" --transa --transb -o "$work/O.npy" \
		--verify --url "$url"
	ctl submit "$work/A.npy" "$work/B.npy" --c "$work/C.npy" --alpha 1.5 \
		--beta -0.5 -o "$work/O.npy" --verify --url "$url"
	ctl submit "$work/Af.npy" "$work/B.npy" --dtype fp32 -o "$work/O.npy" \
		--verify --url "$url"
done

# Output is a valid .npy the client can read back as an input.
ctl submit "$work/O.npy" "$work/Bt.npy" --dtype fp32 -o "$work/O2.npy" --url "$ipc" >/dev/null

ctl ping --url "$tcp" | grep -q "cpu" || fail "ping does not name the engine"
ctl stats --json --url "$ipc" >"$work/stats.json"
grep -q '"ok":13' "$work/stats.json" || fail "stats do not count 13 jobs: $(cat "$work/stats.json")"
ctl stats --url "$ipc" >"$work/table"
grep -q '^latency  *count  *p50  *p90  *p99  *max$' "$work/table" &&
	grep -q '^total  *13 ' "$work/table" &&
	grep -q '^10s  ' "$work/table" ||
	fail "stats table lacks the latency or rate rows: $(cat "$work/table")"
# 80 columns, the CPU's device name abbreviated; --wide: whole.
awk 'length > 80 { bad = 1; print } END { exit bad }' "$work/table" >&2 ||
	fail "stats: a line over 80 columns"
grep -q '^0   cpu  ' "$work/table" || fail "stats: device name: $(cat "$work/table")"
ctl stats --wide --url "$ipc" >"$work/wide"
grep -q '^0   cpu (OpenBLAS, [0-9]* threads*)  ' "$work/wide" ||
	fail "stats --wide: device name: $(cat "$work/wide")"
# --watch off a terminal: tables one after another; Ctrl-C ends it, 0.
"$GEMMCTL" stats --watch 0.2 --url "$ipc" >"$work/watch" &
watch_pid=$!
sleep 1
kill -INT "$watch_pid"
wait "$watch_pid" || fail "stats --watch exited $? on SIGINT"
[ "$(grep -c '^gemmd ' "$work/watch")" -ge 2 ] ||
	fail "stats --watch printed fewer than 2 tables: $(cat "$work/watch")"

# Exit codes from gemmctl --help.
expect_exit 2 ctl submit "$work/A.npy"
expect_exit 4 ctl submit "$work/missing.npy" "$work/B.npy" -o "$work/O.npy" --url "$ipc"
printf 'not an npy file' >"$work/bad.npy"
expect_exit 4 ctl submit "$work/bad.npy" "$work/B.npy" -o "$work/O.npy" --url "$ipc"
expect_exit 1 ctl submit "$work/A.npy" "$work/B.npy" --dtype fp16 -o "$work/O.npy" --url "$ipc"
grep -q "unsupported" "$work/err" "$work/out" || fail "fp16 on cpu: no 'unsupported' message"
# submit refuses it before sending (first.sh); bench sends it, and the
# failed job is in the daemon's log at info, by its id and code.
expect_exit 1 ctl bench --dtype fp16 -n 1 -s 8x8x8 --url "$ipc"
grep -Eq ' info job [0-9]+\.0: failed: EUNSUPPORTED: ' "$work/gemmd.log" ||
	fail "fp16 on cpu: no info line for the failed job"
expect_exit 2 ctl submit "$work/A.npy" "$work/A.npy" -o "$work/O.npy" --url "$ipc"

stop_gemmd
expect_exit 3 ctl ping --url "$ipc" --timeout 500

# Addresses: a scheme gemmd does not serve lists those it does (2); a
# host that does not resolve cannot be reached (3, as a refused
# connection), also with --json; a TCP address without a port (2).
expect_exit 2 ctl ping --url http://127.0.0.1:9464/metrics
grep -q "http://127.0.0.1:9464/metrics: unsupported URL scheme 'http://'; gemmd listens on ipc://PATH, tcp://HOST:PORT or tls+tcp://HOST:PORT" \
	"$work/err" || fail "http:// URL: $(cat "$work/err")"
expect_exit 3 ctl ping --url tcp://no-such-host.invalid:7000 --timeout 2000
grep -q "cannot reach the daemon: tcp://no-such-host.invalid:7000: host 'no-such-host.invalid' not found" \
	"$work/err" || fail "unresolvable host: $(cat "$work/err")"
expect_exit 3 ctl stats --json --url tls+tcp://no-such-host.invalid:7000 --ca /dev/null
grep -q '"ok":false,"error":"ETRANSPORT"' "$work/out" ||
	fail "unresolvable host, --json: $(cat "$work/out")"
expect_exit 3 ctl ping --url "tcp://127.0.0.1:$port" --timeout 500
expect_exit 2 ctl ping --url tcp://127.0.0.1
grep -q "tcp://127.0.0.1: want tcp://HOST:PORT" "$work/err" ||
	fail "no port: $(cat "$work/err")"
echo "cli: ok"
