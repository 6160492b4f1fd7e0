#!/usr/bin/env bash
# cuvil-micro-conv runs every lowering of one ResNet-50 convolution to the end: exit 0 and a
# GFLOP/s counter for each (lowering releases the weights a prepared kernel replaced; the
# benchmark once dereferenced them and crashed).
# Usage: micro_conv_test.sh path/to/cuvil-micro-conv
set -u
CONV=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CUVIL_THREADS=1 "$CONV" --benchmark_filter='^conv/layer4_3x3_512/' --benchmark_out="$TMP/out.json" \
  --benchmark_out_format=json --benchmark_color=false >"$TMP/stdout" 2>"$TMP/stderr"
status=$?
cat "$TMP/stdout"
if [ "$status" -ne 0 ]; then echo "FAIL cuvil-micro-conv: exit status $status"; cat "$TMP/stderr"; exit 1; fi
python3 - "$TMP/out.json" <<'PY' || { echo "FAIL json: a lowering did not run"; exit 1; }
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
names = {b["name"].split("/")[2] for b in runs}
for want in ("im2col", "direct_nhwc", "winograd_nhwc", "direct_nchw16c", "onednn"):
    assert want in names, (want, sorted(names))
for b in runs:
    if b.get("error_occurred"):  # a lowering this CPU lacks (bf16) says so and is skipped
        print("skipped:", b["name"], b.get("error_message", ""))
        continue
    assert b["GFLOP/s"] > 0, b
print("micro conv ok:", len(runs), "benchmarks")
PY
