#!/usr/bin/env bash
# Pruning within a rung: with one tuned rung, a clearly slow trial (TEST-ONLY fault "slow": 1 s
# added to every run) is pruned at the rung's first checkpoint (3 samples) instead of sampling to
# the stopping rule; the others report their checkpoints and the rung's end at the documented
# steps (tuner/trial.h: 8 per rung) and complete with all their samples.
set -euo pipefail
BENCH=$(realpath "$1")
PY=/usr/bin/python3
if ! "$PY" -c "import optuna" 2>/dev/null; then echo "python3-optuna is not installed"; exit 77; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"

# 12 samples per rung whatever the noise (--max-noise 0.001 never converges): checkpoints at 3 and 6.
CUVIL_TEST_TRIAL_FAULT="slow@4" "$BENCH" tune --suite resnet50 --rungs b1 --study "$TMP/study.db" \
  --sampler random --seed 7 --pruner median --trials 5 --warmup 0 --warmup-time 0 \
  --min-samples 12 --max-samples 12 --min-time 0 --max-noise 0.001 --trial-memory-mb 4096 | tee tune.txt
grep -q "pruned at 3 samples of rung b1" tune.txt

"$PY" - study.db.trials.jsonl "$TMP/study.db" <<'PY'
import json, sys
import optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
recs = {r["number"]: r for r in map(json.loads, open(sys.argv[1]))}
slow = recs[4]
assert slow["state"] == "pruned", slow
assert slow["reason"] == "pruned at 3 samples of rung b1", slow["reason"]
assert len(slow["rungs"]) == 1 and len(slow["rungs"][0]["samples_ns"]) == 3, slow["rungs"]
assert slow["value"] > 1000, slow["value"]  # ms: it carries its 1 s per run
for n in (0, 1, 2):  # the pruner's startup trials always run to the end
    r = recs[n]
    assert r["state"] == "complete", r
    assert len(r["rungs"][0]["samples_ns"]) == 12, r["rungs"]
study = optuna.load_study(study_name="cuvil-resnet50", storage="sqlite:///" + sys.argv[2])
by = {t.number: t for t in study.trials}
assert sorted(by[0].intermediate_values) == [0, 1, 7], by[0].intermediate_values
assert sorted(by[4].intermediate_values) == [0], by[4].intermediate_values
assert by[4].state == optuna.trial.TrialState.PRUNED, by[4].state
print("pruning within a rung ok")
PY
echo "tune prune test ok"
