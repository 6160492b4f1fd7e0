#!/usr/bin/env bash
# cuvil-bench's command-line conventions: --version, a mistyped subcommand's "did you mean",
# CLI11's parse errors as one "cuvil-bench: error:" line with exit status 2, -o/--out, --json on
# list/history/compare, and an Examples footer in every subcommand's --help.
# Usage: cli_conventions_test.sh path/to/cuvil-bench
set -u
BENCH=$1
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
one_line_error() {  # one_line_error NAME TEXT
  [ "$(grep -c . "$TMP/stderr")" -eq 1 ] || { fail "$1: not one line"; cat "$TMP/stderr"; }
  grep -q '^cuvil-bench: error: ' "$TMP/stderr" || fail "$1: no 'cuvil-bench: error:' prefix"
  grep -qF -- "$2" "$TMP/stderr" || { fail "$1: stderr lacks '$2'"; cat "$TMP/stderr"; }
}

run_bench "--version" 0 --version &&
  { grep -Eq '^cuvil-bench [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]{12}(, modified)?|commit unknown)\)$' "$TMP/stdout" ||
    { fail "--version: '$(cat "$TMP/stdout")'"; }; }
run_bench "mistyped command" 2 runn --suite resnet50 &&
  one_line_error "mistyped command" "unknown command 'runn' (did you mean 'run'?)"
run_bench "mistyped report view" 2 report flam x.json &&
  one_line_error "mistyped report view" "unknown report command 'flam' (did you mean 'flame'?)"
run_bench "unrelated word" 2 frobnicate && one_line_error "unrelated word" "(commands: list, verify"
run_bench "no command" 2 && one_line_error "no command" "subcommand"
run_bench "unknown option" 2 run --suite resnet50 --bogus &&
  one_line_error "unknown option" "--bogus"
run_bench "bad option value" 2 history --limit abc && one_line_error "bad option value" "--limit"
run_bench "--help" 0 run --help && grep -q '^Examples:' "$TMP/stdout" || fail "run --help: no Examples"

for cmd in list verify infer run serve history compare tune probes report "report flame" "report dashboard"; do
  # shellcheck disable=SC2086
  if "$BENCH" $cmd --help >"$TMP/help" 2>&1; then
    grep -q '^Examples:' "$TMP/help" || fail "$cmd --help: no Examples footer"
    grep -q 'cuvil-bench' "$TMP/help" || fail "$cmd --help: examples name no command"
  else
    fail "$cmd --help: exit status not 0"
  fi
done
echo "ok   Examples footers"
# Defaults in CLI11's one style (capture_default_str: "INT=20").
"$BENCH" history --help >"$TMP/help" 2>&1
grep -q -- '--limit.*=20' "$TMP/help" || { fail "history --help: --limit default not shown (=20)"; cat "$TMP/help"; }
"$BENCH" run --help >"$TMP/help" 2>&1
grep -q -- '-o,--out' "$TMP/help" || fail "run --help: no -o,--out"
grep -q -- '=\[\]' "$TMP/help" && fail "run --help: an empty list shown as a default (=[])"
grep -q -- '--probe-iterations.*=auto' "$TMP/help" || fail "run --help: --probe-iterations default not 'auto'"
"$BENCH" serve --help >"$TMP/help" 2>&1
grep -q -- '-o,--out' "$TMP/help" || fail "serve --help: no -o,--out"

# --json: machine-readable, the same data as the table.
if run_bench "list --json" 0 list --json; then
  python3 - "$TMP/stdout" <<'PY' || fail "list --json: wrong content"
import json, sys
j = json.load(open(sys.argv[1]))
names = [s["name"] for s in j["suites"]]
assert "resnet50" in names, names
r50 = [s for s in j["suites"] if s["name"] == "resnet50"][0]
assert any(r["name"] == "b1" for r in r50["rungs"]), r50
assert any(p["name"] == "fuse-elementwise" for p in j["passes"]), [p["name"] for p in j["passes"]]
PY
fi
run_bench "list suites --json" 0 list suites --json &&
  python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert "passes" not in j and j["suites"]' "$TMP/stdout" ||
  fail "list suites --json"
# One small stored run for history (and its run.json for compare).
if run_bench "run into a database" 0 run --suite resnet50 --rungs b1 --warmup 1 --warmup-time 0 \
  --min-samples 3 --max-samples 3 --min-time 0 --timeout 10 --quiet --db "$TMP/r.db" -o "$TMP/run.json"; then
  run_bench "history --json" 0 history --db "$TMP/r.db" --json &&
    python3 - "$TMP/stdout" <<'PY' || fail "history --json: wrong content"
import json, sys
j = json.load(open(sys.argv[1]))
assert len(j["runs"]) == 1, j
r = j["runs"][0]
assert r["suite"] == "resnet50" and r["rungs"] == ["b1"] and r["id"] >= 1, r
assert (len(r["git_commit"]) == 40 or r["git_commit"] == "unknown") and "machine_fingerprint" in r, r
PY
  run_bench "compare --json of stored run ids" 0 compare 1 "$TMP/run.json" --db "$TMP/r.db" --json &&
    python3 -c 'import json, sys; j = json.load(open(sys.argv[1])); assert [b["name"] for b in j["benchmarks"]] == ["resnet50/b1"], j' "$TMP/stdout" ||
    fail "compare --json of stored run ids"
fi
printf '{"context": {}, "benchmarks": [{"name": "toy/b1", "run_name": "toy/b1", "run_type": "iteration", "real_time": 1.0, "time_unit": "ms"}, {"name": "toy/b1", "run_name": "toy/b1", "run_type": "iteration", "real_time": 1.1, "time_unit": "ms"}, {"name": "toy/b1", "run_name": "toy/b1", "run_type": "iteration", "real_time": 0.9, "time_unit": "ms"}]}\n' >"$TMP/a.json"
if run_bench "compare --json" 0 compare "$TMP/a.json" "$TMP/a.json" --json; then
  python3 - "$TMP/stdout" <<'PY' || fail "compare --json: wrong content"
import json, sys
j = json.load(open(sys.argv[1]))
assert [b["name"] for b in j["benchmarks"]] == ["toy/b1"], j
assert j["benchmarks"][0]["verdict"] == "same", j["benchmarks"][0]
assert j["geomean_ratio"] == 1, j
PY
fi

finish "failure(s)" "all CLI convention checks passed"
