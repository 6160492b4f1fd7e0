#!/usr/bin/env bash
# cuvil-bench on bad input: a one-line error naming file, line and field, exit status 2, and
# nothing written. Usage: bad_input_test.sh path/to/cuvil-bench
set -u
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0

# expect_error NAME EXPECTED_SUBSTRING -- ARGS...
expect_error() {
  local name=$1 want=$2
  shift 3
  local out="$TMP/out.json"
  rm -f "$out"
  "$BENCH" "$@" --out "$out" >"$TMP/stdout" 2>"$TMP/stderr"
  local status=$?
  local lines
  lines=$(grep -c . "$TMP/stderr")
  if [ "$status" -ne 2 ]; then
    echo "FAIL $name: exit status $status, expected 2"; failures=$((failures + 1))
  elif ! grep -qF -- "$want" "$TMP/stderr"; then
    echo "FAIL $name: stderr lacks '$want':"; cat "$TMP/stderr"; failures=$((failures + 1))
  elif [ "$lines" -ne 1 ]; then
    echo "FAIL $name: expected a one-line error, got $lines lines:"; cat "$TMP/stderr"; failures=$((failures + 1))
  elif [ -e "$out" ]; then
    echo "FAIL $name: wrote $out"; failures=$((failures + 1))
  else
    echo "ok   $name: $(cat "$TMP/stderr")"
  fi
}

cat >"$TMP/malformed.cuvilpass" <<'YAML'
cuvil_pass_version: 1
target: cpu
passes:
  - name: fuse-elementwise
    params: { max_fusion_depth: 3
YAML
cat >"$TMP/unknown_pass.cuvilpass" <<'YAML'
cuvil_pass_version: 1
target: cpu
passes:
  - name: fold-batchnorm
  - name: fuse-elementwize
YAML
cat >"$TMP/out_of_range.cuvilpass" <<'YAML'
cuvil_pass_version: 1
target: cpu
passes:
  - name: fuse-elementwise
    params:
      max_fusion_depth: 99
YAML
cat >"$TMP/wrong_type.cuvilpass" <<'YAML'
cuvil_pass_version: 1
target: cpu
passes:
  - name: layout
    params:
      memory_layout: 3
YAML
cat >"$TMP/unknown_param.cuvilpass" <<'YAML'
cuvil_pass_version: 1
target: cpu
passes:
  - name: memory-plan
    params:
      strategy: greedy-by-size
      alignmnet: 64
YAML

expect_error "unknown suite" "unknown suite 'resnet51'" -- run --suite resnet51
expect_error "unknown rung" "unknown rung 'b3'" -- run --suite resnet50 --rungs b3
expect_error "unknown target" "--target: tpu not in {cpu,cuda}" -- run --suite resnet50 --target tpu
expect_error "missing config" "$TMP/nope.cuvilpass" -- run --suite resnet50 --config "$TMP/nope.cuvilpass"
expect_error "malformed yaml" "malformed.cuvilpass:" -- run --suite resnet50 --config "$TMP/malformed.cuvilpass"
expect_error "unknown pass" "unknown_pass.cuvilpass:5:" -- run --suite resnet50 --config "$TMP/unknown_pass.cuvilpass"
expect_error "out of range" "out_of_range.cuvilpass:6:" -- run --suite resnet50 --config "$TMP/out_of_range.cuvilpass"
expect_error "wrong type" "wrong_type.cuvilpass:6:" -- run --suite resnet50 --config "$TMP/wrong_type.cuvilpass"
expect_error "unknown parameter" "unknown_param.cuvilpass:7:" -- run --suite resnet50 --config "$TMP/unknown_param.cuvilpass"
expect_error "cuda target" "--target cuda" -- run --suite resnet50 --target cuda
# Silently accepted before (issue 17): a config written for another suite, an empty rung list,
# a second YAML document, a directory given as the config.
expect_error "config of another suite" "written for 'sdxl', this is 'resnet50' (--force" -- run --suite resnet50 --config "$(dirname "$0")/../../configs/sdxl.cpu.cuvilpass"
expect_error "empty --rungs" "--rungs: ',' names no rung" -- run --suite resnet50 --rungs ,
printf 'cuvil_pass_version: 1\ntarget: cpu\npasses: []\n---\npasses:\n  - name: bogus\n' >"$TMP/two_docs.cuvilpass"
expect_error "second YAML document" "two_docs.cuvilpass:4: yaml: a second YAML document" -- run --suite resnet50 --config "$TMP/two_docs.cuvilpass"
expect_error "directory as config" "is a directory" -- run --suite resnet50 --config "$TMP"

# Outputs that cannot be written are refused before measuring (exit 2 within seconds, no
# run lost at its end): a --out in a missing directory or naming a directory, a database or
# probe directory under a plain file.
expect_output_error() {
  local name=$1 want=$2
  shift 3
  timeout 60 "$BENCH" "$@" >"$TMP/stdout" 2>"$TMP/stderr"
  local status=$?
  if [ "$status" -ne 2 ] || ! grep -qF -- "$want" "$TMP/stderr" || grep -q "^ *[0-9]" "$TMP/stdout"; then
    echo "FAIL $name: exit $status"; cat "$TMP/stderr"; failures=$((failures + 1))
  else
    echo "ok   $name: $(cat "$TMP/stderr")"
  fi
}
touch "$TMP/plain_file"
expect_output_error "--out in a missing directory" "the directory $TMP/missing does not exist" -- run --suite resnet50 --rungs b1 --no-db --out "$TMP/missing/run.json"
expect_output_error "--out naming a directory" "is a directory; name the file" -- run --suite resnet50 --rungs b1 --no-db --out "$TMP"
expect_output_error "--db under a plain file" "checked before measuring" -- run --suite resnet50 --rungs b1 --db "$TMP/plain_file/results.db"
expect_output_error "--probe-dir under a plain file" "--probe-dir $TMP/plain_file/p: cannot make" -- run --suite resnet50 --rungs b1 --no-db --probe-dir "$TMP/plain_file/p"

# confirm: a run file that is missing, an empty name in the list, and a NaN effect.
expect_output_error "confirm: missing run file" "$TMP/nope.json: cannot read file" -- confirm --old "$TMP/nope.json" --new "$TMP/nope.json"
expect_output_error "confirm: empty file name" "--old: an empty file name" -- confirm --old "a.json,,b.json" --new b.json
expect_output_error "confirm: NaN minimum effect" "--min-effect" -- confirm --old a.json --new b.json --min-effect nan

# verify writes no file: check its bad input without --out.
"$BENCH" verify --suite resnet50 --random-configs 1 --random-exclude int9 >"$TMP/stdout" 2>"$TMP/stderr"
status=$?
if [ "$status" -ne 2 ] || ! grep -qF "'int9' is not a choice" "$TMP/stderr"; then
  echo "FAIL verify --random-exclude int9: exit $status"; cat "$TMP/stderr"; failures=$((failures + 1))
else
  echo "ok   unknown --random-exclude value: $(cat "$TMP/stderr")"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures bad-input case(s) failed"
  exit 1
fi
