#!/usr/bin/env bash
# `run --db` killed with SIGKILL at staggered moments (compiling, measuring, around storing) never
# corrupts the results database or loses a stored run: after every kill SQLite's integrity check
# passes and the database holds exactly the runs that finished storing (each stores its run in one
# transaction; the store's unit tests kill inside that transaction); history reads it and a
# later run stores into it.
set -euo pipefail
BENCH=$(realpath "$1")
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cd "$TMP"
DB="$TMP/results.db"
FAST=(run --suite resnet50 --rungs b1 --db "$DB" --quiet --warmup 0 --warmup-time 0
      --min-samples 3 --max-samples 3 --min-time 0)

check_db() {  # check_db RUNS [MAY_HAVE_ONE_MORE]: integrity ok, RUNS runs stored (or RUNS + 1)
  "$PY" - "$DB" "$1" "${2:-0}" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
runs = db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
want = int(sys.argv[2])
assert runs == want or (sys.argv[3] == "1" and runs == want + 1), (runs, want)
orphans = db.execute(
    "SELECT COUNT(*) FROM benchmarks WHERE run_id NOT IN (SELECT id FROM runs)").fetchone()[0]
assert orphans == 0, orphans
print(runs)
PY
}

"$BENCH" "${FAST[@]}" > first.txt 2>&1 || { cat first.txt; exit 1; }
stored=1
check_db "$stored" >/dev/null
# Kill after 0.1 s .. 1.5 s: from compiling through measuring to storing.
for delay in 0.1 0.3 0.5 0.7 0.9 1.1 1.3 1.5; do
  "$BENCH" "${FAST[@]}" > "$TMP/out" 2>&1 &
  pid=$!
  sleep "$delay"
  kill -9 "$pid" 2>/dev/null || true
  set +e
  wait "$pid" 2>/dev/null
  status=$?
  set -e
  if [ "$status" -eq 0 ]; then stored=$((stored + 1)); fi  # finished before the kill
  if [ "$status" -ne 0 ] && [ "$status" -ne 137 ]; then cat "$TMP/out"; exit 1; fi
  # Killed after its store committed but before it exited, a run is stored whole: one more run
  # is then right, never a part of one.
  killed=0
  [ "$status" -eq 137 ] && killed=1
  stored=$(check_db "$stored" "$killed") || { echo "after a kill at ${delay}s (status $status)"; exit 1; }
done
"$BENCH" history --db "$DB" --json > history.json
"$PY" -c 'import json, sys; h = json.load(open("history.json")); assert len(h["runs"]) == int(sys.argv[1]), h' "$stored"
"$BENCH" "${FAST[@]}" > last.txt 2>&1 || { cat last.txt; exit 1; }
check_db $((stored + 1)) >/dev/null
echo "run kill test ok ($stored runs stored around 8 kills)"
