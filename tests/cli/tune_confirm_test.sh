#!/usr/bin/env bash
# cuvil-tune-gen's measuring modes end to end on a small resnet50 b1 study over a narrow space:
# --confirm re-measures default, full best and pruned best side by side and records the decision
# and the speedup with its interval; --sensitivity measures each one-step neighbour; --json
# carries both; --write-space writes a pruned space that `tune --space` accepts for a second
# study. Bad options are refused (exit 2) before anything is measured or written.
set -euo pipefail
BENCH=$(realpath "$1")
TUNE_GEN=$(realpath "$2")
PY=/usr/bin/python3
CHECK_PICTURE=$(cd "$(dirname "$0")" && pwd)/picture_browser_check.sh
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"

# Three searched parameters: few neighbours, so the sweep stays short.
cat > space.yaml <<'YAML'
suite: resnet50
passes:
  fold-batchnorm: { enabled: true }
  layout: { enabled: true }
  fuse-elementwise: { enabled: true, params: { fuse_binary: { fixed: true } } }
  select-lowering: { freeze: true }
  reduced-precision: { freeze: true }
  attention-tiling: { freeze: true }
  gemm-tiling: { freeze: true }
  conv-tiling: { freeze: true }
  threading: { freeze: true }
  memory-plan: { enabled: true, params: { alignment: { fixed: 64 } } }
YAML
FAST=(--warmup 0 --warmup-time 0 --min-samples 2 --max-samples 3 --min-time 0 --trial-memory-mb 4096)
"$BENCH" tune --suite resnet50 --rungs b1 --study "$TMP/s1.db" --space space.yaml --sampler random \
  --seed 5 --trials 8 -q "${FAST[@]}"

GEN=(--study "$TMP/s1.db" --suite resnet50 --space space.yaml --refits 3 --no-fanova
     --importance-threshold 0.3 --confirm-rounds 3)
expect_fail() {  # expect_fail FRAGMENT ARGS...: exit 2, FRAGMENT on stderr, nothing written
  local fragment=$1; shift
  set +e
  "$TUNE_GEN" "$@" >out.txt 2>err.txt
  local status=$?
  set -e
  if [ "$status" -ne 2 ] || ! grep -qF -- "$fragment" err.txt; then
    echo "expected exit 2 with '$fragment' from: $*"; echo "status $status"; cat out.txt err.txt; exit 1
  fi
  test ! -e bad.cuvilpass
}
expect_fail "--confirm-tolerance" "${GEN[@]}" --confirm --confirm-tolerance -0.5 -o bad.cuvilpass
expect_fail "--confirm-rounds" "${GEN[@]}" --confirm --confirm-rounds 0 -o bad.cuvilpass
expect_fail "/nonexistent-dir/pruned.yaml" "${GEN[@]}" --write-space /nonexistent-dir/pruned.yaml -o bad.cuvilpass
printf 'passes:\n  no-such-pass: { enabled: true }\n' > badspace.yaml
expect_fail "badspace.yaml:2: passes.no-such-pass" --study "$TMP/s1.db" --suite resnet50 --space badspace.yaml -o bad.cuvilpass

# Eight trials are too few to rank: a pruned space would freeze parameters on noise.
expect_fail "too few to rank them" "${GEN[@]}" --write-space pruned.yaml -o bad.cuvilpass
test ! -e pruned.yaml
"$TUNE_GEN" "${GEN[@]}" --confirm --confirm-tolerance 0.02 --sensitivity --sensitivity-rounds 1 \
  --samples-per-round 1 --write-space pruned.yaml --force --json gen.json -o tuned.cuvilpass \
  2> gen.err | tee gen.txt
grep -q "WARNING.*too few to rank them" gen.err
grep -q "^confirm: .* is written" gen.txt
grep -q "written configuration vs default" gen.txt

"$PY" - tuned.cuvilpass gen.json <<'PY'
import json, sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
prov = doc["provenance"]
c = prov["confirm"]
assert c["written"] in ("pruned", "full"), c
assert c["tolerance"] == 0.02, c
w = c["written_over_default"]
assert w["speedup"] > 0 and w["ci95"][0] <= w["speedup"] <= w["ci95"][1], w
assert "default" in c["median_ms"] and "full" in c["median_ms"], c
assert prov["objective"]["speedup_side_by_side"] > 0, prov["objective"]
assert prov["reset_to_default"]["written"] in ("pruned", "full best"), prov["reset_to_default"]
rows = prov["sensitivity"]["rows"]
params = {r["param"] for r in rows}
# Only what the space searches moves (layout, fusion depth, memory plan).
assert all(p.split(".")[0] in ("layout", "fuse-elementwise", "memory-plan") for p in params), params
assert "memory-plan.strategy" in params and "layout.memory_layout" in params, params
for r in rows:
    assert "failure" in r or (r["time_ratio"] > 0 and r["verdict"] in ("faster", "slower", "same")), r
j = json.load(open(sys.argv[2]))
assert j["confirm"]["written"] == c["written"], j["confirm"]
assert len(j["sensitivity"]) == len(rows), j["sensitivity"]
assert j["importance"]["ranking"], j["importance"]
print("confirm and sensitivity ok:", c["decision"])
PY

# The pictures beside the .cuvilpass, and the study report that links them, in a real browser.
for f in tuned.importance.svg tuned.history.svg tuned.sensitivity.svg tuned.report.html; do
  grep -q "^wrote $f" gen.txt || { echo "tune-gen does not say it wrote $f"; exit 1; }
done
"$CHECK_PICTURE" tuned.importance.svg 2 "share of importance (%)" "parameter" "mean |SHAP| share"
"$CHECK_PICTURE" tuned.history.svg 8 "trial number" "objective (ms)" 'class="best-so-far"'
"$CHECK_PICTURE" tuned.sensitivity.svg 1 \
  "time of the neighbour / time of the written configuration (ratio)" \
  "parameter: best → neighbour" "memory-plan.strategy"
"$CHECK_PICTURE" tuned.report.html 10 "trial number" "objective (ms)" \
  'href="tuned.importance.svg"' 'href="tuned.history.svg"' 'href="tuned.sensitivity.svg"'

# The pruned space drives a second, cheaper study.
grep -q "suite: resnet50" pruned.yaml
"$BENCH" tune --suite resnet50 --rungs b1 --study "$TMP/s2.db" --space pruned.yaml --sampler random \
  --seed 6 --trials 2 -q "${FAST[@]}" | tee stage2.txt
grep -q "best: trial" stage2.txt
"$BENCH" verify --suite resnet50 --rungs b1 --config tuned.cuvilpass
echo "tune confirm test ok"
