#!/usr/bin/env bash
# scripts/tune_demo.sh on a count that is not a positive whole number: a one-line error naming
# the variable, exit status 2, and no output directory made (nothing tuned).
# Usage: tune_demo_bad_input_test.sh SOURCE_DIR
set -u
SOURCE_DIR=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
for case in "MAX_TRIALS=abc" "TRIALS=0" "ROUNDS=-1"; do
  name=${case%%=*}
  # No build: were the count accepted, the script would stop at the missing tools, not tune.
  err=$(env "$case" CUVIL_BUILD="$TMP/no-build" "$SOURCE_DIR/scripts/tune_demo.sh" "$TMP/demo" 2>&1 >/dev/null)
  status=$?
  if [ "$status" -ne 2 ]; then
    echo "FAIL $case: exit status $status, expected 2"; failures=$((failures + 1))
  elif [[ $err != *"$name must be a positive whole number"* ]]; then
    echo "FAIL $case: stderr lacks the variable's name: $err"; failures=$((failures + 1))
  elif [ -e "$TMP/demo" ]; then
    echo "FAIL $case: made $TMP/demo"; failures=$((failures + 1))
  else
    echo "ok   $case: $err"
  fi
done
exit $((failures > 0))
