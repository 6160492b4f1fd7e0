# Sourced by the CLI tests (tests/cli/*.sh) after `set -u` and their arguments:
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# It gives a scratch folder $TMP, removed on exit (made writable first: a test may leave read-only
# folders behind); `fail MESSAGE`, which counts a failure and goes on; `finish FAILED PASSED`, the
# summary: "N FAILED" and exit 1 after any failure, else PASSED; and, for tests of cuvil-bench
# ($BENCH), `run_bench NAME STATUS ARGS...` with its stdout and stderr in $TMP/stdout and
# $TMP/stderr, and `expect_out` / `expect_err NAME TEXT` on them.
TMP=$(mktemp -d)
trap 'chmod -R u+w "$TMP" 2>/dev/null; rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

finish() {  # finish FAILED PASSED
  if [ "$failures" -ne 0 ]; then
    echo "$failures $1"
    exit 1
  fi
  echo "$2"
}

run_bench() {  # run_bench NAME EXPECTED_STATUS ARGS...
  local name=$1 want=$2
  shift 2
  "$BENCH" "$@" >"$TMP/stdout" 2>"$TMP/stderr"
  local status=$?
  if [ "$status" -ne "$want" ]; then
    fail "$name: exit status $status, expected $want"; cat "$TMP/stdout" "$TMP/stderr"
    return 1
  fi
  echo "ok   $name"
}
expect_out() { grep -qF -- "$2" "$TMP/stdout" || { fail "$1: stdout lacks '$2'"; cat "$TMP/stdout"; }; }
expect_err() { grep -qF -- "$2" "$TMP/stderr" || { fail "$1: stderr lacks '$2'"; cat "$TMP/stderr"; }; }
