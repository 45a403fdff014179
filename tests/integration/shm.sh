#!/bin/sh
# gemmctl submit through a shared-memory region of its own, against a
# real CPU-engine gemmd: over ipc:// the .npy data is read straight into a
# region and the result written from it, and the result file is the same,
# byte for byte, as the plain path's (tcp://, --no-shm), for C- and
# Fortran-order inputs, fp64 and fp32, with and without C, transposed,
# converted and from stdin; the daemon's regions.jobs counts the region
# path and only it; a daemon without regions, or over its quota, gets the
# plain path with the same result; malformed files fail as on the plain
# path, with the same messages.
set -eu
. "$(dirname "$0")/lib.sh"

start_gemmd --engine cpu --set cpu_threads=1
rand() { "$GEMMCTL" rand "$@"; }
rjobs() { "$GEMMCTL" stats --json --url "$ipc" | json stats.regions.jobs; }

# same NAME [submit options...]: the job over ipc:// (a region), over
# tcp:// and with --no-shm (plain) give the same result file, and only
# the first was a job in a region.
same() {
	name=$1
	shift
	before=$(rjobs)
	"$GEMMCTL" submit "$@" --url "$ipc" -o "$work/shm.npy" >/dev/null ||
		fail "$name: ipc:// failed"
	[ $(($(rjobs) - before)) -eq 1 ] || fail "$name: the job was not in a region"
	"$GEMMCTL" submit "$@" --url "$tcp" -o "$work/tcp.npy" >/dev/null ||
		fail "$name: tcp:// failed"
	"$GEMMCTL" submit "$@" --url "$ipc" --no-shm -o "$work/plain.npy" \
		>/dev/null || fail "$name: --no-shm failed"
	[ $(($(rjobs) - before)) -eq 1 ] || fail "$name: a plain job was in a region"
	cmp -s "$work/shm.npy" "$work/tcp.npy" || fail "$name: region and tcp:// differ"
	cmp -s "$work/shm.npy" "$work/plain.npy" || fail "$name: region and --no-shm differ"
}

for dt in fp64 fp32; do
	for ord in "" --fortran; do
		rand 67x45 --dtype $dt $ord -o "$work/A$dt$ord.npy" --seed 1
		rand 45x39 --dtype $dt $ord -o "$work/B$dt$ord.npy" --seed 2
		rand 67x39 --dtype $dt $ord -o "$work/C$dt$ord.npy" --seed 3
		rand 45x67 --dtype $dt $ord -o "$work/T$dt$ord.npy" --seed 4
		a="$work/A$dt$ord.npy" b="$work/B$dt$ord.npy"
		c="$work/C$dt$ord.npy" t="$work/T$dt$ord.npy"
		same "$dt$ord" "$a" "$b"
		same "$dt$ord C" "$a" "$b" --c "$c" --beta 0.5 --alpha -2
		same "$dt$ord transa" "$t" "$b" --transa --c "$c" --beta 1
		same "$dt$ord verify" "$a" "$b" --c "$c" --beta 0.25 --verify
	done
done
# Inputs that are converted on their way into the region: B and C in the
# other order than A's, fp32 files in an fp64 job, fp64 and fp16 files
# in an fp32 job (the CPU engine runs fp64 and fp32 only).
same "mixed order" "$work/Afp64.npy" "$work/Bfp64--fortran.npy" \
	--c "$work/Cfp32--fortran.npy" --beta 0.5
same "fp32 to fp64" "$work/Afp32.npy" "$work/Bfp32.npy" --dtype fp64
rand 45x39 --dtype fp16 --fortran -o "$work/Bfp16.npy" --seed 7
same "to fp32" "$work/Afp64.npy" "$work/Bfp16.npy" --dtype fp32 \
	--c "$work/Cfp64.npy" --beta 1

# stdin, read whole before the job, then into the region.
before=$(rjobs)
"$GEMMCTL" submit - "$work/Bfp64.npy" --url "$ipc" -o "$work/stdin.npy" \
	<"$work/Afp64.npy" >/dev/null || fail "A from stdin"
[ $(($(rjobs) - before)) -eq 1 ] || fail "stdin: the job was not in a region"
"$GEMMCTL" submit "$work/Afp64.npy" "$work/Bfp64.npy" --url "$tcp" \
	-o "$work/tcp.npy" >/dev/null
cmp -s "$work/stdin.npy" "$work/tcp.npy" || fail "A from stdin differs"

# Large enough for the library to stage the plain path through its own
# region: the region path still gives the same file.
rand 400x300 -o "$work/LA.npy" --seed 5
rand 300x350 --fortran -o "$work/LB.npy" --seed 6
same "staged" "$work/LA.npy" "$work/LB.npy"

