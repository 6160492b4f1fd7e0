#!/usr/bin/env bash
# A short real run of ResNet-50 b1 writes Google Benchmark JSON with one entry per repetition.
set -euo pipefail
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BENCH" run --suite resnet50 --rungs b1 --warmup 0 --min-repetitions 2 --min-time 0 \
  --out "$TMP/run.json" | tee "$TMP/stdout"
grep -q 'resnet50/b1' "$TMP/stdout"
/usr/bin/python3 - "$TMP/run.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert "context" in doc and "benchmarks" in doc
its = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
assert len(its) == 2, its
med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"][0]
assert med["real_time"] > 0 and med["time_unit"] == "ms"
assert len(med["cuvil"]["real_ns"]) == 2
assert med["cuvil"]["declared_flops"] > 8e9, med["cuvil"]["declared_flops"]  # 4.09 GMAC
print("run.json ok")
PY
