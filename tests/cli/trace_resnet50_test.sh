#!/usr/bin/env bash
# report flame --format trace on a real `run --probes ops` of ResNet-50 b1: every op event nests
# under exactly the blocks of its node name (layer1 > layer1.0 > layer1.0.conv1) by the rule trace
# readers apply (trace_nesting.py), none overlaps its neighbour, and there is one event per op.
# Usage: trace_resnet50_test.sh path/to/cuvil-bench
set -euo pipefail
BENCH=$1
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BENCH" run --suite resnet50 --rungs b1 --warmup 1 --warmup-time 0 --min-samples 3 \
  --max-samples 3 --min-time 0 --timeout 10 --probes ops --probe-iterations 2 \
  --out "$TMP/run.json" --no-db --quiet >"$TMP/stdout" 2>"$TMP/stderr" ||
  { cat "$TMP/stdout" "$TMP/stderr"; exit 1; }
"$BENCH" report flame "$TMP/run.json" --format trace -o "$TMP/run.trace.json" >/dev/null
records=$(python3 -c 'import json, sys
doc = json.load(open(sys.argv[1]))
med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"][0]
print(len(med["cuvil"]["ops"]["records"]))' "$TMP/run.json")
ops=$(python3 -c 'import json, sys
print(sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X" and e.get("cat") != "block"))' "$TMP/run.trace.json")
[ "$ops" -eq "$records" ] || { echo "FAIL: $ops op events for $records records"; exit 1; }
python3 "$HERE/trace_nesting.py" "$TMP/run.trace.json" 50
