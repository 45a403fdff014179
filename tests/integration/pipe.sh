#!/bin/sh
# gemmctl in pipelines, against a real gemmd: '-' for stdin and stdout
# .npy files, --json on every command that prints (each line parsed as
# JSON), float16 .npy inputs, and an output path that cannot be written
# refused before the job is sent (or before a detached result is taken).
set -eu
. "$(dirname "$0")/lib.sh"

start_gemmd --engine cpu --set cpu_threads=1
ctl() { "$GEMMCTL" "$@" --url "$ipc"; }
rand() { "$GEMMCTL" rand "$@"; }
jobs_ok() { ctl stats --json | json stats.jobs.ok; }

rand 37x19 -o "$work/A.npy" --seed 1
rand 19x23 -o "$work/B.npy" --seed 2
rand 37x23 -o "$work/C.npy" --seed 3

# rand -o - writes the bytes rand -o FILE does.
rand 37x19 -o - --seed 1 >"$work/A2.npy"
cmp -s "$work/A.npy" "$work/A2.npy" || fail "rand -o - differs from rand -o FILE"

# Each input from stdin, the result to stdout: the same bytes as files.
ctl submit "$work/A.npy" "$work/B.npy" --c "$work/C.npy" --beta 0.5 \
	-o "$work/want.npy" >/dev/null
ctl submit - "$work/B.npy" --c "$work/C.npy" --beta 0.5 -o - \
	<"$work/A.npy" >"$work/got.npy" 2>"$work/report"
cmp -s "$work/want.npy" "$work/got.npy" || fail "A from stdin, result to stdout"
grep -q "^ok  37x23x19 fp64" "$work/report" || fail "-o -: no report on stderr"
cat "$work/B.npy" | ctl submit "$work/A.npy" - --c "$work/C.npy" --beta 0.5 \
	-o - >"$work/got.npy" 2>/dev/null
cmp -s "$work/want.npy" "$work/got.npy" || fail "B from a pipe"
rand 37x23 -o - --seed 3 | ctl submit "$work/A.npy" "$work/B.npy" --c - \
	--beta 0.5 -o "$work/got.npy" >/dev/null
cmp -s "$work/want.npy" "$work/got.npy" || fail "C from a pipe"
# A chain: the result of one job is the input of the next.
rand 23x5 -o "$work/D.npy"
ctl submit "$work/A.npy" "$work/B.npy" -o - 2>/dev/null |
	ctl submit - "$work/D.npy" -o "$work/chain.npy" --verify | grep -q "verify: .* ok" ||
	fail "chained submit"

expect_exit 2 ctl submit - - -o "$work/X.npy"
grep -q "only one input can be '-'" "$work/err" || fail "two stdins: $(cat "$work/err")"
head -c 100 "$work/A.npy" >"$work/short.npy"
cat "$work/short.npy" | expect_exit 4 ctl submit - "$work/B.npy" -o "$work/X.npy"
grep -q "stdin: input ends before the array" "$work/err" || fail "short stdin: $(cat "$work/err")"
expect_exit 2 script -qec "$GEMMCTL rand 2x2 -o -" /dev/null

# An output that cannot be written: refused (exit 4) before the job is
# sent, and an existing file is not truncated by the check.
before=$(jobs_ok)
expect_exit 4 ctl submit "$work/A.npy" "$work/B.npy" -o /nonexistent/dir/O.npy
grep -q "/nonexistent/dir/O.npy: cannot be written" "$work/err" ||
	fail "unwritable -o: $(cat "$work/err")"
[ "$(jobs_ok)" = "$before" ] || fail "the job ran although its result could not be written"
cp "$work/want.npy" "$work/keep.npy"
expect_exit 2 ctl submit "$work/A.npy" "$work/A.npy" -o "$work/keep.npy"
cmp -s "$work/want.npy" "$work/keep.npy" || fail "a failed submit changed the existing output"
# wait: the result stays with the daemon until it can be written.
id=$(ctl submit "$work/A.npy" "$work/B.npy" --detach)
expect_exit 4 ctl wait "$id" -o /nonexistent/dir/W.npy
ctl wait "$id" -o "$work/W.npy" >/dev/null || fail "the result was lost by the refused wait"
ctl submit "$work/A.npy" "$work/B.npy" -o "$work/S.npy" >/dev/null
cmp -s "$work/W.npy" "$work/S.npy" || fail "wait after a refused wait: a different result"

# float16 .npy inputs: converted for fp32 jobs, sent as they are for fp16
# (which the CPU engine refuses, by name, so the file was read).
rand 16x8 -o "$work/H.npy" --dtype fp16
rand 8x4 -o "$work/H2.npy" --dtype fp16
python3 -c 'import sys
b = open(sys.argv[1], "rb").read()
assert b"<f2" in b[:128], b[:128]' "$work/H.npy" || fail "rand --dtype fp16 wrote no float16 .npy"
ctl submit "$work/H.npy" "$work/H2.npy" --dtype fp32 -o "$work/X.npy" --verify |
	grep -q "verify: .* ok" || fail "float16 inputs, fp32 job"
expect_exit 1 ctl submit "$work/H.npy" "$work/H2.npy" --dtype fp16 -o "$work/X.npy"
grep -q "dtype fp16 is unsupported by the cpu engine" "$work/err" ||
	fail "float16 inputs, fp16 job: $(cat "$work/err")"

# --json: one document per command, its fields as documented.
ctl ping --json >"$work/j"
[ "$(json engine <"$work/j")" = cpu ] && [ "$(json url <"$work/j")" = "$ipc" ] ||
	fail "ping --json: $(cat "$work/j")"
ctl submit "$work/A.npy" "$work/B.npy" -o "$work/X.npy" --json --verify >"$work/j"
[ "$(json ok <"$work/j")" = true ] && [ "$(json m <"$work/j")" = 37 ] &&
	[ "$(json verify.ok <"$work/j")" = true ] &&
	[ "$(json timings_us.total <"$work/j" | cut -c1)" != 0 ] ||
	fail "submit --json: $(cat "$work/j")"
ctl submit "$work/A.npy" "$work/B.npy" -o - --json 2>"$work/j" >/dev/null
[ "$(json n <"$work/j")" = 23 ] || fail "submit -o - --json: report not on stderr"
id=$(ctl submit "$work/A.npy" "$work/B.npy" --detach --json | json id)
[ "$(ctl status "$id" --json | json job)" = "$id" ] || fail "status --json"
[ "$(ctl wait "$id" -o "$work/X.npy" --json | json id)" = "$id" ] || fail "wait --json"
id=$(ctl submit "$work/A.npy" "$work/B.npy" --detach --json | json id)
[ "$(ctl cancel "$id" --json | json ok)" = true ] || fail "cancel --json"
[ "$(ctl drain --json | json draining)" = true ] || fail "drain --json"
[ "$(ctl drain --wait --json | json idle)" = true ] || fail "drain --wait --json"
expect_exit 1 ctl submit "$work/A.npy" "$work/B.npy" -o "$work/X.npy" --json
[ "$(json error <"$work/out")" = EDRAINING ] || fail "a refusal with --json: $(cat "$work/out")"
[ "$(ctl resume --json | json draining)" = false ] || fail "resume --json"
ctl stats --json | json stats.jobs >/dev/null || fail "stats --json"

stop_gemmd
expect_exit 3 ctl ping --json --timeout 500
[ "$(json ok <"$work/out")" = false ] || fail "no daemon, --json: $(cat "$work/out")"
echo "pipe: ok"
