#!/usr/bin/env bash
# Benchmark (not a test) of the search strategies of issue 5 on the real suite: random search,
# TPE, and the two-stage flow (TPE on half the budget, cuvil-tune-gen --write-space, TPE on the
# pruned space for the other half), each with the same trial budget, for several seeds. Reports,
# per run, the trials needed to come within 5% of the best configuration found by any run
# (failed and pruned trials count: they cost a trial too), and the best objective each reached.
#   scripts/tuner_benchmark.sh [OUT_DIR]   env: CUVIL_BUILD (build), SUITE (resnet50), RUNGS (b1),
#                                          BUDGET (20 trials), SEEDS ("1 2"), WITHIN (0.05)
# Objectives come from the trials themselves (measured minutes apart): run it on a quiet machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${CUVIL_BUILD:-$ROOT/build}
BENCH=$BUILD/bench_suite/cuvil-bench
TUNE_GEN=$BUILD/tuner/cuvil-tune-gen
PY=/usr/bin/python3
SUITE=${SUITE:-resnet50}
RUNGS=${RUNGS:-b1}
BUDGET=${BUDGET:-20}
SEEDS=${SEEDS:-1 2}
WITHIN=${WITHIN:-0.05}
OUT=${1:-$ROOT/tuner-benchmark-$(date -u +%Y%m%dT%H%M%SZ)}
for tool in "$BENCH" "$TUNE_GEN"; do
  [ -x "$tool" ] || { echo "missing $tool (build first, or set CUVIL_BUILD)" >&2; exit 2; }
done
mkdir -p "$OUT"
cd "$OUT"
echo "tuner benchmark: $SUITE/$RUNGS, budget $BUDGET trials, seeds $SEEDS; $(uptime)" | tee header.txt
STAGE1=$((BUDGET / 2))
TUNE=(--suite "$SUITE" --rungs "$RUNGS" -q)
SECONDS=0
for seed in $SEEDS; do
  for sampler in random tpe; do
    "$BENCH" tune "${TUNE[@]}" --sampler "$sampler" --seed "$seed" --trials "$BUDGET" \
      --study "$sampler-$seed.db" > "$sampler-$seed.txt"
  done
  # Two-stage: the second study searches only what the first found important.
  "$BENCH" tune "${TUNE[@]}" --sampler tpe --seed "$seed" --trials "$STAGE1" \
    --study "two-stage-$seed.stage1.db" > "two-stage-$seed.stage1.txt"
  "$TUNE_GEN" --study "two-stage-$seed.stage1.db" --suite "$SUITE" --importance-threshold 0.05 \
    --refits 5 --no-fanova --no-verify -o "two-stage-$seed.stage1.cuvilpass" \
    --write-space "two-stage-$seed.pruned.yaml" > "two-stage-$seed.gen.txt"
  "$BENCH" tune "${TUNE[@]}" --sampler tpe --seed "$seed" --trials $((BUDGET - STAGE1)) \
    --space "two-stage-$seed.pruned.yaml" --study "two-stage-$seed.stage2.db" \
    > "two-stage-$seed.stage2.txt"
done
echo "wall time: ${SECONDS} s; $(uptime)" | tee -a header.txt

"$PY" - "$WITHIN" $SEEDS <<'PY' | tee results.md
import json, sys
within = float(sys.argv[1])
seeds = sys.argv[2:]

def trials(path):
    recs = [json.loads(l) for l in open(path)]
    # Interrupted trials are retried under a new number: count each attempt once, in order.
    return sorted(recs, key=lambda r: r["number"])

runs = {}
for seed in seeds:
    runs[("random", seed)] = trials("random-%s.db.trials.jsonl" % seed)
    runs[("tpe", seed)] = trials("tpe-%s.db.trials.jsonl" % seed)
    runs[("two-stage", seed)] = (trials("two-stage-%s.stage1.db.trials.jsonl" % seed) +
                                 trials("two-stage-%s.stage2.db.trials.jsonl" % seed))
best = min(r["value"] for rs in runs.values() for r in rs if r["state"] == "complete")
target = best * (1 + within)
print("best objective over every run: %.3f ms; target (within %.0f%%): %.3f ms\n"
      % (best, within * 100, target))
print("| method | seed | trials | trials to within %.0f%% | best (ms) | failed | pruned |"
      % (within * 100))
print("|---|---|---|---|---|---|---|")
summary = {}
for (method, seed), rs in runs.items():
    hit = None
    for i, r in enumerate(rs, 1):
        if r["state"] == "complete" and r["value"] <= target:
            hit = i
            break
    done = [r["value"] for r in rs if r["state"] == "complete"]
    fails = sum(r["state"] == "fail" for r in rs)
    pruned = sum(r["state"] == "pruned" for r in rs)
    summary.setdefault(method, []).append(hit)
    print("| %s | %s | %d | %s | %.3f | %d | %d |" % (method, seed, len(rs),
          hit if hit else "not reached", min(done) if done else float("nan"), fails, pruned))
print()
for method, hits in summary.items():
    reached = [h for h in hits if h]
    print("%s: reached in %d of %d runs%s" % (method, len(reached), len(hits),
          "" if not reached else ", trials needed %s" % sorted(reached)))
PY
