#!/usr/bin/env bash
# The report readers and writers on hostile input (issue 17): JSON of the wrong type or with
# overflowing numbers, deep frame trees, zero medians and NaN thresholds, samples files outside
# the run's folder, read-only results databases, and control characters in what errors quote.
# Every bad input is a one-line `cuvil-bench: error: ...` and exit 2, never an abort.
# Usage: reports_robust_test.sh path/to/cuvil-bench path/to/source-dir
set -u
BENCH=$1
SOURCE_DIR=$2
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export XDG_DATA_HOME="$TMP/xdg"  # never touch the user's own results database

expect_one_line_error() {  # NAME TEXT: exactly one line on stderr, "cuvil-bench: error: ...TEXT..."
  local lines
  lines=$(wc -l <"$TMP/stderr")
  [ "$lines" -eq 1 ] || { fail "$1: expected a one-line error, got $lines lines"; cat "$TMP/stderr"; }
  grep -q '^cuvil-bench: error: ' "$TMP/stderr" || fail "$1: not a cuvil-bench error line"
  expect_err "$1" "$2"
}
# Peak resident memory (KiB) and wall seconds of a command, into $TMP/rusage.
measure() {
  python3 - "$@" <<'PY' >"$TMP/rusage"
import resource, subprocess, sys, time
t0 = time.monotonic()
with open("/dev/null", "w") as null:
    rc = subprocess.run(sys.argv[1:], stdout=null, stderr=null).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, round(time.monotonic() - t0, 2))
PY
}

# A benchmark in cuvil's layout: one median entry with raw samples. entry NAME NS...
entry() {
  local name=$1
  shift
  local ns
  ns=$(IFS=,; echo "$*")
  printf '{"name": "%s_median", "run_name": "%s", "run_type": "aggregate", "aggregate_name": "median", "real_time": %s, "time_unit": "ns", "threads": 1, "cuvil": {"real_ns": [%s]}}' \
    "$name" "$name" "$1" "$ns"
}
good='{"context": {"date": "2024-05-01T10:00:00+0000", "host_name": "h", "num_cpus": 2}, "benchmarks": ['"$(entry toy/r1 100 101 102 103 104 105 106)"']}'
echo "$good" >"$TMP/good.json"

# 1. Unexpected types and overflowing numbers: an error naming the JSON pointer, exit 2.
bad_json() {  # bad_json NAME JSON POINTER_AND_MESSAGE
  printf '%s\n' "$2" >"$TMP/bad.json"
  run_bench "compare: $1" 2 compare "$TMP/bad.json" "$TMP/good.json" &&
    expect_one_line_error "compare: $1" "$TMP/bad.json: $3"
}
bad_json "overflowing time" '{"benchmarks":[{"name":"x/y","real_time":1e999}]}' \
  "/benchmarks/0/real_time: the number 1e999 is out of range"
bad_json "numeric run_type" '{"benchmarks":[{"name":"x/y","real_time":1,"run_type":7}]}' \
  "/benchmarks/0/run_type: expected a string, got a number"
bad_json "text error_occurred" '{"benchmarks":[{"name":"x/y","real_time":1,"error_occurred":"yes"}]}' \
  "/benchmarks/0/error_occurred: expected true or false"
bad_json "time beyond a double in ns" '{"benchmarks":[{"name":"x/y","real_time":1e300,"time_unit":"s"}]}' \
  "/benchmarks/0/real_time: the time 1e+300 is out of range"
bad_json "huge threads" '{"benchmarks":[{"name":"x/y","real_time":1,"threads":1e12}]}' \
  "/benchmarks/0/threads: the integer"
bad_json "raw sample of text" '{"benchmarks":[{"name":"x_median","run_type":"aggregate","aggregate_name":"median","real_time":1,"cuvil":{"real_ns":[1,"2"]}}]}' \
  "/benchmarks/0/cuvil/real_ns/1: expected a number, got a string"
bad_json "deep nesting" "$(python3 -c 'print("[" * 100000 + "]" * 100000)')" "nested deeper than 512 levels"

