#!/usr/bin/env bash
# Benchmark (not a test) of pruning within a rung (issue 16): the same study, same sampler and
# seed, once with `--pruner none` and once with `--pruner median`. The random sampler draws the
# same configurations in the same order either way, so the two differ only in what pruning
# stopped early. Reports per study its wall time, the trials pruned, the best objective, and the
# wall time and trials until the best so far came within WITHIN of the best either study found.
#   scripts/pruning_benchmark.sh [OUT_DIR]   env: CUVIL_BUILD (build), SUITE (resnet50), RUNGS (b1),
#                                            TRIALS (60), SEEDS ("1"), SAMPLER (random),
#                                            WITHIN (0.05)
# Objectives come from the trials themselves (measured minutes apart): run it on a quiet machine.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${CUVIL_BUILD:-$ROOT/build}
BENCH=$BUILD/bench_suite/cuvil-bench
PY=/usr/bin/python3
SUITE=${SUITE:-resnet50}
RUNGS=${RUNGS:-b1}
TRIALS=${TRIALS:-60}
SEEDS=${SEEDS:-1}
SAMPLER=${SAMPLER:-random}
WITHIN=${WITHIN:-0.05}
OUT=${1:-$ROOT/pruning-benchmark-$(date -u +%Y%m%dT%H%M%SZ)}
[ -x "$BENCH" ] || { echo "missing $BENCH (build first, or set CUVIL_BUILD)" >&2; exit 2; }
mkdir -p "$OUT"
cd "$OUT"
echo "pruning benchmark: $SUITE/$RUNGS, $TRIALS trials, $SAMPLER sampler, seeds $SEEDS;" \
  "cpu: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs;" \
  "commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown); $(uptime)" |
  tee header.txt
for seed in $SEEDS; do
  for pruner in none median; do
    start=$SECONDS
    "$BENCH" tune --suite "$SUITE" --rungs "$RUNGS" -q --sampler "$SAMPLER" --seed "$seed" \
      --pruner "$pruner" --trials "$TRIALS" --study "$pruner-$seed.db" >"$pruner-$seed.txt" 2>&1
    echo "$pruner $seed $((SECONDS - start))" >>wall.txt
  done
done

"$PY" - "$WITHIN" $SEEDS <<'PY' | tee results.md
import datetime, json, sys
within = float(sys.argv[1])
seeds = sys.argv[2:]

def when(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()

wall = {(p, s): int(t) for p, s, t in (l.split() for l in open("wall.txt"))}
runs = {}
for seed in seeds:
    for pruner in ("none", "median"):
        recs = [json.loads(l) for l in open("%s-%s.db.trials.jsonl" % (pruner, seed))]
        runs[(pruner, seed)] = sorted(recs, key=lambda r: r["number"])
print("| seed | pruner | wall (s) | complete | pruned | failed | best (ms) | trials to within "
      "%.0f%% | wall to within %.0f%% (s) |" % (within * 100, within * 100))
print("|---|---|---|---|---|---|---|---|---|")
for seed in seeds:
    done = [r["value"] for p in ("none", "median") for r in runs[(p, seed)]
            if r["state"] == "complete"]
    target = min(done) * (1 + within)
    for pruner in ("none", "median"):
        rs = runs[(pruner, seed)]
        t0 = min(when(r["started"]) for r in rs)
        hit = next(((i, when(r["finished"]) - t0) for i, r in enumerate(rs, 1)
                    if r["state"] == "complete" and r["value"] <= target), None)
        count = lambda s: sum(r["state"] == s for r in rs)
        best = min(r["value"] for r in rs if r["state"] == "complete")
        print("| %s | %s | %d | %d | %d | %d | %.2f | %s | %s |" % (
            seed, pruner, wall[(pruner, seed)], count("complete"), count("pruned"),
            count("fail"), best, hit[0] if hit else "not reached",
            "%.0f" % hit[1] if hit else "-"))
PY
