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

CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$CHROMIUM" ]; then
  echo "FAIL chromium not found: install Debian's chromium package (scripts/setup.sh) or set CHROMIUM"
  exit 1
fi

# Two short real runs of one rung; an empty pipeline keeps this independent of the passes.
printf 'cuvil_pass_version: 1\ntarget: cpu\npasses: []\n' >"$TMP/empty.cuvilpass"
for i in 1 2; do
  if ! "$BENCH" run --suite resnet50 --rungs b1 --warmup 0 --min-repetitions 5 --max-repetitions 5 \
    --min-time 0 --config "$TMP/empty.cuvilpass" -q --db "$TMP/results.db" >"$TMP/run$i.log" 2>&1; then
    cat "$TMP/run$i.log"; echo "FAIL run $i"; exit 1
  fi
done
if ! "$BENCH" report dashboard --db "$TMP/results.db" -o "$TMP/site" >"$TMP/report.log" 2>&1; then
  cat "$TMP/report.log"; echo "FAIL report dashboard"; exit 1
fi
grep -q "1 benchmark histories, 2 runs, 2 points" "$TMP/report.log" || { fail "summary line"; cat "$TMP/report.log"; }

# Nothing the page loads may come from the network (the SVG namespace is a name, not a load).
if grep -oE '(src|href)="https?://[^"]*"' "$TMP/site/index.html" | grep -q .; then
  fail "index.html refers to the network:"; grep -oE '(src|href)="https?://[^"]*"' "$TMP/site/index.html"
fi

# --dump-dom prints the DOM after load; --enable-logging=stderr shows console messages as
# ":CONSOLE" lines. Network is off (--host-resolver-rules) so a remote load would fail loudly.
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$TMP/profile" \
  --host-resolver-rules="MAP * ~NOTFOUND" --enable-logging=stderr --v=0 \
  --dump-dom "file://$TMP/site/index.html" >"$TMP/dom.html" 2>"$TMP/chromium.log"
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
grep -qE 'class="verdict verdict-(faster|slower|same)"' "$TMP/dom.html" || fail "verdict table: no verdict"
grep -qE '<td>run 1 <code>[^<]*</code></td><td>run 2 <code>' "$TMP/dom.html" ||
  fail "verdict table: run 2 against baseline run 1"
expect_dom "change points" '<section id="change-points">'
expect_dom "runs table" '<table class="runs">'
[ -s "$TMP/dom.html" ] || fail "empty DOM"

if [ "$failures" -ne 0 ]; then
  echo "$failures dashboard browser check(s) failed"
  exit 1
fi
echo "dashboard renders in headless Chromium with no console messages; charts and tables present"
