#!/usr/bin/env bash
# cuvil-bench compare on small hand-written run.json files: verdicts, unmatched benchmarks, the
# --fail-on-regression exit status, warnings, and bad input (one-line error, exit 2). With
# --with-run it also stores two real runs and compares them by id through history.
# Usage: compare_test.sh path/to/cuvil-bench [--with-run]
set -u
BENCH=$1
WITH_RUN=${2:-}
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export XDG_DATA_HOME="$TMP/xdg"  # never touch the user's own results database
expect_one_line_error() {
  local lines
  lines=$(grep -c . "$TMP/stderr")
  [ "$lines" -eq 1 ] || { fail "$1: expected a one-line error, got $lines lines"; cat "$TMP/stderr"; }
  expect_err "$1" "$2"
}

# A benchmark in cuvil's layout: iteration entries plus a median entry with the raw samples.
# entry NAME SAMPLE_MS...
entry() {
  local name=$1
  shift
  local ns="" sep=""
  for ms in "$@"; do
    printf '{"name": "%s", "run_name": "%s", "run_type": "iteration", "real_time": %s, "cpu_time": %s, "time_unit": "ms", "iterations": 1, "threads": 1},\n' \
      "$name" "$name" "$ms" "$ms"
    ns="$ns$sep$(awk "BEGIN { printf \"%.0f\", $ms * 1e6 }")"
    sep=", "
  done
  printf '{"name": "%s_median", "run_name": "%s", "run_type": "aggregate", "aggregate_name": "median", "real_time": %s, "cpu_time": %s, "time_unit": "ms", "iterations": 1, "threads": 1, "cuvil": {"real_ns": [%s]}}' \
    "$name" "$name" "$2" "$2" "$ns"
}
document() {  # document ENTRY...
  printf '{"context": {"date": "2024-05-01T10:00:00+0000", "host_name": "h", "num_cpus": 2},\n "benchmarks": [\n'
  local sep=""
  for e in "$@"; do printf '%s%s' "$sep" "$e"; sep=$',\n'; done
  printf '\n]}\n'
}

document "$(entry toy/r1 10.0 10.1 10.2 10.3 10.4 10.5 10.6)" \
  "$(entry toy/r2 20.0 20.2 20.4 20.6 20.8 21.0 21.2)" \
  "$(entry toy/gone 5 5 5)" >"$TMP/a.json"
document "$(entry toy/r1 12.0 12.1 12.2 12.3 12.4 12.5 12.6)" \
  "$(entry toy/r2 20.1 20.3 20.5 20.7 20.9 21.1 21.3)" \
  "$(entry toy/new 1 1 1)" >"$TMP/b.json"
document "$(entry toy/r1 12.0 12.1)" >"$TMP/few.json"
document "$(entry other/x 1 2 3)" >"$TMP/other.json"
# Twelve samples a side: the old run moved from 10 to 11.5 ms halfway, the new one sits above
# all of it by less than that (pooled: significant; within the old run's own drift: noisy).
document "$(entry toy/r1 10.0 10.1 10.2 10.3 10.4 10.5 11.5 11.6 11.7 11.8 11.9 12.0)" \
  >"$TMP/drifting.json"
document "$(entry toy/r1 12.1 12.1 12.2 12.2 12.3 12.3 12.4 12.4 12.5 12.5 12.6 12.6)" \
  >"$TMP/after.json"
printf '{"benchmarks": [\n  {"name": "x", "real_time": }\n]}\n' >"$TMP/malformed.json"
printf '{"context": {}}\n' >"$TMP/not_a_run.json"

if run_bench "compare a b" 0 compare "$TMP/a.json" "$TMP/b.json"; then
  expect_out "compare a b" "toy/r1"
  grep -E '^toy/r1 .*\+19\.42%.* slower$' "$TMP/stdout" >/dev/null || { fail "r1 verdict"; cat "$TMP/stdout"; }
  grep -E '^toy/r2 .* same$' "$TMP/stdout" >/dev/null || { fail "r2 verdict"; cat "$TMP/stdout"; }
  expect_out "compare a b" "only in old: toy/gone"
  expect_out "compare a b" "only in new: toy/new"
  expect_out "compare a b" "geometric mean of new/old medians"
fi
if run_bench "reverse is faster" 0 compare "$TMP/b.json" "$TMP/a.json" --fail-on-regression 0; then
  grep -E '^toy/r1 .* faster$' "$TMP/stdout" >/dev/null || { fail "reverse verdict"; cat "$TMP/stdout"; }
