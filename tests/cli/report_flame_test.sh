#!/usr/bin/env bash
# cuvil-bench report flame on synthetic run.json files with per-op records (docs/probes.md
# §2): every output format, rung selection, native samples, a differential graph, and bad input
# (one-line error naming the file and field, exit 2).
# Usage: report_flame_test.sh path/to/cuvil-bench
set -u
BENCH=$1
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expect_file() { [ -s "$2" ] || fail "$1: $2 missing or empty"; }
expect_one_line_error() {
  local lines
  lines=$(grep -c . "$TMP/stderr")
  [ "$lines" -eq 1 ] || { fail "$1: expected a one-line error, got $lines lines"; cat "$TMP/stderr"; }
  expect_err "$1" "$2"
}
valid_json() { python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$2" || fail "$1: $2 is not JSON"; }

# record STEP NODE OP KERNEL NS
record() {
  printf '{"step": %s, "node": "%s", "op": "%s", "kernel": "%s", "lowering": "generated", "input_shapes": [[1,3,7,7]], "output_shape": [1,3,7,7], "flops": 1000, "bytes": 300, "ns_per_iteration": %s, "ns_min": %s, "ns_median": %s, "gflops": 1.0, "pct_peak_flops": 1.0, "gbps": 0.3, "pct_peak_bw": 1.0, "counters": {}}' \
    "$1" "$2" "$3" "$4" "$5" "$5" "$5"
}
# rung NAME SCALE: a median entry with seven per-op records, times multiplied by SCALE.
rung() {
  local s=$2 recs
  recs="$(record 0 conv1 conv2d conv2d.im2col $((1700 * s))), $(record 1 layer1.0.conv1 conv2d conv2d.1x1_gemm $((3100 * s))), $(record 2 layer1.0.conv2 conv2d conv2d.im2col $((7300 * s))), $(record 3 layer1.1.conv1 conv2d conv2d.1x1_gemm 1100), $(record 4 layer1.1.relu relu relu 170), $(record 5 avgpool global_avg_pool global_avg_pool 30), $(record 6 fc linear gemm.packed 1300)"
  printf '{"name": "%s_median", "run_name": "%s", "run_type": "aggregate", "aggregate_name": "median", "real_time": 0.02, "cpu_time": 0.02, "time_unit": "ms", "iterations": 7, "threads": 2, "cuvil": {"real_ns": [20000, 20100], "ops": {"iterations": 17, "total_ns_per_iteration": 14700, "measured_ns_per_iteration": 15000, "records": [%s]}}}' \
    "$1" "$1" "$recs"
}
printf '{"context": {"date": "2024-05-01T10:00:00+0000", "num_cpus": 2}, "benchmarks": [%s, %s]}\n' \
  "$(rung toy/b1 1)" "$(rung toy/b3 3)" >"$TMP/run.json"
printf '{"context": {}, "benchmarks": [%s]}\n' "$(rung toy/b1 2)" >"$TMP/new.json"
printf '{"context": {}, "benchmarks": [{"name": "toy/b1_median", "run_name": "toy/b1", "run_type": "aggregate", "aggregate_name": "median", "real_time": 1, "time_unit": "ms"}]}\n' >"$TMP/plain.json"
printf 'main;run;conv 17\nmain;run;gemm 3\nmain;idle 1\n' >"$TMP/samples.folded"

# Every format from per-op records.
if run_bench "all formats" 0 report flame "$TMP/run.json" -o "$TMP/out/all"; then
  for f in svg folded speedscope.json trace.json; do expect_file "all formats" "$TMP/out/all.$f"; done
  valid_json "speedscope" "$TMP/out/all.speedscope.json"
  valid_json "trace" "$TMP/out/all.trace.json"
  if command -v xmllint >/dev/null; then
    xmllint --noout "$TMP/out/all.svg" || fail "svg: xmllint rejects it"
  fi
  grep -qF 'toy/b3;layer1;layer1.0;conv2d layer1.0.conv2;conv2d.im2col 21900' "$TMP/out/all.folded" ||
    fail "folded: stack of toy/b3's conv2 missing"
  [ "$(wc -l <"$TMP/out/all.folded")" -eq 14 ] || fail "folded: expected 14 stacks"
  grep -qF '"ph":"X"' "$TMP/out/all.trace.json" || fail "trace: no complete events"
  "$(dirname "$0")/trace_nesting.py" "$TMP/out/all.trace.json" 14 || fail "trace: does not nest"
  grep -qF 'wrote' "$TMP/stdout" || fail "all formats: says nothing about what it wrote"
fi

# The SVG's script runs without errors in a real browser, zooming and searching through the URL.
# Without Chromium this FAILS, as every browser test here (headless_chromium.sh).
. "$(dirname "$0")/headless_chromium.sh"
if [ -s "$TMP/out/all.svg" ]; then
  profile=$(mktemp -d -p "$TMP")
  headless_chromium "$profile" --screenshot="$TMP/all.png" --window-size=1200,300 \
    "file://$TMP/out/all.svg?z=layer1&s=conv" >"$TMP/chromium.log" 2>&1
  [ -s "$TMP/all.png" ] || { fail "chromium: no screenshot"; tail -5 "$TMP/chromium.log"; }
  if grep -F "CONSOLE" "$TMP/chromium.log"; then fail "chromium: console messages from the SVG"; fi
  echo "ok   svg script in chromium"
else
  fail "no all.svg to open in chromium"
fi

# One rung, one format, a full file name.
if run_bench "one rung svg" 0 report flame "$TMP/run.json" --rung b3 --format svg -o "$TMP/b3.svg"; then
  expect_file "one rung svg" "$TMP/b3.svg"
  grep -qF 'data-name="toy/b1"' "$TMP/b3.svg" && fail "one rung svg: toy/b1 drawn"
  grep -qF 'data-name="toy/b3"' "$TMP/b3.svg" || fail "one rung svg: toy/b3 missing"
fi

# Native samples instead of the records.
if run_bench "folded input" 0 report flame "$TMP/run.json" --folded "$TMP/samples.folded" \
  --format speedscope -o "$TMP/samples"; then
  valid_json "folded input" "$TMP/samples.speedscope.json"
  grep -qF '"unit":"none"' "$TMP/samples.speedscope.json" || fail "folded input: unit is not none"
fi

# A run without per-op records that names its samples file (`run --probes samples`), relative
# to the run.json: the graph comes from the samples; no trace.
printf '{"context": {}, "benchmarks": [{"name": "toy/b1_median", "run_name": "toy/b1", "run_type": "aggregate", "aggregate_name": "median", "real_time": 1, "time_unit": "ms", "cuvil": {"samples_file": "samples.folded"}}]}\n' >"$TMP/sampled.json"
if run_bench "samples named by the run" 0 report flame "$TMP/sampled.json" -o "$TMP/sampled"; then
  expect_file "samples named by the run" "$TMP/sampled.svg"
  grep -qF 'main;run;conv 17' "$TMP/sampled.folded" || fail "samples named by the run: stacks differ"
  [ -e "$TMP/sampled.trace.json" ] && fail "samples named by the run: wrote a trace without records"
  expect_err "samples named by the run" "no trace"
fi

# A differential graph: toy/b1's first three ops doubled.
if run_bench "diff" 0 report flame "$TMP/new.json" --diff "$TMP/run.json" --rung b1 --format svg \
  -o "$TMP/diff"; then
  grep -qF 'data-differential="true"' "$TMP/diff.svg" || fail "diff: not differential"
  grep -qF '+100.0%' "$TMP/diff.svg" || fail "diff: no +100% change in a tooltip"
  grep -qF 'fill="rgb(215,215,215)"' "$TMP/diff.svg" || fail "diff: no unchanged frame"
  grep -qF 'fill="rgb(255,60,60)"' "$TMP/diff.svg" || fail "diff: no saturated red frame"
fi

# Bad input: one line naming the file and what is wrong.
run_bench "missing run" 2 report flame "$TMP/none.json" -o "$TMP/x" &&
  expect_one_line_error "missing run" "$TMP/none.json"
run_bench "no per-op records" 2 report flame "$TMP/plain.json" -o "$TMP/x" &&
  { expect_one_line_error "no per-op records" "$TMP/plain.json"; expect_err "no per-op records" "--probes ops"; }
run_bench "unknown rung" 2 report flame "$TMP/run.json" --rung b9 -o "$TMP/x" &&
  { expect_one_line_error "unknown rung" "'b9'"; expect_err "unknown rung" "toy/b3"; }
run_bench "trace without records" 2 report flame "$TMP/plain.json" --folded "$TMP/samples.folded" \
  --format trace -o "$TMP/x" && expect_one_line_error "trace without records" "--probes ops"
run_bench "bad folded" 2 report flame "$TMP/run.json" --folded "$TMP/run.json" -o "$TMP/x" &&
  expect_one_line_error "bad folded" "$TMP/run.json:1"
run_bench "diff of samples against ns" 2 report flame "$TMP/run.json" --diff "$TMP/samples.folded" \
  -o "$TMP/x" && expect_one_line_error "diff of samples against ns" "samples"
run_bench "unknown format" 2 report flame "$TMP/run.json" --format png -o "$TMP/x"
[ -e "$TMP/x.svg" ] && fail "bad input still wrote output"

finish "failure(s)" "all report flame checks passed"