# Per-op records for report flame: record NODE LOWERING_JSON
record() {
  printf '{"step": 0, "node": "%s", "op": "conv2d", "kernel": "conv2d.im2col", "lowering": %s, "flops": 1000, "bytes": 300, "ns_per_iteration": 1500, "ns_min": 1400, "ns_median": 1500}' "$1" "$2"
}
ops_run() {  # ops_run RECORD...: a run.json with one rung of these records
  local recs
  recs=$(IFS=,; echo "$*")
  printf '{"context": {}, "benchmarks": [{"name": "toy/b1_median", "run_name": "toy/b1", "run_type": "aggregate", "aggregate_name": "median", "real_time": 0.02, "time_unit": "ms", "cuvil": {"real_ns": [20000], "ops": {"iterations": 3, "records": [%s]}}}]}\n' "$recs"
}
ops_run "$(record conv1 7)" >"$TMP/numeric_lowering.json"
run_bench "flame: numeric lowering" 2 report flame "$TMP/numeric_lowering.json" -o "$TMP/x" &&
  expect_one_line_error "flame: numeric lowering" \
    "$TMP/numeric_lowering.json: /benchmarks/0/cuvil/ops/records/0/lowering: expected a string, got a number"
printf '{"benchmarks":[{"name":"toy/b1_median","run_type":9,"real_time":1}]}\n' >"$TMP/flame_run_type.json"
run_bench "flame: numeric run_type" 2 report flame "$TMP/flame_run_type.json" -o "$TMP/x" &&
  expect_one_line_error "flame: numeric run_type" "/benchmarks/0/run_type: expected a string"
[ -e "$TMP/x.svg" ] && fail "bad input still wrote output"

# 2. Deep trees: a 20000-block node name and an 8000-frame folded stack, quickly, in little memory.
deep_node=$(python3 -c 'print("a." * 20000 + "conv")')
ops_run "$(record "$deep_node" '"generated"')" >"$TMP/deep.json"
measure "$BENCH" report flame "$TMP/deep.json" -o "$TMP/deep/out"
read -r rc rss seconds <"$TMP/rusage"
if [ "$rc" -eq 0 ] && [ "$rss" -lt 300000 ]; then
  echo "ok   flame: 20000-deep node name (${rss} KiB, ${seconds} s)"
else
  fail "flame: 20000-deep node name: exit $rc, ${rss} KiB, ${seconds} s"
fi
for f in svg folded speedscope.json trace.json; do [ -s "$TMP/deep/out.$f" ] || fail "deep name: no out.$f"; done
python3 -c 'print(";".join("frame%d" % i for i in range(8000)) + " 7")' >"$TMP/deep.folded"
measure "$BENCH" report flame "$TMP/good.json" --folded "$TMP/deep.folded" -o "$TMP/deep/folded"
read -r rc rss seconds <"$TMP/rusage"
if [ "$rc" -eq 0 ] && [ "$rss" -lt 300000 ]; then
  echo "ok   flame: 8000-frame folded stack (${rss} KiB, ${seconds} s)"
else
  fail "flame: 8000-frame folded stack: exit $rc, ${rss} KiB, ${seconds} s"
fi
cmp -s "$TMP/deep.folded" "$TMP/deep/folded.folded" || fail "8000-frame stack: folded output differs"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/deep/folded.speedscope.json" ||
  fail "8000-frame stack: speedscope output is not JSON"
if command -v xmllint >/dev/null; then
  xmllint --noout --huge "$TMP/deep/folded.svg" || fail "8000-frame stack: xmllint rejects the svg"
fi

# 3. A zero median is never "same"; NaN, inf and negative thresholds are bad input.
echo '{"benchmarks": ['"$(entry toy/r1 0 0 0 0 0 0 0)"']}' >"$TMP/zero.json"
echo '{"benchmarks": ['"$(entry toy/r1 175000000 175000001 175000002 175000003 175000004 175000005 175000006)"']}' >"$TMP/slow.json"
run_bench "compare: zero median" 2 compare "$TMP/zero.json" "$TMP/slow.json" &&
  expect_one_line_error "compare: zero median" "$TMP/zero.json: 'toy/r1' has a median of 0 ns"
