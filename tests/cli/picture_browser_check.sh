#!/usr/bin/env bash
# A picture (SVG or HTML report) in a real browser, the way the dashboard's browser test checks
# the dashboard: load it from disk in headless Chromium with the network off, and check that it
# parses (no XML parser error page), logs nothing to the console, refers to nothing on the
# network, has its axis titles (<text class="axis-title x|y">) with the given texts, and at least
# MIN data marks (elements of class "point..." or "bar"). Without Chromium this FAILS: a picture
# test must not pass unseen (Debian package: chromium).
# Usage: picture_browser_check.sh FILE MIN_MARKS 'X AXIS TITLE' 'Y AXIS TITLE' [TEXT...]
#   Each TEXT must also appear in the rendered DOM.
set -u
FILE=$1
MIN_MARKS=$2
shift 2
fail() { echo "FAIL $(basename "$FILE"): $*"; failures=$((failures + 1)); }
failures=0

. "$(dirname "$0")/headless_chromium.sh"
[ -s "$FILE" ] || { echo "FAIL $FILE: missing or empty"; exit 1; }
if grep -oE '(src|href)="https?://[^"]*"' "$FILE" | grep -q .; then
  fail "refers to the network: $(grep -oE '(src|href)="https?://[^"]*"' "$FILE" | head -3)"
fi
if grep -qiE '<script|@import|@font-face' "$FILE"; then fail "has a script or loads a font"; fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
headless_chromium "$WORK/profile" --dump-dom "file://$(realpath "$FILE")" >"$WORK/dom" 2>"$WORK/chromium.log"
status=$?
[ "$status" -eq 0 ] || { fail "chromium exit status $status"; tail -n 20 "$WORK/chromium.log"; }
[ -s "$WORK/dom" ] || fail "empty DOM"
grep -q 'parsererror' "$WORK/dom" && fail "the browser could not parse it: $(head -c 600 "$WORK/dom")"
if grep -q ':CONSOLE' "$WORK/chromium.log"; then
  fail "console messages while loading it:"; grep ':CONSOLE' "$WORK/chromium.log"
fi
axis_title() {  # axis_title x|y TEXT
  grep -qE "<text class=\"axis-title $1\"[^>]*>" "$WORK/dom" || { fail "no $1 axis title"; return; }
  grep -oE "<text class=\"axis-title $1\"[^>]*>[^<]*</text>" "$WORK/dom" | grep -qF ">$2</text>" ||
    fail "$1 axis title is not '$2': $(grep -oE "<text class=\"axis-title $1\"[^>]*>[^<]*</text>" "$WORK/dom" | head -3)"
}
X_TITLE=$1
Y_TITLE=$2
shift 2
axis_title x "$X_TITLE"
axis_title y "$Y_TITLE"
marks=$(grep -oE 'class="(point|bar)[ "]' "$WORK/dom" | wc -l)
[ "$marks" -ge "$MIN_MARKS" ] || fail "$marks data mark(s), expected at least $MIN_MARKS"
for text in "$@"; do
  grep -qF -- "$text" "$WORK/dom" || fail "the rendered DOM lacks '$text'"
done
[ "$failures" -eq 0 ] || exit 1
echo "ok   $(basename "$FILE") renders in headless Chromium: axes '$X_TITLE' and '$Y_TITLE', $marks data marks"