fi
if run_bench "regression beyond 10% fails the gate" 1 compare "$TMP/a.json" "$TMP/b.json" \
  --fail-on-regression 10; then
  expect_err "gate" "regression: toy/r1"
fi
run_bench "regression within 30% passes the gate" 0 compare "$TMP/a.json" "$TMP/b.json" \
  --fail-on-regression 30
run_bench "a huge min-change makes everything same" 0 compare "$TMP/a.json" "$TMP/b.json" \
  --min-change 50 && expect_out "min-change" "0 faster, 0 slower, 2 same"
if run_bench "few samples warn" 0 compare "$TMP/a.json" "$TMP/few.json" --fail-on-regression 1; then
  expect_err "few samples" "little power"
fi
if run_bench "a change within a run's own drift is noisy and passes the gate" 0 compare \
  "$TMP/drifting.json" "$TMP/after.json" --fail-on-regression 1; then
  grep -E '^toy/r1 .* noisy$' "$TMP/stdout" >/dev/null || { fail "noisy verdict"; cat "$TMP/stdout"; }
  expect_out "noisy count" "0 slower, 0 same, 1 noisy"
  expect_err "noisy warning" "cannot tell"
fi
if run_bench "noisy in --json" 0 compare "$TMP/drifting.json" "$TMP/after.json" --json; then
  expect_out "json verdict" '"verdict": "noisy"'
  expect_out "json blocks" '"blocks_old": 4'
fi

# Bad input: one line on stderr, exit status 2.
run_bench "missing file" 2 compare "$TMP/nope.json" "$TMP/b.json" &&
  expect_one_line_error "missing file" "nope.json"
run_bench "malformed json" 2 compare "$TMP/a.json" "$TMP/malformed.json" &&
  expect_one_line_error "malformed json" "malformed.json: malformed JSON"
run_bench "not a run" 2 compare "$TMP/not_a_run.json" "$TMP/a.json" &&
  expect_one_line_error "not a run" "no \"benchmarks\" array"
run_bench "nothing in common" 2 compare "$TMP/a.json" "$TMP/other.json" &&
  expect_one_line_error "nothing in common" "no benchmark in common"
run_bench "alpha out of range" 2 compare "$TMP/a.json" "$TMP/b.json" --alpha 1.5 &&
  expect_one_line_error "alpha" "--alpha"
run_bench "run id without a database" 2 compare 1 2 &&
  expect_one_line_error "no database" "no results database"
: >"$TMP/empty.db"  # an empty file is an empty SQLite database
run_bench "unknown run id" 2 compare 41 "$TMP/a.json" --db "$TMP/empty.db" &&
  expect_one_line_error "unknown run id" "run 41: no such run"
run_bench "history of an empty database" 0 history --db "$TMP/empty.db" &&
  expect_out "empty history" "no runs stored"

if [ "$WITH_RUN" = "--with-run" ]; then
  # Two short real runs stored in the default database (under XDG_DATA_HOME), then by id. An
  # empty pipeline keeps this independent of the default config's passes.
  printf 'cuvil_pass_version: 1\ntarget: cpu\npasses: []\n' >"$TMP/empty.cuvilpass"
  for i in 1 2; do
    run_bench "run $i stores" 0 run --suite resnet50 --rungs b1 --warmup 0 --warmup-time 0 \
      --min-repetitions 3 --max-repetitions 3 --min-time 0 --config "$TMP/empty.cuvilpass" -q && expect_out "run $i" "stored run $i in $XDG_DATA_HOME/cuvil/results.db"
  done
  run_bench "run --no-db stores nothing" 0 run --suite resnet50 --rungs b1 --warmup 0 \
    --warmup-time 0 --min-repetitions 2 --max-repetitions 2 --min-time 0 --config "$TMP/empty.cuvilpass" -q --no-db
  if run_bench "history" 0 history --suite resnet50; then
    expect_out "history" "resnet50"
    [ "$(grep -c 'resnet50 ' "$TMP/stdout")" -eq 2 ] || { fail "history: expected 2 runs"; cat "$TMP/stdout"; }
  fi
  run_bench "history --limit 1" 0 history --limit 1 &&
    [ "$(grep -c 'resnet50 ' "$TMP/stdout")" -eq 1 ] || fail "history --limit 1"
  run_bench "compare stored runs" 0 compare 1 2 && expect_out "compare ids" "resnet50/b1"
fi

finish "compare case(s) failed" "all compare cases passed"
