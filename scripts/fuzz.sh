#!/usr/bin/env bash
# Coverage-guided fuzzing of cuvil's input readers (tests/fuzz/README.md): configures a clang
# build in build-fuzz/ (once; CPU-only), builds the libFuzzer targets, and runs each for RUNS
# executions (default 20000) on a copy of its seed corpus tests/fuzz/corpus/NAME/ (the copy grows;
# the repository's corpus stays as committed). Prints per target the executions run and the
# crashes found, keeps each crashing input in build-fuzz/findings/NAME/, and exits 1 when any
# target crashed: a sanitizer report, a leak, a CUVIL_CHECK, a hang, or an exception other than
# cuvil::UserError.
#
#   scripts/fuzz.sh [RUNS]
#   CUVIL_FUZZ_TARGETS="cuvilpass onnx" scripts/fuzz.sh 100000   # some targets only
#   CUVIL_FUZZ_IF_BUILT=1 scripts/fuzz.sh 500   # exit 77 (skipped) when build-fuzz/ is absent
#   CUVIL_FUZZ_SEED=1 scripts/fuzz.sh   # the same mutations every time (CTest's fuzz.libfuzzer)
#   CUVIL_FUZZ_BUILD_DIR=DIR            # build somewhere else than build-fuzz/
#   CUVIL_FUZZ_TIMEOUT=30               # seconds one input may take before it counts as a hang
#                                       # (default 10; CTest's, beside other tests, 60)
#   CUVIL_FUZZ_QUIET_BUILD=1            # the build's output to BUILD_DIR/build.log (shown on failure)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-20000}
BUILD_DIR=${CUVIL_FUZZ_BUILD_DIR:-build-fuzz}
read -r -a TARGETS <<<"${CUVIL_FUZZ_TARGETS:-cuvilpass search_space run_json folded onnx}"

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  if [ -n "${CUVIL_FUZZ_IF_BUILT:-}" ]; then
    echo "fuzz: no $BUILD_DIR/ (scripts/fuzz.sh makes it): skipped"
    exit 77
  fi
  command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/setup.sh installs it)"; exit 2; }
  # -O1 with line tables: fast enough to fuzz, and sanitizer reports name file:line.
  CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja -DCUVIL_FUZZ=ON -DBUILD_TESTING=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null
fi
if [ -n "${CUVIL_FUZZ_QUIET_BUILD:-}" ]; then
  cmake --build "$BUILD_DIR" --target cuvil_fuzz -j "$(nproc)" >"$BUILD_DIR/build.log" 2>&1 ||
    { tail -40 "$BUILD_DIR/build.log"; echo "fuzz: the build failed ($BUILD_DIR/build.log)"; exit 2; }
else
  cmake --build "$BUILD_DIR" --target cuvil_fuzz -j "$(nproc)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
failed=0
for name in "${TARGETS[@]}"; do
  exe="$BUILD_DIR/tests/fuzz/fuzz_$name"
  corpus="tests/fuzz/corpus/$name"
  [ -x "$exe" ] || { echo "fuzz: no target fuzz_$name"; exit 2; }
  [ -d "$corpus" ] || { echo "fuzz: no seed corpus $corpus"; exit 2; }
  findings="$BUILD_DIR/findings/$name"
  mkdir -p "$work/$name" "$findings"
  cp "$corpus"/* "$work/$name/"
  seeds=$(find "$work/$name" -type f | wc -l)
  dict=()
  [ -f "tests/fuzz/$name.dict" ] && dict=(-dict="tests/fuzz/$name.dict")
  log="$BUILD_DIR/findings/$name.log"
  before=$(find "$findings" -type f | wc -l)
  set +e
  seed=()
  [ -n "${CUVIL_FUZZ_SEED:-}" ] && seed=(-seed="$CUVIL_FUZZ_SEED")
  "$exe" -runs="$RUNS" -timeout="${CUVIL_FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -print_final_stats=1 "${seed[@]}" \
    -artifact_prefix="$findings/" "${dict[@]}" "$work/$name" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  crashes=$(($(find "$findings" -type f | wc -l) - before))
  [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ] && crashes=1  # died without writing its input
  grown=$(find "$work/$name" -type f | wc -l)
  echo "fuzz_$name: ${execs:-?} executions, $crashes crashes (corpus $seeds -> $grown inputs)"
  if [ "$rc" -ne 0 ]; then
    failed=1
    grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|internal error|terminate called|broken property' "$log" | sed 's/^/  /' || true
    # The report itself, so that a CI log that keeps only this output still says what failed.
    echo "  --- the last 40 lines of $log:"
    tail -40 "$log" | sed 's/^/  | /'
    for input in $(find "$findings" -type f -newer "$work" | head -3); do
      echo "  input $input ($(stat -c %s "$input") bytes), base64: $(head -c 600 "$input" | base64 -w0)"
    done
    echo "  log: $log; inputs: $findings/"
  fi
done
exit "$failed"