# --detach takes the plain path (a detached job cannot name a region),
# and its result is the same.
before=$(rjobs)
id=$("$GEMMCTL" submit "$work/Afp64.npy" "$work/Bfp64.npy" --url "$ipc" --detach)
"$GEMMCTL" wait "$id" --url "$ipc" -o "$work/det.npy" >/dev/null || fail "wait"
"$GEMMCTL" submit "$work/Afp64.npy" "$work/Bfp64.npy" --url "$ipc" \
	-o "$work/shm.npy" >/dev/null
cmp -s "$work/det.npy" "$work/shm.npy" || fail "--detach differs"
[ $(($(rjobs) - before)) -eq 1 ] || fail "--detach: not exactly the one region job"

# Malformed files: the same exit status and message on both paths.
a="$work/Afp64.npy"
size=$(wc -c <"$a")
head -c $((size - 8)) "$a" >"$work/trunc.npy"
LC_ALL=C sed 's/(67, 45)/(68, 45)/' "$a" >"$work/lies.npy"
printf 'not a npy file' >"$work/junk.npy"
for bad in trunc lies junk; do
	expect_exit 4 "$GEMMCTL" submit "$work/$bad.npy" "$work/Bfp64.npy" \
		--url "$ipc" -o "$work/X.npy"
	cp "$work/err" "$work/err.ipc"
	expect_exit 4 "$GEMMCTL" submit "$work/$bad.npy" "$work/Bfp64.npy" \
		--url "$tcp" -o "$work/X.npy"
	cmp -s "$work/err" "$work/err.ipc" ||
		fail "$bad: ipc:// says $(cat "$work/err.ipc"), tcp:// $(cat "$work/err")"
done
grep -q "junk.npy: not a .npy file" "$work/err" || fail "junk: $(cat "$work/err")"
expect_exit 4 "$GEMMCTL" submit "$work/trunc.npy" "$work/Bfp64.npy" --url "$ipc" -o "$work/X.npy"
grep -q "trunc.npy: file is $((size - 8)) bytes, header says $size " "$work/err" ||
	fail "truncated: $(cat "$work/err")"
expect_exit 4 "$GEMMCTL" submit "$work/lies.npy" "$work/Bfp64.npy" --url "$ipc" -o "$work/X.npy"
grep -q "lies.npy: file is $size bytes, header says $((size + 45 * 8)) " "$work/err" ||
	fail "lying header: $(cat "$work/err")"
head -c $((size - 8)) "$a" | expect_exit 4 "$GEMMCTL" submit - \
	"$work/Bfp64.npy" --url "$ipc" -o "$work/X.npy"
grep -q "stdin: input ends before the array does" "$work/err" ||
	fail "short stdin: $(cat "$work/err")"
[ ! -e "$work/X.npy" ] || fail "a failed submit left its output"

# A daemon without regions, and one whose quota refuses the region: the
# plain path, the same result.
# (The CPU engine cuts a large job into pieces by a size it fixes for its
# life, so a result is compared with one of the same daemon's.)
for set in regions=false region_max_bytes=1048576; do
	"$GEMMD" --listen "ipc://$work/b.sock" --engine cpu --set cpu_threads=1 \
		--set "$set" 2>"$work/b.log" &
	bpid=$!
	for _ in $(seq 300); do
		"$GEMMCTL" ping --url "ipc://$work/b.sock" --timeout 300 2>/dev/null |
			grep -q "state ready" && break
		sleep 0.1
	done
	"$GEMMCTL" submit "$work/LA.npy" "$work/LB.npy" --url "ipc://$work/b.sock" \
		--no-shm -o "$work/want.npy" >/dev/null || fail "$set: --no-shm failed"
	"$GEMMCTL" submit "$work/LA.npy" "$work/LB.npy" --url "ipc://$work/b.sock" \
		-o "$work/got.npy" >/dev/null || fail "$set: submit failed"
	cmp -s "$work/want.npy" "$work/got.npy" || fail "$set: result differs"
	"$GEMMCTL" stats --json --url "ipc://$work/b.sock" >"$work/bstats"
	[ "$(json stats.regions.jobs <"$work/bstats")" = 0 ] ||
		fail "$set: a job in a region"
	case $set in region_max_bytes=*)
		[ "$(json stats.regions.refused <"$work/bstats")" -gt 0 ] ||
			fail "$set: no region refused"
	esac
	kill -TERM "$bpid"
	wait "$bpid" || fail "$set: gemmd exited with status $?"
done

stop_gemmd