grep -q "same" "$TMP/stdout" && fail "compare: zero median printed a verdict of same"
run_bench "compare: zero median on the new side" 2 compare "$TMP/slow.json" "$TMP/zero.json" &&
  expect_err "compare: zero median on the new side" "$TMP/zero.json: 'toy/r1' has a median of 0 ns"
for value in nan NaN inf -inf -1 1e999; do
  run_bench "compare: --fail-on-regression $value" 2 compare "$TMP/good.json" "$TMP/good.json" \
    "--fail-on-regression=$value" && expect_err "--fail-on-regression $value" "not a finite number"
done
run_bench "compare: --min-change nan" 2 compare "$TMP/good.json" "$TMP/good.json" --min-change nan &&
  expect_err "--min-change nan" "not a finite number"
run_bench "compare: --fail-on-regression 5 still works" 0 compare "$TMP/good.json" "$TMP/good.json" \
  --fail-on-regression 5

# 4. samples_file only inside the run's own folder.
mkdir -p "$TMP/runs"
printf 'main;secret 1\n' >"$TMP/secret.folded"
printf 'main;run 3\n' >"$TMP/runs/mine.folded"
samples_run() {
  printf '{"benchmarks": [{"name": "toy/b1_median", "run_name": "toy/b1", "run_type": "aggregate", "aggregate_name": "median", "real_time": 1, "time_unit": "ms", "cuvil": {"samples_file": "%s"}}]}\n' "$1"
}
for named in "$TMP/secret.folded" "../secret.folded" "/etc/passwd"; do
  samples_run "$named" >"$TMP/runs/escape.json"
  run_bench "flame: samples_file $named" 2 report flame "$TMP/runs/escape.json" -o "$TMP/s" &&
    expect_one_line_error "flame: samples_file $named" \
      "$TMP/runs/escape.json: /benchmarks/0/cuvil/samples_file: '$named' leads outside the run's folder"
done
[ -e "$TMP/s.svg" ] && fail "samples_file outside the folder was drawn"
samples_run "$TMP/runs/mine.folded" >"$TMP/runs/inside.json"  # what `run --out /abs/...` writes
run_bench "flame: absolute samples_file inside the folder" 0 report flame "$TMP/runs/inside.json" \
  --format folded -o "$TMP/inside" && { grep -qF 'main;run 3' "$TMP/inside.folded" || fail "inside: stacks differ"; }

# 6. Control characters in quoted input are escaped: one line, no raw escape byte.
printf '{"benchmarks":[{"name":"x\\u001b[31m\\nfake","run_type":"aggregate","aggregate_name":"stddev"}]}\n' >"$TMP/escape.json"
run_bench "compare: escape sequence in a name" 2 compare "$TMP/escape.json" "$TMP/good.json" &&
  expect_one_line_error "compare: escape sequence in a name" "'x\\x1b[31m\\x0afake' has no timing samples"
grep -q $'\x1b' "$TMP/stderr" && fail "raw ESC on stderr"

