#!/usr/bin/env bash
# cuvil-bench tune end to end on resnet50 b1 with very short measuring: bad input is refused
# before any trial; a crashing, wrong and out-of-memory trial fail with their reasons while the
# study goes on; a tuner killed with SIGKILL mid-trial resumes (the running trial is failed and
# retried, finished trials are kept, numbering continues); cuvil-tune-gen writes a .cuvilpass
# that is deterministic, verifies and runs, and reads a study without a recorded target as cpu.
# CUVIL_TEST_TRIAL_FAULT is a TEST-ONLY hook (tuner/trial.h).
set -euo pipefail
BENCH=$(realpath "$1")
TUNE_GEN=$(realpath "$2")
PY=/usr/bin/python3
TMP=$(mktemp -d)
TUNE_PID=
cleanup() {
  if [ -n "$TUNE_PID" ]; then kill -9 "$TUNE_PID" 2>/dev/null || true; fi
  rm -rf "$TMP"
}
trap cleanup EXIT
cd "$TMP"
FAST=(--suite resnet50 --rungs b1 --study "$TMP/study.db" --sampler random --seed 3
      --warmup 0 --warmup-time 0 --min-samples 1 --max-samples 2 --min-time 0 --trial-memory-mb 4096)

expect_fail() {  # expect_fail FRAGMENT CMD...: exit status 2 and FRAGMENT on stderr
  local fragment=$1; shift
  set +e
  "$@" >"$TMP/out" 2>"$TMP/err"
  local status=$?
  set -e
  if [ "$status" -ne 2 ] || ! grep -qF -- "$fragment" "$TMP/err"; then
    echo "expected exit 2 with '$fragment' from: $*"; echo "status $status"; cat "$TMP/err"; exit 1
  fi
}

# Bad input: a clear error before any trial.
printf 'passes:\n  layout:\n    params:\n      memory_layout: { choices: [nchw, nhwx] }\n' > bad.yaml
expect_fail "bad.yaml:4: passes.layout.params.memory_layout" "$BENCH" tune "${FAST[@]}" --space bad.yaml --trials 1
expect_fail "cannot be run" "$BENCH" tune "${FAST[@]}" --python /nonexistent/python3 --trials 1
test ! -e "$TMP/study.db.trials.jsonl"

# Phase A: trial 1 crashes, 2 computes wrong, 3 runs out of memory, 4 hangs; the tuner is killed
# with SIGKILL while trial 4 hangs.
CUVIL_TEST_TRIAL_FAULT="crash@1,wrong@2,oom@3,hang@4" \
  "$BENCH" tune "${FAST[@]}" --trials 8 --trial-timeout 300 > phase_a.txt 2>&1 &
TUNE_PID=$!
for _ in $(seq 1 600); do
  if [ -f study.db.trials.jsonl ] && [ "$(wc -l < study.db.trials.jsonl)" -ge 4 ]; then break; fi
  sleep 0.5
done
[ "$(wc -l < study.db.trials.jsonl)" -ge 4 ] || { echo "phase A made no progress"; cat phase_a.txt; exit 1; }
sleep 2  # trial 4 is hanging now
kill -9 "$TUNE_PID"
wait "$TUNE_PID" 2>/dev/null || true
TUNE_PID=
cat phase_a.txt

# Phase B: the same study resumes up to 6 counted trials.
"$BENCH" tune "${FAST[@]}" --trials 6 | tee phase_b.txt
grep -q "trial 4 was left running by a killed process" phase_b.txt

"$PY" - study.db.trials.jsonl <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in recs:
    by.setdefault(r["number"], []).append(r)
def one(n):
    assert len(by[n]) == 1, by[n]
    return by[n][0]
assert one(0)["state"] == "complete" and one(0)["baseline"], one(0)
assert one(0)["rungs"][0]["name"] == "b1" and len(one(0)["rungs"][0]["samples_ns"]) >= 1
assert one(1)["state"] == "fail" and one(1)["reason"].startswith("crashed (signal 11"), one(1)
assert one(2)["state"] == "fail" and one(2)["reason"].startswith("wrong result"), one(2)
assert one(3)["state"] == "fail" and one(3)["reason"].startswith("out of memory"), one(3)
assert one(4)["state"] == "fail" and one(4)["reason"].startswith("interrupted"), one(4)
assert one(5)["retry_of"] == 4 and one(5)["values"] == one(4)["values"], (one(5), one(4))
assert one(5)["state"] in ("complete", "pruned", "fail"), one(5)
assert sorted(by) == list(range(7)), sorted(by)
for r in recs:
    assert r["machine"]["cpu_model"] and r["commit"], r
    if r["state"] == "complete":
        assert r["config_hash"] and r["value"] > 0, r
print("trial log ok:", len(recs), "records")
PY

# cuvil-tune-gen: deterministic, loads, verifies, runs.
"$TUNE_GEN" --study "$TMP/study.db" --suite resnet50 -o tuned.cuvilpass --refits 5 | tee gen.txt
"$TUNE_GEN" --study "$TMP/study.db" --suite resnet50 -o tuned2.cuvilpass --refits 5 > /dev/null
cmp tuned.cuvilpass tuned2.cuvilpass
# The space is built for the study's recorded target; a study from before tune recorded it (the
# attribute deleted here) is a cpu study and gives the same file (but for its trial log's name).
cp study.db old.db
cp study.db.trials.jsonl old.db.trials.jsonl
"$PY" - old.db <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("SELECT value_json FROM study_user_attributes WHERE key = 'target'").fetchall() == [('"cpu"',)]
db.execute("DELETE FROM study_user_attributes WHERE key = 'target'")
db.commit()
PY
"$TUNE_GEN" --study "$TMP/old.db" --suite resnet50 -o old.cuvilpass --refits 5 --no-verify > /dev/null
diff <(grep -v 'trial_log:' tuned.cuvilpass) <(grep -v 'trial_log:' old.cuvilpass)
grep -q "speedup" tuned.cuvilpass
grep -q "importance" tuned.cuvilpass
"$BENCH" verify --suite resnet50 --rungs b1 --config tuned.cuvilpass
NO_DB=()
if "$BENCH" run --help | grep -q -- --no-db; then NO_DB=(--no-db); fi
"$BENCH" run --suite resnet50 --rungs b1 --config tuned.cuvilpass --warmup 0 --warmup-time 0 \
  --min-samples 1 --max-samples 2 --min-time 0 "${NO_DB[@]}"
expect_fail "no trials of study 'cuvil-llama3-8b'" "$TUNE_GEN" --study "$TMP/study.db" --trial-log study.db.trials.jsonl --suite llama3-8b -o x.cuvilpass
echo "tune test ok"
