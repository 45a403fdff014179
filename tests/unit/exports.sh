#!/bin/sh
# Test 'exports' (suite 'unit'): libgemmd.so ($1) has soname
# libgemmd.so.0 and exports exactly the functions gemmd.h ($2) declares,
# each under the version node GEMMD_0: no internal gm_* symbol, none of
# the public API missing.
set -eu
lib=$1
header=$2

readelf -d "$lib" | grep -q 'Library soname: \[libgemmd.so.0\]' ||
	{ echo "soname is not libgemmd.so.0"; exit 1; }
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sort)
declared=$(grep -o '^[a-z].*\bgemmd_[a-z_]*(' "$header" |
	grep -o 'gemmd_[a-z_]*($' | tr -d '(' | sed 's/$/@@GEMMD_0/' | sort)
others=$(nm -D --defined-only "$lib" | awk '$2 != "T" && $3 != "GEMMD_0"')
if [ "$exported" != "$declared" ] || [ -n "$others" ]; then
	echo "exported and declared differ:"
	echo "$exported" >"${TMPDIR:-/tmp}/exports.$$"
	echo "$declared" | diff - "${TMPDIR:-/tmp}/exports.$$" || true
	rm -f "${TMPDIR:-/tmp}/exports.$$"
	echo "other symbols: $others"
	exit 1
fi
echo "exports: $(echo "$exported" | wc -l) functions, all in gemmd.h"
