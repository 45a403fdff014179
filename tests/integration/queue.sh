#!/bin/sh
# gemmctl's detached jobs, drain and resume against a real gemmd, the
# way a user runs them: submit --detach, status, wait, cancel, drain,
# resume, SIGUSR1, each command's --help and the documented exit codes.
set -eu
. "$(dirname "$0")/lib.sh"

start_gemmd --engine cpu --set cpu_threads=1 --set detach_keep_s=2
ctl() { "$GEMMCTL" "$@" --url "$ipc"; }
rand() { "$GEMMCTL" rand "$@"; }

rand 61x37 -o "$work/A.npy"
rand 37x45 -o "$work/B.npy"
rand 2500x2500 -o "$work/Big.npy"

# submit --detach prints one id; wait writes what a plain submit does.
id=$(ctl submit "$work/A.npy" "$work/B.npy" --detach)
case $id in '' | *[!0-9]*) fail "submit --detach printed '$id', not an id" ;; esac
ctl status "$id" | grep -Eq "^$id  (queued|running|done) " ||
	fail "status: $(ctl status "$id")"
ctl wait "$id" -o "$work/W.npy" | grep -q "^ok  61x45x37 fp64" ||
	fail "wait did not print the job's timings"
ctl submit "$work/A.npy" "$work/B.npy" -o "$work/S.npy" >/dev/null
cmp -s "$work/W.npy" "$work/S.npy" || fail "detached result differs from a plain submit's"
ctl status "$id" --json | grep -q '"state":"done".*"result":false' ||
	fail "status after wait: $(ctl status "$id" --json)"
expect_exit 1 ctl wait "$id" -o "$work/W.npy"
grep -q "taken by an earlier wait" "$work/err" || fail "second wait: $(cat "$work/err")"

# A wait that runs out of time exits 3 and leaves the job to a later one.
# The timeout covers the connection too: 300 ms, which a loaded host
# connects well within, against a job of seconds on one BLAS thread (at
# 1 ms, the connection itself timed out now and then).
big=$(ctl submit "$work/Big.npy" "$work/Big.npy" --detach)
expect_exit 3 ctl wait "$big" -o "$work/Wb.npy" --timeout 300
grep -q "ETIMEDOUT" "$work/err" || fail "wait --timeout 300: $(cat "$work/err")"
ctl wait "$big" -o "$work/Wb.npy" >/dev/null

# Cancel drops a waiting result; unknown ids are exit 1.
id2=$(ctl submit "$work/A.npy" "$work/B.npy" --detach)
for _ in $(seq 100); do
	ctl status "$id2" | grep -q " done " && break
	sleep 0.05
done
ctl cancel "$id2" | grep -q "^$id2  canceled" || fail "cancel did not say canceled"
ctl status "$id2" | grep -q " canceled " || fail "status after cancel: $(ctl status "$id2")"
expect_exit 1 ctl wait "$id2" -o "$work/W.npy"
grep -q "ECANCELED" "$work/err" || fail "wait after cancel: $(cat "$work/err")"
expect_exit 1 ctl cancel 12345
expect_exit 1 ctl status 12345
grep -q "ENOTFOUND" "$work/err" || fail "unknown id: $(cat "$work/err")"

# A result nobody waits for expires after detach_keep_s.
id3=$(ctl submit "$work/A.npy" "$work/B.npy" --detach)
sleep 2.5
ctl status "$id3" | grep -q " expired " || fail "not expired: $(ctl status "$id3")"
expect_exit 1 ctl wait "$id3" -o "$work/W.npy"
grep -q "expired unclaimed" "$work/err" || fail "wait after expiry: $(cat "$work/err")"
grep -q "unclaimed for detach_keep_s=2 s" "$work/gemmd.log" || fail "no log line for the expiry"

# Drained: new jobs are refused EDRAINING (exit 1), the rest still
# answers; drain --wait returns once idle; resume takes jobs again.
id4=$(ctl submit "$work/A.npy" "$work/B.npy" --detach)
ctl drain | grep -q "draining" || fail "drain did not say draining"
expect_exit 1 ctl submit "$work/A.npy" "$work/B.npy" -o "$work/X.npy"
grep -q "EDRAINING" "$work/err" || fail "submit while drained: $(cat "$work/err")"
expect_exit 1 ctl submit "$work/A.npy" "$work/B.npy" --detach
ctl ping | grep -q "state draining" || fail "ping while drained does not say draining"
ctl stats --json | grep -q '"draining":true' || fail "stats do not say draining"
ctl drain --wait | grep -q "drained" || fail "drain --wait did not say drained"
ctl wait "$id4" -o "$work/W4.npy" >/dev/null
cmp -s "$work/W4.npy" "$work/S.npy" || fail "job queued before the drain"
ctl resume | grep -q "resumed" || fail "resume did not say resumed"
ctl ping | grep -q "  state ready  " || fail "ping after resume does not say ready"
ctl submit "$work/A.npy" "$work/B.npy" -o "$work/X.npy" >/dev/null

# SIGUSR1 drains too.
kill -USR1 "$pid"
for _ in $(seq 100); do
	ctl stats --json | grep -q '"draining":true' && break
	sleep 0.05
done
expect_exit 1 ctl submit "$work/A.npy" "$work/B.npy" -o "$work/X.npy"
grep -q "EDRAINING" "$work/err" || fail "SIGUSR1 did not drain: $(cat "$work/err")"
ctl resume >/dev/null

# --help, and usage errors exit 2.
for c in status wait cancel drain resume; do
	"$GEMMCTL" "$c" --help | grep -q "^Usage: gemmctl $c" || fail "$c --help"
done
"$GEMMCTL" --help | grep -q "wait ID -o OUT.npy" || fail "gemmctl --help lists no wait"
expect_exit 2 ctl status
expect_exit 2 ctl status abc
expect_exit 2 ctl status 0
expect_exit 2 ctl wait 5
expect_exit 2 ctl cancel 5 6
expect_exit 2 ctl resume --wait
expect_exit 2 ctl submit "$work/A.npy" "$work/B.npy" --detach -o "$work/X.npy"

stop_gemmd
expect_exit 3 "$GEMMCTL" status 5 --url "$ipc" --timeout 500
expect_exit 3 "$GEMMCTL" drain --url "$ipc" --timeout 500
echo "queue: ok"
