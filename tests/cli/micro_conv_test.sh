#!/usr/bin/env bash
# cuvil-micro-conv runs every lowering of one ResNet-50 convolution, and of one with the residual
# add fused (an operand besides x and the constants), to the end: exit 0 and a GFLOP/s counter
# for each (lowering releases the weights a prepared kernel replaced; the
# benchmark once dereferenced them and crashed).
# Usage: micro_conv_test.sh path/to/cuvil-micro-conv
set -u
CONV=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
CUVIL_THREADS=1 "$CONV" --benchmark_filter='^conv/(layer4_3x3_512|res_layer4_1x1_512_2048)/' --benchmark_out="$TMP/out.json" \
  --benchmark_out_format=json --benchmark_color=false >"$TMP/stdout" 2>"$TMP/stderr"
status=$?
cat "$TMP/stdout"
if [ "$status" -ne 0 ]; then echo "FAIL cuvil-micro-conv: exit status $status"; cat "$TMP/stderr"; exit 1; fi
python3 - "$TMP/out.json" <<'PY' || { echo "FAIL json: a lowering did not run"; exit 1; }
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
def lowerings(shape):
    return {b["name"].split("/")[2] for b in runs if b["name"].split("/")[1] == shape}
for want in ("im2col", "direct_nhwc", "winograd_nhwc", "direct_nchw16c", "onednn"):
    assert want in lowerings("layer4_3x3_512"), (want, sorted(lowerings("layer4_3x3_512")))
for want in ("direct_nhwc", "gemm_1x1", "onednn"):
    assert want in lowerings("res_layer4_1x1_512_2048"), want
for b in runs:
    if b.get("error_occurred"):  # a lowering this CPU lacks (bf16) says so and is skipped
        print("skipped:", b["name"], b.get("error_message", ""))
        continue
    assert b["GFLOP/s"] > 0, b
print("micro conv ok:", len(runs), "benchmarks")
PY
