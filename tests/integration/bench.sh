#!/bin/sh
# gemmctl bench against a real CPU-engine gemmd, the way an operator
# sizing a deployment runs it: --count and --duration with --json, the
# jobs it counted equal to those the daemon's stats counted over the run
# and no errors; batches, several shapes and random ones, ipc:// and
# tcp://, regions with --verify; failed jobs counted by code; the bare
# command's defaults; the progress line on a terminal only; usage
# errors, an unreachable daemon and one that dies during the run.
set -eu
. "$(dirname "$0")/lib.sh"

start_gemmd --engine cpu --set cpu_threads=1
ctl() { "$GEMMCTL" "$@" --url "$ipc"; }
stat() { ctl stats --json | json "stats.$1"; }
# v KEY: KEY of the last bench document.
v() { json "$1" <"$work/j"; }
# expect KEY VALUE: that KEY of the last bench document is VALUE.
expect() {
	[ "$(v "$1")" = "$2" ] || fail "$1 is $(v "$1"), not $2: $(cat "$work/j")"
}

# --count: every request answered, every job counted by both sides.
before=$(stat jobs.ok)
ctl bench --count 25 --batch 2 --concurrency 3 --shape 48x40x32 --json >"$work/j"
expect ok true
expect engine cpu
expect requests.sent 25
expect requests.ok 25
expect jobs.ok 50
expect jobs.failed 0
expect errors '{}'
expect daemon.requests 25
expect daemon.jobs_ok 50
expect daemon.jobs_failed 0
expect latency_ms.count 25
expect phases_us.total.count 50
expect config.transport socket
[ $(($(stat jobs.ok) - before)) -eq 50 ] || fail "the daemon counted other than 50 jobs"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
t, l, p = d["throughput"], d["latency_ms"], d["phases_us"]
assert t["jobs_per_s"] > 0 and t["gflops_per_s"] > 0 and t["gb_per_s"] > 0, t
assert 0 < l["p50"] <= l["p90"] <= l["p99"] <= l["max"], l
assert 0 < p["kernel"]["p50"] <= p["total"]["max"], p
# 2*48*40*32 FLOP a job, 50 jobs.
assert abs(d["daemon"]["flops"] - 50 * 2 * 48 * 40 * 32) < 1, d["daemon"]
' "$work/j" || fail "bench --json: $(cat "$work/j")"

# --duration, over tcp://: sends for that long, then counts agree.
before=$(stat jobs.ok)
"$GEMMCTL" bench --url "$tcp" --duration 1 --concurrency 2 --shape 64x64x64 \
	--shape 32x16x8 --json >"$work/j"
expect ok true
expect errors '{}'
jobs=$(v jobs.ok)
[ "$jobs" -gt 0 ] || fail "--duration 1 ran no job"
expect daemon.jobs_ok "$jobs"
[ $(($(stat jobs.ok) - before)) -eq "$jobs" ] ||
	fail "bench counted $jobs jobs, the daemon $(($(stat jobs.ok) - before))"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert 1.0 <= d["elapsed_s"] < 30, d["elapsed_s"]
assert d["config"]["shapes"] == ["64x64x64", "32x16x8"], d["config"]
' "$work/j" || fail "bench --duration: $(cat "$work/j")"

# Regions: operands in one region, random shapes, results checked.
before=$(stat regions.jobs)
ctl bench --regions --mixed 8:80 --count 20 --dtype fp64 --verify 5 --json >"$work/j"
expect ok true
expect config.transport regions
expect config.mixed 8:80
expect verify.checked 5
expect verify.ok 5
expect jobs.ok 20
[ $(($(stat regions.jobs) - before)) -eq 20 ] || fail "--regions: jobs not in a region"

# Failed jobs by code: the CPU engine has no fp16; exit 1.
expect_exit 1 ctl bench --count 4 --dtype fp16 --json
cp "$work/out" "$work/j"
expect ok false
expect jobs.failed 4
expect errors.EUNSUPPORTED 4
expect daemon.jobs_failed 4
ctl bench --count 4 --dtype fp16 >"$work/text" || true
grep -q "^errors  EUNSUPPORTED 4$" "$work/text" || fail "errors by code: $(cat "$work/text")"

