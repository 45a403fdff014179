#!/bin/sh
# The manual pages (man/*.scd, rendered by scdoc in the build): man(1)
# renders each at 80 columns without a warning, and each names what the
# programs have: gemmd(8) every option of `gemmd --help`, every metric
# family a scrape of /metrics serves and every top-level key of the
# stats document; gemmctl(1) every command of `gemmctl --help` and every
# long option of each command's --help; gemmd.json(5) every key of
# `gemmd --print-config`. Skipped (77) when the pages were not built
# (no scdoc) or man(1) is missing. Usage: man.sh DIR (where the pages
# were built).
set -eu
here=$(dirname "$0")
pages=$1
command -v man >/dev/null || { echo "no man: skipped"; exit 77; }
for p in gemmd.8 gemmctl.1 gemmd.json.5; do
	[ -f "$pages/$p" ] || { echo "$p not built (no scdoc): skipped"; exit 77; }
done
. "$here/lib.sh"

# The text of page $1, on long lines, words hyphenated at a line's end
# joined again.
text() {
	MANWIDTH=1000 man -l "$pages/$1" 2>/dev/null | col -b |
		python3 -c 'import sys; sys.stdout.write(sys.stdin.read().replace("\u2010\n", ""))'
}

# names WORD...: fail unless page $page names each WORD.
names() {
	text "$page" >"$work/page"
	for w in "$@"; do
		grep -qF -- "$w" "$work/page" || fail "$page does not name $w"
	done
}

for p in gemmd.8 gemmctl.1 gemmd.json.5; do
	MANWIDTH=80 man --warnings -l "$pages/$p" >/dev/null 2>"$work/warnings"
	[ ! -s "$work/warnings" ] || fail "$p: $(cat "$work/warnings")"
	[ "$(text "$p" | wc -l)" -gt 50 ] || fail "$p renders almost nothing"
done

page=gemmd.8
# shellcheck disable=SC2046
names $("$GEMMD" --help | grep -o -- '--[a-z-]*' | sort -u)
mport=$((port + 1))
start_gemmd --engine cpu --set "metrics_listen=127.0.0.1:$mport"
python3 -c 'import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
for line in text.splitlines():
    if line.startswith("# TYPE "):
        print(line.split()[2])' "http://127.0.0.1:$mport/metrics" >"$work/families"
"$GEMMCTL" stats --json --url "$ipc" | python3 -c 'import json, sys
print("\n".join(json.load(sys.stdin)["stats"]))' >"$work/keys"
stop_gemmd
[ -s "$work/families" ] && [ -s "$work/keys" ] || fail "no metrics or stats"
# shellcheck disable=SC2046
names $(cat "$work/families" "$work/keys")

page=gemmctl.1
commands=$("$GEMMCTL" --help | sed -n '/^Commands:/,/^$/p' | awk '/^  [a-z]/ { print $1 }')
[ -n "$commands" ] || fail "no commands in gemmctl --help"
for c in $commands; do
	# shellcheck disable=SC2046
	names "$c" $("$GEMMCTL" "$c" --help | grep -o -- '--[a-z-]*' | sort -u)
done

page=gemmd.json.5
# shellcheck disable=SC2046
names $("$GEMMD" --print-config | sed -n 's/^\t"\([a-z_]*\)":.*/\1 (/p')
echo "man pages render cleanly and name what the programs have"
