#!/usr/bin/env bash
# The dashboard in a real browser: store two quick runs, write the site with
# `cuvil-bench report dashboard`, load index.html from disk in headless Chromium, and check that
# the page logs nothing to the console (no script error, no failed load) and that the rendered
# DOM holds the charts (one point per run) and the verdict table. Without Chromium this FAILS:
# the dashboard test must not pass unseen (Debian package: chromium).
# Usage: dashboard_browser_test.sh path/to/cuvil-bench
set -u
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

. "$(dirname "$0")/headless_chromium.sh"

# Two short real runs of one rung; an empty pipeline keeps this independent of the passes. The
# second is profiled and made in its own folder with a relative -o, and its flame graph written
# beside its run.json there, as the nightly job does.
printf 'cuvil_pass_version: 1\ntarget: cpu\npasses: []\n' >"$TMP/empty.cuvilpass"
mkdir -p "$TMP/made"
for i in 1 2; do
  extra=()
  [ "$i" -eq 2 ] && extra=(--probes ops --probe-iterations 2 -o run2.json)
  if ! (cd "$TMP/made" && "$BENCH" run --suite resnet50 --rungs b1 --warmup 0 --min-repetitions 5 \
    --max-repetitions 5 --min-time 0 --config "$TMP/empty.cuvilpass" -q --db "$TMP/results.db" \
    "${extra[@]}") >"$TMP/run$i.log" 2>&1; then
    cat "$TMP/run$i.log"; echo "FAIL run $i"; exit 1
  fi
done
if ! (cd "$TMP/made" && "$BENCH" report flame run2.json --format svg -o run2) >"$TMP/flame.log" 2>&1; then
  cat "$TMP/flame.log"; echo "FAIL report flame"; exit 1
fi
# Made from another folder: the flame graph is found where the run was made.
if ! (cd / && "$BENCH" report dashboard --db "$TMP/results.db" -o "$TMP/site") >"$TMP/report.log" 2>&1; then
  cat "$TMP/report.log"; echo "FAIL report dashboard"; exit 1
fi
grep -q "1 benchmark histories, 2 runs, 2 points" "$TMP/report.log" || { fail "summary line"; cat "$TMP/report.log"; }
grep -q "1 history(ies) too short for change points" "$TMP/report.log" || { fail "summary line: too short"; cat "$TMP/report.log"; }
grep -q ", 1 flame graph(s)" "$TMP/report.log" || { fail "flame graph of run 2 not found"; cat "$TMP/report.log"; }

# Nothing the page loads may come from the network (the SVG namespace is a name, not a load).
if grep -oE '(src|href)="https?://[^"]*"' "$TMP/site/index.html" | grep -q .; then
  fail "index.html refers to the network:"; grep -oE '(src|href)="https?://[^"]*"' "$TMP/site/index.html"
fi

# --dump-dom prints the DOM after load; --enable-logging=stderr shows console messages as
# ":CONSOLE" lines. Network is off (--host-resolver-rules) so a remote load would fail loudly.
headless_chromium "$TMP/profile" --dump-dom "file://$TMP/site/index.html" >"$TMP/dom.html" 2>"$TMP/chromium.log"
status=$?
[ "$status" -eq 0 ] || { fail "chromium exit status $status"; tail -n 20 "$TMP/chromium.log"; }
if grep -q ':CONSOLE' "$TMP/chromium.log"; then
  fail "console messages while loading the dashboard:"; grep ':CONSOLE' "$TMP/chromium.log"
fi
expect_dom() { grep -qF -- "$2" "$TMP/dom.html" || fail "$1: DOM lacks '$2'"; }
expect_dom "title" "<h1>cuvil benchmark dashboard</h1>"
expect_dom "chart" 'class="chart" id="chart-resnet50_b1-cpu-'
points=$(grep -o '<circle class="point' "$TMP/dom.html" | wc -l)
[ "$points" -eq 2 ] || fail "chart: $points points, expected one per run (2)"
expect_dom "spread band" 'class="spread"'
expect_dom "verdict table" '<table class="verdicts">'
# Two runs: one of the five baseline runs the verdict needs, and said so.
expect_dom "baseline header" '<th>baseline: last 5 runs</th>'
grep -qE '<td>run 1 <code>[^<]*</code></td><td>run 2 <code>' "$TMP/dom.html" ||
  fail "verdict table: run 2 against baseline run 1"
grep -qE 'class="verdict verdict-not-enough-data">not enough data <span class="note">\(1 of 5 earlier runs with config [0-9a-f]{16}\)' \
  "$TMP/dom.html" || fail "verdict table: not enough data for a verdict"
# Each run's config hash; two runs are too few for change points, and the page says so.
grep -qE '<th>config</th><th>machine</th>' "$TMP/dom.html" || fail "runs table: no config column"
grep -qE '<td class="text"><code>[0-9a-f]{16}</code></td>' "$TMP/dom.html" || fail "no config hash shown"
grep -qE 'history too short for change points \(need [0-9]+, has 2 runs\)' "$TMP/dom.html" ||
  fail "no too-short notice"
expect_dom "change points" '<section id="change-points">'
expect_dom "runs table" '<table class="runs">'
[ -s "$TMP/dom.html" ] || fail "empty DOM"
# One day, one commit: the two x labels still differ.
labels=$(grep -oE '<text class="x-label"[^>]*>[^<]*' "$TMP/dom.html" | sed 's/.*>//' | sort -u | wc -l)
[ "$labels" -eq 2 ] || fail "chart: $labels distinct x label(s) for 2 runs"
expect_dom "flame link" '<a href="flame/run-2.svg">'

# The linked flame graph renders, without console messages, with a link back to the dashboard.
headless_chromium "$TMP/profile" --dump-dom "file://$TMP/site/flame/run-2.svg" >"$TMP/flame-dom.html" 2>"$TMP/flame-chromium.log" ||
  fail "chromium on the flame graph"
if grep -q ':CONSOLE' "$TMP/flame-chromium.log"; then
  fail "console messages while loading the flame graph:"; grep ':CONSOLE' "$TMP/flame-chromium.log"
fi
grep -qE '<a class="back-to-dashboard" href="../index.html#resnet50_b1-cpu-[^"]*">' "$TMP/flame-dom.html" ||
  fail "flame graph: no link back to the dashboard"
grep -q 'parsererror' "$TMP/flame-dom.html" && fail "flame graph: does not parse"

if [ "$failures" -ne 0 ]; then
  echo "$failures dashboard browser check(s) failed"
  exit 1
fi
echo "dashboard renders in headless Chromium with no console messages; charts and tables present"
