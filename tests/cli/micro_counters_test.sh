#!/usr/bin/env bash
# The micro-benchmarks' counters: a counter whose name carries its unit ("GB/s") is not flagged a
# rate, so Google Benchmark prints "GB/s=9.661" and not "GB/s=9.661/s"; the share of peak is
# named pct_peak_flops / pct_peak_bw as in run.json (never "%peak" or "pct_peak").
# Usage: micro_counters_test.sh path/to/cuvil-micro-gemm
set -u
GEMM=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
CUVIL_THREADS=1 "$GEMM" --benchmark_filter='^BM_stream_read/' --benchmark_out="$TMP/out.json" \
  --benchmark_out_format=json --benchmark_color=false >"$TMP/stdout" 2>"$TMP/stderr" ||
  { fail "cuvil-micro-gemm: exit status $?"; cat "$TMP/stderr"; }
cat "$TMP/stdout"
grep -q 'GB/s=' "$TMP/stdout" || fail "console: no GB/s counter"
if grep -Eq '/s=[0-9.]+[kMGTPE]?/s' "$TMP/stdout"; then fail "console: a /s counter printed as a rate (…/s=N/s)"; fi
python3 - "$TMP/out.json" <<'PY' || fail "json: wrong counters"
import json, sys
doc = json.load(open(sys.argv[1]))
runs = [b for b in doc["benchmarks"] if b["name"].startswith("BM_stream_read")]
assert runs, doc["benchmarks"]
for b in runs:
    assert b["GB/s"] > 0, b
    for old in ("%peak", "pct_peak", "%bw"):
        assert old not in b, (old, b)
print("json counters ok: GB/s %.3g" % runs[0]["GB/s"])
PY
if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "micro counters ok"
