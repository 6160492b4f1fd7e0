#!/usr/bin/env bash
# cuvil beside PyTorch on models a user brings: exports torchvision ResNet-18, MobileNetV2 and
# ViT-B/16 (batch 1, 224 px, fixed-seed weights) to ONNX and to a torch.save'd module, then
# measures `cuvil-bench run --model M.onnx --baseline torch`: cuvil, PyTorch eager and
# TorchScript-frozen on the same inputs and thread count, samples interleaved in one process.
# Results go to docs/performance.md by hand, with this command, the commit and the machine.
#
# usage: scripts/vs_pytorch_onnx.sh [OUT_DIR] [extra cuvil-bench run options...]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/vs_pytorch}
shift || true
BENCH=${CUVIL_BENCH:-build/bench_suite/cuvil-bench}
[ -x "$BENCH" ] || scripts/build.sh
mkdir -p "$OUT"
for model in resnet18 mobilenet_v2 vit_b_16; do
  [ -f "$OUT/$model.onnx" ] || /usr/bin/python3 bench_suite/python/export_torchvision.py "$model" "$OUT" >/dev/null
  "$BENCH" run --model "$OUT/$model.onnx" --baseline torch --no-db -q --out "$OUT/$model.run.json" "$@" \
    | sed -n '/^PyTorch/,/^speed-up/p'
done
