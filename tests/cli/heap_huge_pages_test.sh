#!/usr/bin/env bash
# A command that builds a plan re-executes itself with glibc.malloc.hugetlb=1: its heap (the
# weights) is then backed by transparent huge pages, and the run JSON says so. Off with
# CUVIL_HEAP_HUGE_PAGES=0 (no huge pages at all); a user's own glibc.malloc.hugetlb is kept.
set -uo pipefail
BENCH=$(realpath "$1")
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$TMP"
FAST=(run --suite resnet50 --rungs b1 --no-db --quiet --warmup 0 --warmup-time 0 --min-samples 10
      --max-samples 10 --min-time 0)

mode=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)

setting() {  # setting FILE: the run JSON's context.cuvil.heap_huge_pages
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["context"]["cuvil"]["heap_huge_pages"])' "$1"
}

# run_sampled NAME OUT [VAR=VALUE...]: runs FAST with the variables set; $huge is then the
# largest AnonHugePages (kB) seen in the process while it ran (the PID survives the
# re-execution).
run_sampled() {
  local name=$1 out=$2 pid v
  shift 2
  env "$@" "$BENCH" "${FAST[@]}" -o "$out" >"$TMP/stdout" 2>"$TMP/stderr" &
  pid=$!
  huge=0
  while kill -0 "$pid" 2>/dev/null; do
    v=$(awk '/^AnonHugePages/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null)
    [ -n "$v" ] && [ "$v" -gt "$huge" ] && huge=$v
    sleep 0.02
  done
  wait "$pid" || { fail "$name: exit status $?"; cat "$TMP/stderr"; }
}

if [ -z "$mode" ] || [ "$mode" = never ]; then
  run_sampled unavailable none.json
  got=$(setting none.json)
  case "$got" in
    off*) echo "ok   THP '$mode' here: $got" ;;
    *) fail "THP '$mode': heap_huge_pages is '$got'" ;;
  esac
else
  run_sampled default on.json
  got=$(setting on.json)
  [ "$got" = "glibc.malloc.hugetlb=1 (cuvil-bench)" ] && echo "ok   default: $got" ||
    fail "default: heap_huge_pages is '$got'"
  [ "$huge" -gt 0 ] && echo "ok   default: up to $huge kB on huge pages" ||
    fail "default: no AnonHugePages seen in the running process"

  if [ "$mode" = madvise ]; then  # under 'always' the kernel gives huge pages regardless
    run_sampled switched_off off.json CUVIL_HEAP_HUGE_PAGES=0
    got=$(setting off.json)
    [ "$got" = "off (CUVIL_HEAP_HUGE_PAGES=0)" ] && echo "ok   off: $got" ||
      fail "off: heap_huge_pages is '$got'"
    [ "$huge" -eq 0 ] && echo "ok   off: no huge pages" || fail "off: $huge kB on huge pages"
  fi

  run_sampled users_choice user.json GLIBC_TUNABLES=glibc.malloc.hugetlb=0
  got=$(setting user.json)
  [ "$got" = "glibc.malloc.hugetlb=0 (set by the user)" ] && echo "ok   user: $got" ||
    fail "users_choice: heap_huge_pages is '$got'"
fi

# A malformed switch is refused before anything runs: one line naming the variable, exit 2.
if CUVIL_HEAP_HUGE_PAGES=off run_bench bad_switch 2 "${FAST[@]}"; then
  expect_err bad_switch "CUVIL_HEAP_HUGE_PAGES: expected 0 (off) or 1 (on), got 'off'"
fi

finish "heap huge pages checks failed" "heap huge pages test ok"