# 5. Read-only results databases: history, compare and the dashboard read without writing.
# make_db PATH JOURNAL_MODE: a database with two stored runs, as cuvil's own schema has them.
make_db() {
  python3 - "$SOURCE_DIR/reports/results_store.cc" "$1" "$2" "$TMP/good.json" <<'PY'
import json, re, sqlite3, sys
source, path, mode, doc_path = sys.argv[1:]
schema = re.search(r'R"sql\((.*?)\)sql"', open(source).read(), re.S).group(1)
version = int(re.search(r"kSchemaVersion = (\d+)", open(source.replace(".cc", ".h")).read()).group(1))
doc = json.load(open(doc_path))
db = sqlite3.connect(path)
db.executescript(schema)
db.execute("PRAGMA user_version=%d" % version)
db.execute("INSERT INTO machines VALUES (1, 'f00d', 'h', 'cpu', 2, '{}')")
for run in (1, 2):
    db.execute("INSERT INTO runs(id, started_at, git_commit, machine_id, suite, target, threads, "
               "command_line, document) VALUES (?, '2024-05-01', 'abc', 1, 'toy', 'cpu', 1, 'x', ?)",
               (run, json.dumps(doc)))
    db.execute("INSERT INTO benchmarks VALUES (?, ?, 'toy/r1', 'toy', 'r1', 7, 103, 103, 2, 0.02, "
               "100, 106, 0, 0, 0)", (run, run))
    for i, ns in enumerate(doc["benchmarks"][0]["cuvil"]["real_ns"]):
        db.execute("INSERT INTO samples VALUES (?, ?, ?, NULL)", (run, i, ns))
db.commit()
db.execute("PRAGMA journal_mode=%s" % mode)
db.close()
PY
}
read_commands() {  # read_commands LABEL DB: history, compare by id and the dashboard all read DB
  run_bench "$1: history" 0 history --db "$2" && expect_out "$1: history" "toy"
  run_bench "$1: compare 1 2" 0 compare 1 2 --db "$2" && expect_out "$1: compare" "toy/r1"
  run_bench "$1: dashboard" 0 report dashboard --db "$2" -o "$TMP/site-$RANDOM"
}
mkdir -p "$TMP/db"
make_db "$TMP/db/r.db" delete
sum_before=$(sha256sum <"$TMP/db/r.db")
read_commands "unchanged db" "$TMP/db/r.db"
# Meaningful as root too: a read-write open would have switched the file to WAL (a write).
[ "$(sha256sum <"$TMP/db/r.db")" = "$sum_before" ] || fail "reading changed the database file"
ls "$TMP/db" | grep -q -- '-wal\|-shm\|-journal' && { fail "reading left journal files"; ls "$TMP/db"; }

# A stored document with a wrong-typed field: an error naming the run and the pointer.
python3 - "$TMP/db/r.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE runs SET document = json_set(document, '$.benchmarks[0].run_type', 7) WHERE id = 2")
db.commit()
PY
run_bench "compare: stored document of the wrong type" 2 compare 1 2 --db "$TMP/db/r.db" &&
  expect_one_line_error "compare: stored document" \
    "$TMP/db/r.db: run 2: /benchmarks/0/run_type: expected a string, got a number"

# A read-only file in a read-only folder, WAL mode, no -shm: chmod stops writes unless root.
mkdir -p "$TMP/rodir"
make_db "$TMP/rodir/r.db" wal
chmod 0444 "$TMP/rodir/r.db"
chmod 0555 "$TMP/rodir"
if touch "$TMP/rodir/probe" 2>/dev/null; then
  rm -f "$TMP/rodir/probe"
  echo "skip chmod read-only database (running as root: chmod does not stop writes)"
else
  read_commands "chmod 0444 db in a 0555 folder" "$TMP/rodir/r.db"
fi
chmod 0755 "$TMP/rodir"
chmod 0644 "$TMP/rodir/r.db"
# A read-only file system stops writes for root too (a read-only bind mount in a user and mount
# namespace, where the system allows them).
if unshare -rm sh -c "mount --bind -o ro '$TMP/rodir' '$TMP/rodir'" 2>/dev/null; then
  for cmd in "history --db $TMP/rodir/r.db" "compare 1 2 --db $TMP/rodir/r.db"; do
    if unshare -rm sh -c "mount --bind -o ro '$TMP/rodir' '$TMP/rodir' && touch '$TMP/rodir/probe' 2>/dev/null && exit 9; exec '$BENCH' $cmd" >"$TMP/stdout" 2>"$TMP/stderr"; then
      echo "ok   read-only file system: $cmd"
    else
      fail "read-only file system: $cmd: exit $?"; cat "$TMP/stdout" "$TMP/stderr"
    fi
  done
else
  echo "skip read-only file system (no user and mount namespaces here)"
fi

finish "failure(s)" "all report robustness checks passed"
