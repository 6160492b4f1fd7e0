#!/usr/bin/env bash
# The tuner's record under SIGKILL: `cuvil-bench tune` killed at each dangerous point loses no
# COMPLETE trial. Killed during trial 0 (the baseline), after a trial is told before it is
# logged, after its record is stored before it is told, after it is measured before it is told;
# each time the study is resumed. Then Optuna itself (optuna.load_study) is the judge: every trial
# the study calls COMPLETE is in cuvil-tune-gen's reading, the retried baseline is the baseline,
# tune-gen's best is the study's best, numbering went on. cuvil-tune-gen's bad studies: a missing
# one (never created), a text file, a log that disagrees with the study, non-positive times.
# CUVIL_TEST_KILL_AT is a TEST-ONLY hook (tuner/trial.h).
set -euo pipefail
BENCH=$(realpath "$1")
TUNE_GEN=$(realpath "$2")
PY=/usr/bin/python3
if ! "$PY" -c "import optuna" 2>/dev/null; then echo "python3-optuna is not installed"; exit 77; fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
FAST=(--suite resnet50 --rungs b1 --study "$TMP/study.db" --sampler random --seed 5 --pruner none
      --warmup 0 --warmup-time 0 --min-samples 1 --max-samples 2 --min-time 0 --trial-memory-mb 4096
      --quiet)

killed_at() {  # killed_at POINT: a tune run that must die by SIGKILL at POINT
  set +e
  CUVIL_TEST_KILL_AT=$1 "$BENCH" tune "${FAST[@]}" --trials 4 > "run_$1.txt" 2>&1
  local status=$?
  set -e
  cat "run_$1.txt"
  if [ "$status" -ne 137 ] || ! grep -q "TEST: killed at ${1%@*} of trial ${1#*@}" "run_$1.txt"; then
    echo "expected a SIGKILL at $1, got status $status"; exit 1
  fi
}

killed_at trial@0     # the baseline, mid-measurement
killed_at told@1      # the baseline's retry: COMPLETE in the study, not in the log
killed_at recorded@2  # record stored in the study, state not yet told
killed_at measured@3  # measured, neither told nor recorded
"$BENCH" tune "${FAST[@]}" --trials 4 | tee resume.txt
grep -q "trial 2 was measured by a killed process: recorded as" "run_measured@3.txt"
grep -q "trial 3 was left running by a killed process" resume.txt

"$TUNE_GEN" --study "$TMP/study.db" --suite resnet50 -o tuned.cuvilpass --refits 2 --no-fanova \
  --no-verify --json gen.json | tee gen.txt
grep -qF "reconciled with the study: 1 COMPLETE trial recovered from it (trial 1), 0 log entries without a study trial" gen.txt

"$PY" - "$TMP/study.db" gen.json study.db.trials.jsonl <<'PY'
import json, sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
study = optuna.load_study(study_name="cuvil-resnet50", storage="sqlite:///" + sys.argv[1])
gen = json.load(open(sys.argv[2]))
trials = study.get_trials(deepcopy=False)
S = optuna.trial.TrialState
numbers = [t.number for t in trials]
assert numbers == list(range(len(trials))), numbers  # the resumed runs continued the numbering
by = {t.number: t for t in trials}
assert by[0].state == S.FAIL and by[0].user_attrs["fail_reason"].startswith("interrupted"), by[0]
assert by[1].state == S.COMPLETE and by[1].user_attrs.get("baseline") and \
    by[1].user_attrs.get("retry_of") == 0, by[1].user_attrs.keys()
# Recorded but not told: finished as its record says, not failed as interrupted and retried.
assert by[2].state != S.RUNNING and by[2].user_attrs["cuvil_record"]["state"] == \
    by[2].state.name.lower() and not by[2].user_attrs.get("retry_of"), by[2]
