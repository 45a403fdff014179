#!/bin/sh
# contrib/: the example Prometheus alert rules pass `promtool check
# rules` and promtool's unit tests of when each alert fires and what it
# says (alerts/*.test.yml); the Grafana dashboard is JSON whose panels
# query Prometheus; and every metric either of them names is one a real
# gemmd serves: the names come from a scrape of /metrics of a CPU-engine
# gemmd that has run jobs. Skipped (77) without promtool (Debian
# package prometheus) or PyYAML (python3-yaml).
set -eu
here=$(dirname "$0")
src=$(cd "$here/../.." && pwd)
command -v promtool >/dev/null || { echo "no promtool: skipped"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "no PyYAML: skipped"; exit 77; }
. "$here/lib.sh"

rules="$src/contrib/prometheus/gemmd-alerts.yml"
dashboard="$src/contrib/grafana/gemmd.json"

promtool check rules "$rules" || fail "promtool check rules"
# The unit tests: their logic on a copy without annotations, the
# annotations on the rules as they are.
cp "$here"/alerts/*.test.yml "$rules" "$work/"
python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
for g in d["groups"]:
    for r in g["rules"]:
        r.pop("annotations", None)
yaml.safe_dump(d, open(sys.argv[2], "w"))' "$rules" "$work/rules.yml"
promtool test rules "$work/logic.test.yml" "$work/annotations.test.yml" ||
	fail "promtool test rules"

# What gemmd serves: every family of a scrape, with a histogram's
# _bucket, _sum and _count series.
mport=$((port + 1))
start_gemmd --engine cpu --set "metrics_listen=127.0.0.1:$mport"
"$GEMMCTL" rand 16x8 -o "$work/A.npy"
"$GEMMCTL" rand 8x4 -o "$work/B.npy"
"$GEMMCTL" submit "$work/A.npy" "$work/B.npy" -o "$work/C.npy" --url "$ipc" >/dev/null
python3 -c 'import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
for line in text.splitlines():
    f = line.split()
    if len(f) == 4 and f[:2] == ["#", "TYPE"]:
        print(f[2])
        if f[3] == "histogram":
            print(f[2] + "_bucket\n" + f[2] + "_sum\n" + f[2] + "_count")
' "http://127.0.0.1:$mport/metrics" >"$work/names" || fail "no /metrics"
grep -q '^gemmd_job_phase_seconds_bucket$' "$work/names" || fail "scrape: $(cat "$work/names")"
stop_gemmd

# Every expression of the rules and of the dashboard's panels names
# metrics gemmd serves (or Prometheus's own "up"): the identifiers left
# once strings, label matchers, label lists, ranges and functions are
# taken out.
python3 - "$rules" "$dashboard" "$work/names" <<'PY' || fail "contrib names metrics gemmd does not serve"
import json, re, sys, yaml

rules_path, dash_path, names_path = sys.argv[1:]
served = set(open(names_path).read().split()) | {"up"}
keywords = {"by", "without", "on", "ignoring", "group_left", "group_right",
            "bool", "and", "or", "unless", "offset", "inf", "nan",
            # aggregations, which may take their label list first
            "sum", "min", "max", "avg", "group", "stddev", "stdvar",
            "count", "count_values", "bottomk", "topk", "quantile"}

def metrics(expr):
    e = re.sub(r'"(\\.|[^"\\])*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", "", e)
    e = re.sub(r"\[[^\]]*\]", "", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)",
               r"\1", e)
    found = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        name, rest = m.group(0), e[m.end():].lstrip()
        if rest.startswith("(") or name in keywords:
            continue  # a function, or an operator's keyword
        if re.match(r"[0-9.]", e[m.start() - 1:m.start()] or " "):
            continue  # the exponent of a number such as 1e9
        found.add(name)
    return found

def exprs_of(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" and isinstance(v, str):
                yield v
            else:
                yield from exprs_of(v)
    elif isinstance(node, list):
        for v in node:
            yield from exprs_of(v)

dash = json.load(open(dash_path))
assert dash["panels"], "no panels"
sources = {
    "rules": list(exprs_of(yaml.safe_load(open(rules_path)))),
    "dashboard": list(exprs_of(dash)),
}
bad = 0
for where, exprs in sources.items():
    assert exprs, "no expressions in the " + where
    for expr in exprs:
        names = metrics(expr)
        if not names:
            print(f"{where}: no metric in: {expr}")
            bad += 1
        for name in sorted(names - served):
            print(f"{where}: {name} is not served by gemmd: {expr}")
            bad += 1
    print(f"{where}: {len(exprs)} expressions checked")
# Every panel queries through the dashboard's data source variable.
for p in dash["panels"]:
    if p["type"] != "row":
        assert p["datasource"]["uid"] == "${datasource}", p["title"]
        assert p["targets"], p["title"]
sys.exit(1 if bad else 0)
PY
echo "contrib: ok"
