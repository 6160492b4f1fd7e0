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
