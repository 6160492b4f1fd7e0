#!/usr/bin/env bash
# Must-fail inputs of the report views, the nightly job and its A/A check (confirm_aa.sh): each exits 2 with a one-line error
# naming what was wrong, and writes nothing.
set -u
BENCH=$1
NIGHTLY=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
expect_exit2() {  # expect_exit2 NAME PATTERN -- COMMAND...
  local name=$1 pattern=$2
  shift 3
  "$@" > "$TMP/out" 2>&1
  local rc=$?
  if [ $rc -ne 2 ] || ! grep -q -- "$pattern" "$TMP/out"; then
    echo "FAIL $name: exit $rc, expected 2 and '$pattern' in:"; cat "$TMP/out"
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}
expect_exit2 "dashboard: missing database" "no results database here" -- \
  "$BENCH" report dashboard --db "$TMP/missing.db" -o "$TMP/site"
[ -e "$TMP/site" ] && { echo "FAIL dashboard wrote a site for a missing database"; failures=$((failures + 1)); }
expect_exit2 "nightly: unknown option" "unknown option '--bogus'" -- "$NIGHTLY" --bogus
CONFIRM_AA=$(dirname "$NIGHTLY")/confirm_aa.sh
expect_exit2 "confirm_aa: --drop of a pass the pipeline lacks" "lacks: no-such-pass" -- \
  env CUVIL_BENCH="$BENCH" "$CONFIRM_AA" --drop fuse-elementwise,no-such-pass --work "$TMP/aa"
expect_exit2 "confirm_aa: unknown argument" "unknown argument '--bogus'" -- \
  env CUVIL_BENCH="$BENCH" "$CONFIRM_AA" --bogus
exit $((failures > 0))
