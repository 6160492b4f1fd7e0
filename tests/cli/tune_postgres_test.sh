#!/usr/bin/env bash
# One tuning study shared by two tuner processes through PostgreSQL (as two machines would share
# it): a throwaway cluster in a temp dir, two `cuvil-bench tune` processes with their own working
# directories (and trial logs) against one postgresql:// URL; every finished trial of the study
# lands in exactly one of the two logs, both tuners contributed, and cuvil-tune-gen reads the
# merged logs. An unreachable URL is refused before any trial. Skips (exit 77) without the
# PostgreSQL server binaries or python3-psycopg2.
set -euo pipefail
BENCH=$(realpath "$1")
TUNE_GEN=$(realpath "$2")
PY=/usr/bin/python3
PGBIN=${CUVIL_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ] || [ ! -x "$PGBIN/pg_ctl" ]; then
  echo "SKIP: PostgreSQL server binaries not found (install postgresql, or set CUVIL_PG_BIN)"
  exit 77
fi
if ! "$PY" -c "import psycopg2" 2>/dev/null; then
  echo "SKIP: $PY cannot import psycopg2 (install python3-psycopg2)"
  exit 77
fi

TMP=$(mktemp -d)
chmod 755 "$TMP"
mkdir "$TMP/pg" "$TMP/sock" "$TMP/a" "$TMP/b"
AS_PG=()
if [ "$(id -u)" = 0 ]; then
  # initdb refuses to run as root: the cluster belongs to an unprivileged user.
  chown nobody "$TMP/pg" "$TMP/sock"
  AS_PG=(runuser -u nobody --)
fi
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  "${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$TMP"
}
trap cleanup EXIT

"${AS_PG[@]}" "$PGBIN/initdb" -D "$TMP/pg" -A trust -U cuvil >"$TMP/initdb.log" 2>&1 ||
  { cat "$TMP/initdb.log"; exit 1; }
# Unix socket only: no TCP port to collide with anything.
"${AS_PG[@]}" "$PGBIN/pg_ctl" -D "$TMP/pg" -w -l "$TMP/pg/server.log" \
  -o "-k $TMP/sock -c listen_addresses='' -p 5432" start >/dev/null
"${AS_PG[@]}" "$PGBIN/createdb" -h "$TMP/sock" -p 5432 -U cuvil cuvil
URL="postgresql://cuvil@/cuvil?host=$TMP/sock&port=5432"

FAST=(--suite resnet50 --rungs b1 --sampler random --warmup 0 --warmup-time 0 --min-samples 1
      --max-samples 2 --min-time 0 --trial-memory-mb 4096 -q)

# An unreachable database: a clear error, exit 2, no trial, no log.
cd "$TMP/a"
set +e
"$BENCH" tune "${FAST[@]}" --trials 1 --study "postgresql://cuvil@/cuvil?host=$TMP/nowhere&port=5432" \
  >out.txt 2>err.txt
status=$?
set -e
if [ "$status" -ne 2 ] || ! grep -q "could not connect\|connection" err.txt; then
  echo "expected exit 2 and a connection error, got $status"; cat out.txt err.txt; exit 1
fi
test ! -e cuvil-resnet50.trials.jsonl

# Tuner A creates the study; tuner B joins once A has finished its first trial.
"$BENCH" tune "${FAST[@]}" --trials 10 --study "$URL" --seed 1 >a.txt 2>&1 &
PIDS+=($!)
for _ in $(seq 1 600); do
  [ -s "$TMP/a/cuvil-resnet50.trials.jsonl" ] && break
  sleep 0.5
done
cd "$TMP/b"
"$BENCH" tune "${FAST[@]}" --trials 10 --study "$URL" --seed 2 >b.txt 2>&1 &
PIDS+=($!)
for p in "${PIDS[@]}"; do wait "$p" || { echo "a tuner failed"; cat "$TMP/a/a.txt" "$TMP/b/b.txt"; exit 1; }; done
PIDS=()
cat "$TMP/a/a.txt" "$TMP/b/b.txt"

"$PY" - "$URL" "$TMP/a/cuvil-resnet50.trials.jsonl" "$TMP/b/cuvil-resnet50.trials.jsonl" <<'PY'
import json, sys, optuna
optuna.logging.set_verbosity(optuna.logging.WARNING)
url, log_a, log_b = sys.argv[1:]
study = optuna.load_study(study_name="cuvil-resnet50", storage=url)
finished = {t.number for t in study.trials if t.state.is_finished()}
a = {json.loads(l)["number"] for l in open(log_a)}
b = {json.loads(l)["number"] for l in open(log_b)}
assert a and b, ("both tuners must have run trials", a, b)
assert not (a & b), ("a trial ran on both", a & b)
assert a | b == finished, (sorted(a), sorted(b), sorted(finished))
assert len(finished) >= 10, sorted(finished)
baselines = [t for t in study.trials if t.user_attrs.get("baseline")]
assert len(baselines) == 1, baselines
print("shared study ok: %d trials, %d from tuner A, %d from tuner B" % (len(finished), len(a), len(b)))
PY

# cuvil-tune-gen over the merged logs, fANOVA from the shared study.
cd "$TMP"
cat a/cuvil-resnet50.trials.jsonl b/cuvil-resnet50.trials.jsonl > merged.jsonl
"$TUNE_GEN" --study "$URL" --trial-log merged.jsonl --suite resnet50 -o tuned.cuvilpass \
  --refits 2 --no-verify | tee gen.txt
grep -q "fANOVA" gen.txt
! grep -q "fANOVA: unavailable" gen.txt
grep -q "best_trial" tuned.cuvilpass
echo "tune postgres test ok"