assert by[3].state == S.FAIL and by[3].user_attrs["fail_reason"].startswith("interrupted"), by[3]
assert by[4].user_attrs.get("retry_of") == 3, by[4].user_attrs
assert not any(t.state == S.RUNNING for t in trials), trials
complete = sorted(t.number for t in trials if t.state == S.COMPLETE)
read = sorted(t["number"] for t in gen["trials_read"] if t["state"] == "complete")
assert complete == read, (complete, read)  # every COMPLETE trial is in tune-gen's reading
assert gen["best_trial"] == study.best_trial.number, (gen["best_trial"], study.best_trial.number)
assert abs(gen["best_ms"] - study.best_value) <= 1e-9 * study.best_value, gen["best_ms"]
assert gen["default_trial"] == 1, gen.get("default_trial")  # the retried baseline
assert gen["reconciled"]["recovered"] == [1], gen["reconciled"]
logged = {json.loads(l)["number"] for l in open(sys.argv[3]) if l.strip()}
assert 1 not in logged and 2 in logged, logged  # told@1 lost its line; recorded@2 was logged
print("study ok:", len(trials), "trials,", len(complete), "complete, best", study.best_trial.number)
PY
grep -q "default_ms: " tuned.cuvilpass
if grep -q "not measured" tuned.cuvilpass; then echo "the retried baseline was lost"; exit 1; fi

expect_fail() {  # expect_fail FRAGMENT CMD...: exit 2, one line on stderr with FRAGMENT
  local fragment=$1; shift
  set +e
  "$@" >"$TMP/out" 2>"$TMP/err"
  local status=$?
  set -e
  if [ "$status" -ne 2 ] || ! grep -qF -- "$fragment" "$TMP/err" || [ "$(wc -l < "$TMP/err")" -ne 1 ] ||
     ! grep -q "^cuvil-tune-gen: error: " "$TMP/err"; then
    echo "expected exit 2 with one line '$fragment' from: $*"; echo "status $status"; cat "$TMP/err"; exit 1
  fi
}
GEN=(--suite resnet50 --no-fanova --no-verify --refits 2)
expect_fail "missing.db: no such study" "$TUNE_GEN" --study "$TMP/missing.db" "${GEN[@]}" -o m.cuvilpass
test ! -e "$TMP/missing.db"
test ! -e m.cuvilpass
expect_fail "missing.db: no such study" "$TUNE_GEN" --study "sqlite:///$TMP/missing.db" "${GEN[@]}" -o m.cuvilpass
test ! -e "$TMP/missing.db"
echo "not a database" > text.db
expect_fail "text.db: not an Optuna study" "$TUNE_GEN" --study "$TMP/text.db" "${GEN[@]}" -o t.cuvilpass
test ! -e t.cuvilpass

# A log that disagrees with the study: said, and the study is trusted.
"$PY" - study.db.trials.jsonl > disagree.jsonl <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["state"] == "complete":
        r["value"] = r["value"] / 1000  # far better than the study says
    print(json.dumps(r))
print(json.dumps({"number": 99, "state": "fail", "suite": "resnet50", "study": "cuvil-resnet50"}))
PY
"$TUNE_GEN" --study "$TMP/study.db" --trial-log disagree.jsonl "${GEN[@]}" -o d.cuvilpass \
  --json d.json | tee d.txt
grep -q "disagreeing with it (the study is trusted)" d.txt
grep -q "1 log entry without a study trial (trial 99, left out)" d.txt
"$PY" -c "import json,sys; a=json.load(open('gen.json')); b=json.load(open('d.json')); assert a['best_ms']==b['best_ms'], (a['best_ms'], b['best_ms'])"

# Non-positive best values are bad input naming the file, line and field.
for bad in -5 0; do
  printf '{"number": 0, "state": "complete", "suite": "resnet50", "value": %s, "values": {}}\n' "$bad" > bad.jsonl
  expect_fail "bad.jsonl:1: field 'value': $bad is not a positive finite time in ms" \
    "$TUNE_GEN" --trial-log bad.jsonl "${GEN[@]}" -o b.cuvilpass
done
echo "tune kill test ok"
