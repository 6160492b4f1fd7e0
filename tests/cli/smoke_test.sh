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
# int8's stated bound (5e-2) is for ResNet-50: the llama3-8b and sdxl suites leave it out of
# random configurations by default, and say so.
"$BENCH" verify --suite "$SUITE" --random-configs 12 --seed 7 >"$TMP/random.txt"
cat "$TMP/random.txt"
if [ "$SUITE" = resnet50 ]; then
  if grep -q "never draw" "$TMP/random.txt"; then exit 1; fi  # (set -e ignores a "! grep")
else
  grep -q "never draw: int8 (the $SUITE suite's default" "$TMP/random.txt"
fi