# The bare command: a few seconds of modest jobs, a text report with no
# progress line off a terminal.
ctl bench >"$work/text"
grep -q "^ran 5\.[0-9]* s  requests [0-9]* (0 failed)" "$work/text" &&
	grep -q "^fp32 256x256x256  batch 1  concurrency 4  socket  priority 1$" "$work/text" &&
	grep -q "^throughput  [0-9.]* jobs/s  [0-9.]* GFLOP/s  [0-9.]* GB/s$" "$work/text" &&
	grep -q "^ms  *count  *mean  *p50  *p90  *p99  *max$" "$work/text" &&
	grep -q "^request  *[1-9]" "$work/text" &&
	grep -q "^kernel  *[1-9]" "$work/text" &&
	grep -q "^daemon counted [1-9][0-9]* requests" "$work/text" &&
	grep -q "^errors  none$" "$work/text" ||
	fail "bare bench: $(cat "$work/text")"
if tr '\r' '#' <"$work/text" | grep -q '#'; then
	fail "a progress line off a terminal"
fi
awk 'length > 80 { bad = 1 } END { exit bad }' "$work/text" ||
	fail "bench: a line over 80 columns: $(cat "$work/text")"
# On a terminal: the progress line, refreshed with carriage returns.
script -qec "$GEMMCTL bench --url $ipc --duration 1.2 --shape 32x32x32" /dev/null >"$work/tty"
[ "$(tr -cd '\r' <"$work/tty" | wc -c)" -ge 2 ] && grep -q " jobs/s " "$work/tty" ||
	fail "no progress line on a terminal: $(cat "$work/tty")"

# Usage errors.
expect_exit 2 ctl bench --shape 10x10
expect_exit 2 ctl bench --count 0
expect_exit 2 ctl bench --mixed 9:8
expect_exit 2 ctl bench --shape 8x8x8 --mixed 1:8
expect_exit 2 "$GEMMCTL" bench --regions --url "$tcp"
grep -q "needs an ipc:// URL" "$work/err" || fail "--regions over tcp: $(cat "$work/err")"

# The daemon dies during the run: a report, exit 3.
"$GEMMCTL" bench --url "$ipc" --duration 4 --timeout 2000 --shape 32x32x32 \
	--json >"$work/j" 2>"$work/err" &
bench_pid=$!
sleep 1
kill -KILL "$pid"
wait "$pid" 2>/dev/null || true
pid=
set +e
wait "$bench_pid"
rc=$?
set -e
[ "$rc" -eq 3 ] || fail "bench exited $rc when the daemon died: $(cat "$work/err")"
expect ok false
[ "$(v jobs.ok)" -gt 0 ] || fail "no jobs before the daemon died"

# No daemon: exit 3 before any load.
expect_exit 3 ctl bench --count 1 --timeout 500

# tls+tcp:// with the TLS options every command takes: a CA, the
# daemon's certificate for localhost, a client certificate.
command -v openssl >/dev/null || { echo "bench: ok (no openssl: TLS not run)"; exit 0; }
(
	cd "$work"
	exec >openssl.log 2>&1
	key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key"; }
	key ca
	openssl req -x509 -new -key ca.key -out ca.crt -days 2 -subj /CN=ca \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign
	for leaf in server:localhost:serverAuth client:bench:clientAuth; do
		name=${leaf%%:*} rest=${leaf#*:}
		key "$name"
		openssl req -new -key "$name.key" -out "$name.csr" -subj "/CN=${rest%:*}"
		printf 'subjectAltName=DNS:localhost\nextendedKeyUsage=%s\n' "${rest#*:}" >"$name.ext"
		openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
			-out "$name.crt" -days 2 -extfile "$name.ext"
	done
) || fail "openssl: $(cat "$work/openssl.log")"
tls="tls+tcp://localhost:$((port + 2))"
start_gemmd --engine cpu --listen "$tls" --set "tls_cert=$work/server.crt" \
	--set "tls_key=$work/server.key" --set "tls_ca=$work/ca.crt"
"$GEMMCTL" bench --url "$tls" --ca "$work/ca.crt" --cert "$work/client.crt" \
	--key "$work/client.key" --count 10 --shape 32x32x32 --json >"$work/j" ||
	fail "bench over TLS: $(cat "$work/j")"
expect jobs.ok 10
expect daemon.jobs_ok 10
stop_gemmd
echo "bench: ok"
