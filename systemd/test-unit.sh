#!/bin/sh
# Test 'service' (suite 'systemd'): installs the build whose directory is $1
# into a temporary DESTDIR and checks the installed gemmd.service there.
# `systemd-analyze verify` must print nothing (a warning fails too), and
# the offline `systemd-analyze security` review must rate the unit's
# exposure at most 3.0. UNIT is the unit's installed path, SBINDIR
# gemmd's, MANDIR the manual pages' (which verify looks up with man(1),
# the unit naming them). Exit 77 (skipped) without systemd-analyze.
set -eu
build=$1
max_exposure=3.0

if ! command -v systemd-analyze >/dev/null 2>&1; then
	echo "systemd-analyze not found: skipped"
	exit 77
fi
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet >/dev/null
test -x "$dest$SBINDIR/gemmd"
test -f "$dest$UNIT"

# verify --root resolves the unit's dependencies (sysinit.target, ...)
# and ExecStart= inside the root, so give it the host's own units.
for d in /usr/lib/systemd/system /lib/systemd/system; do
	if [ -d "$d" ]; then
		mkdir -p "$dest/usr/lib/systemd"
		cp -r "$d" "$dest/usr/lib/systemd/"
		break
	fi
done
# ExecReload= runs kill(1), which verify looks for inside the root too.
mkdir -p "$dest/bin"
cp /bin/kill "$dest/bin/kill"
out=$(MANPATH="$dest$MANDIR" systemd-analyze verify --root="$dest" "$UNIT" 2>&1) || {
	echo "$out"
	echo "systemd-analyze verify failed"
	exit 1
}
if [ -n "$out" ]; then
	echo "$out"
	echo "systemd-analyze verify: warnings"
	exit 1
fi
echo "systemd-analyze verify: clean"

report=$(systemd-analyze security --offline=yes --root="$dest" "$UNIT")
echo "$report"
exposure=$(echo "$report" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
if [ -z "$exposure" ]; then
	echo "no exposure level in the report"
	exit 1
fi
echo "exposure $exposure (at most $max_exposure)"
awk -v e="$exposure" -v m="$max_exposure" 'BEGIN { exit !(e <= m) }'
