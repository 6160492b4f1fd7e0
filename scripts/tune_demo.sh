#!/usr/bin/env bash
# The tuning demonstration of issue 5, end to end on resnet50's smallest rung (b1):
#   1. cuvil-bench tune, TRIALS (60) trials of TPE, from the default pipeline as trial 0, resumed
#      in steps of 20 until 2 complete trials per searched parameter (up to MAX_TRIALS, 400);
#   2. cuvil-tune-gen --confirm: the default, the full best and the pruned best re-measured side
#      by side; writes resnet50.tuned.cuvilpass (and the pruned search space);
#   3. cuvil-bench run of the default and the tuned file, alternating ROUNDS (4) times each so
#      both see the same machine, their raw samples pooled per config;
#   4. cuvil-bench compare default.json tuned.json (Mann-Whitney U on the raw samples), and the
#      ratio of medians printed last.
# Run it on a quiet machine (load < 0.5): the tuner measures for real.
#   scripts/tune_demo.sh [OUT_DIR]   env: CUVIL_BUILD (build), TRIALS, MAX_TRIALS, SAMPLER, SEED, ROUNDS,
#                                    SPACE (a search-space YAML; default configs/search/resnet50.yaml)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${CUVIL_BUILD:-$ROOT/build}
BENCH=$BUILD/bench_suite/cuvil-bench
TUNE_GEN=$BUILD/tuner/cuvil-tune-gen
PY=/usr/bin/python3
TRIALS=${TRIALS:-60}
SAMPLER=${SAMPLER:-tpe}
SEED=${SEED:-0}
ROUNDS=${ROUNDS:-4}
MAX_TRIALS=${MAX_TRIALS:-400}
STEP=20
for count in TRIALS MAX_TRIALS ROUNDS; do
  if [[ ! ${!count} =~ ^[1-9][0-9]*$ ]]; then
    echo "tune_demo.sh: $count must be a positive whole number, got '${!count}'" >&2
    exit 2
  fi
done
SPACE_ARGS=()
[ -n "${SPACE:-}" ] && SPACE_ARGS=(--space "$(realpath "$SPACE")")
OUT=${1:-$ROOT/tune-demo-$(date -u +%Y%m%dT%H%M%SZ)}
for tool in "$BENCH" "$TUNE_GEN"; do
  [ -x "$tool" ] || { echo "missing $tool (build first, or set CUVIL_BUILD)" >&2; exit 2; }
done
mkdir -p "$OUT"
cd "$OUT"
echo "tune demo in $OUT; $(uptime)"
[ -e study.db ] && echo "study.db exists: the study resumes up to $TRIALS trials"

tune() {
  "$BENCH" tune --suite resnet50 --rungs b1 --trials "$TRIALS" --study study.db --sampler "$SAMPLER" \
    --seed "$SEED" "${SPACE_ARGS[@]}" | tee -a tune.txt
}
tune
# cuvil-tune-gen ranks the parameters only from 2 complete trials per searched one (20 at least)
# and refuses to prune the space on fewer; pruned trials do not count. Resume the study until it
# has them (or MAX_TRIALS).
dims=$(sed -n 's/.*; \([0-9]*\) searched dimension(s).*/\1/p' tune.txt | tail -1)
complete() { grep -c '"state":"complete"' study.db.trials.jsonl || true; }
need=$(( 2 * ${dims:-0} > 20 ? 2 * ${dims:-0} : 20 ))
while [ "$(complete)" -lt "$need" ] && [ "$TRIALS" -lt "$MAX_TRIALS" ]; do
  echo "tune demo: $(complete) complete trial(s) of the $need that ranking ${dims:-?} parameters needs; $STEP more"
  TRIALS=$((TRIALS + STEP))
  tune
done
"$TUNE_GEN" --study study.db --suite resnet50 --importance-threshold 0.05 --confirm "${SPACE_ARGS[@]}" \
  -o resnet50.tuned.cuvilpass --write-space resnet50.pruned.yaml --json tune-gen.json | tee tune-gen.txt

# The default pipeline and the tuned one, alternating, pooled.
DEFAULT=$ROOT/configs/resnet50.cpu.cuvilpass
for round in $(seq 1 "$ROUNDS"); do
  for which in default tuned; do
    config=$DEFAULT
    [ "$which" = tuned ] && config=resnet50.tuned.cuvilpass
    "$BENCH" run --suite resnet50 --rungs b1 --config "$config" --no-db -q --min-time 1 \
      --out "$which.$round.json" > "$which.$round.txt"
  done
done
"$PY" - "$ROUNDS" <<'PY'
import json, sys
rounds = int(sys.argv[1])
for which in ("default", "tuned"):
    doc = json.load(open("%s.1.json" % which))
    medians = {e["name"]: e for e in doc["benchmarks"] if e.get("aggregate_name") == "median"}
    for r in range(2, rounds + 1):
        other = json.load(open("%s.%d.json" % (which, r)))
        for e in other["benchmarks"]:
            if e.get("aggregate_name") != "median" or e["name"] not in medians:
                continue
            mine = medians[e["name"]]["cuvil"]
            for key in ("real_ns", "cpu_ns"):
                if key in mine and key in e.get("cuvil", {}):
                    mine[key] += e["cuvil"][key]
    json.dump(doc, open("%s.json" % which, "w"), indent=1)
PY
set +e
"$BENCH" compare default.json tuned.json | tee compare.txt
set -e
"$PY" - <<'PY'
import json, statistics
def median(which):
    doc = json.load(open(which + ".json"))
    e = [e for e in doc["benchmarks"] if e.get("aggregate_name") == "median"][0]
    return statistics.median(e["cuvil"]["real_ns"]) / 1e6, len(e["cuvil"]["real_ns"])
(d, nd), (t, nt) = median("default"), median("tuned")
print("resnet50/b1: default %.2f ms (%d samples), tuned %.2f ms (%d samples): tuned is %.3fx "
      "faster" % (d, nd, t, nt, d / t))
PY
grep -A12 "^passes:" resnet50.tuned.cuvilpass | head -14
uptime
