# lib.sh - shared by the integration scripts: start a real gemmd on
# temporary sockets, wait for it, and stop it. Sourced, not run.
# Needs GEMMD and GEMMCTL (paths to the built binaries) in the environment.

work=$(mktemp -d /tmp/gemmd-test.XXXXXX)
ipc="ipc://$work/gemmd.sock"
# Two ports (port and port + 1) below the kernel's ephemeral range, where
# no outgoing connection of another process can hold them.
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
port=$((20000 + $$ % (low - 20002)))
tcp="tcp://127.0.0.1:$port"
pid=

cleanup() {
	[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	[ -f "$work/gemmd.log" ] && tail -20 "$work/gemmd.log" >&2
	exit 1
}

# start_gemmd [gemmd options...]: listens on $ipc and $tcp; returns once
# gemmd says it is ready (its engine warm).
start_gemmd() {
	"$GEMMD" --listen "$ipc" --listen "$tcp" "$@" 2>"$work/gemmd.log" &
	pid=$!
	for _ in $(seq 300); do
		"$GEMMCTL" ping --url "$ipc" --timeout 300 2>/dev/null |
			grep -q "state ready" && return 0
		kill -0 "$pid" 2>/dev/null || fail "gemmd exited at start"
		sleep 0.1
	done
	fail "gemmd did not say it was ready"
}

# stop_gemmd: SIGTERM, and expect exit status 0.
stop_gemmd() {
	kill -TERM "$pid"
	wait "$pid" || fail "gemmd exited with status $?"
	pid=
}

# expect_exit CODE command...: run and check the exit status.
expect_exit() {
	want=$1
	shift
	set +e
	"$@" >"$work/out" 2>"$work/err"
	got=$?
	set -e
	[ "$got" -eq "$want" ] ||
		fail "'$*' exited $got, expected $want: $(cat "$work/err")"
}

# json KEY: the value of KEY (a dotted path) in the JSON document on stdin.
json() {
	python3 -c 'import json, sys
v = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    v = v[k]
print(json.dumps(v) if isinstance(v, (dict, list, bool)) else v)' "$1"
}
