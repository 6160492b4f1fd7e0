#!/usr/bin/env bash
# End to end: list, verify (scaled-down, every pass on and off) and a short run with JSON output.
# Usage: smoke_test.sh path/to/cuvil-bench SUITE
set -euo pipefail
BENCH=$1
SUITE=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BENCH" list >"$TMP/list.txt"
grep -q "$SUITE" "$TMP/list.txt"
"$BENCH" verify --suite "$SUITE" --rungs all --each-pass
# Property check: configurations drawn from every knob's range, odd-sized scaled-down graphs.
# int8's stated bound (5e-2) is for ResNet-50; per-tensor int8 is not meant for transformers.
exclude=""
[ "$SUITE" = resnet50 ] || exclude="--random-exclude int8"
"$BENCH" verify --suite "$SUITE" --random-configs 12 --seed 7 $exclude
