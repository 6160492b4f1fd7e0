#!/usr/bin/env bash
# The nightly benchmark job: measure every suite's default CPU rungs (and the GPU rungs when this
# machine has a GPU and the build has CUDA), store the runs in the results database, compare
# each with the previous nightly of the same suite, target and machine, re-measure a suite that
# looks slower before calling it a regression, and regenerate the dashboard.
#
# Usage: scripts/nightly.sh [--db PATH] [--site DIR] [--work DIR] [--quick] [--max-slowdown PCT]
# Options override the environment:
#   CUVIL_BENCH              the cuvil-bench binary (default: build/bench_suite/cuvil-bench)
#   NIGHTLY_DB               results database (default: cuvil's own, $XDG_DATA_HOME/cuvil/results.db
#                            or ~/.local/share/cuvil/results.db)
#   NIGHTLY_WORK             run.json files, flame graphs and logs (default: nightly/ beside the DB)
#   NIGHTLY_SITE             the dashboard's folder (default: $NIGHTLY_WORK/site)
#   NIGHTLY_RUNGS            only these suites and rungs, e.g. "resnet50=b1,b4 sdxl=256px"
#                            (default: every suite, its default CPU rungs)
#   NIGHTLY_QUICK=1          few samples and no minimum time (tests, smoke checks)
#   NIGHTLY_MAX_SLOWDOWN_PCT a significant slowdown beyond this is a regression (default 3)
#   NIGHTLY_CONFIRM_ROUNDS   a suspected regression is re-measured in this many rounds of old
#                            build and new build, ABBA (default 8); `cuvil-bench confirm`
#                            decides on them. The job keeps each commit's cuvil-bench in
#                            $NIGHTLY_WORK/bin/ (the newest 10) so the old side can be re-run.
#   NIGHTLY_RUN_ARGS         extra arguments for every `cuvil-bench run` (e.g. --threads 8)
#   NIGHTLY_PROBES           `run --probes` of stored CPU runs, for the flame graphs (default:
#                            ops; empty: none). Probes observe extra iterations after the measured
#                            ones.
#   NIGHTLY_CHECKS           after the measurements, any of "sanitize" (scripts/sanitize.sh: the
#                            unit tests under ASan and UBSan) and "fuzz" (scripts/fuzz.sh with
#                            NIGHTLY_FUZZ_RUNS, default 1000000, per reader); a failing check is a
#                            job failure (exit 2). Default: none (each takes tens of minutes).
# Exit status: 0 no confirmed regression, 1 a confirmed regression, 2 the job itself failed
# (a run, a comparison or the dashboard); every suite is still measured after a failure.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=${CUVIL_BENCH:-$ROOT/build/bench_suite/cuvil-bench}
DB=${NIGHTLY_DB:-${XDG_DATA_HOME:-${HOME:-.}/.local/share}/cuvil/results.db}
WORK=${NIGHTLY_WORK:-}
SITE=${NIGHTLY_SITE:-}
QUICK=${NIGHTLY_QUICK:-0}
MAX_SLOWDOWN=${NIGHTLY_MAX_SLOWDOWN_PCT:-3}
CONFIRM_ROUNDS=${NIGHTLY_CONFIRM_ROUNDS:-8}
KEEP_BUILDS=10
PROBES=${NIGHTLY_PROBES-ops}
read -r -a EXTRA_RUN_ARGS <<<"${NIGHTLY_RUN_ARGS:-}"

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --db) DB=$2; shift 2 ;;
    --site) SITE=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --max-slowdown) MAX_SLOWDOWN=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "nightly: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
WORK=${WORK:-$(dirname "$DB")/nightly}
SITE=${SITE:-$WORK/site}
# Absolute paths: the job runs from the repository root.
DB=$(realpath -m "$DB") WORK=$(realpath -m "$WORK") SITE=$(realpath -m "$SITE")
[[ $BENCH == */* ]] && BENCH=$(realpath -m "$BENCH")

log() { echo "nightly: $*"; }
if [ ! -x "$BENCH" ]; then
  echo "nightly: no cuvil-bench at $BENCH (build it with scripts/build.sh, or set CUVIL_BENCH)" >&2
  exit 2
fi
mkdir -p "$WORK" "$(dirname "$DB")" || exit 2
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
cd "$ROOT" || exit 2  # the default configs and ladders are found from here

MEASURE_ARGS=()
if [ "$QUICK" = 1 ]; then
  MEASURE_ARGS=(--warmup 0 --warmup-time 0 --min-samples 5 --max-samples 7 --min-time 0 --timeout 10)
fi
# Per-op records make the flame graphs; a cuvil-bench without probes just has none.
STORE_ARGS=()
if [ -n "$PROBES" ] && "$BENCH" run --help 2>/dev/null | grep -q -- '--probes'; then
  STORE_ARGS=(--probes "$PROBES")
  [ "$QUICK" = 1 ] && STORE_ARGS+=(--probe-iterations 3)
fi

failed=0
regressions=()
unconfirmed=()

# Suites and their rungs, one "suite rungs" line each (rungs empty: the default ladder).
plan() {
  if [ -n "${NIGHTLY_RUNGS:-}" ]; then
    for item in $NIGHTLY_RUNGS; do
      echo "${item%%=*} $([ "${item#*=}" != "$item" ] && echo "${item#*=}")"
    done
  else
    # `cuvil-bench list`: suite lines are indented two spaces, their rungs further.
    "$BENCH" list | awk '/^Suites/ { on = 1; next } /^$/ { on = 0 } on && /^  [^ ]/ { print $1 }'
  fi
}

# The id printed by `cuvil-bench run` ("stored run N in PATH").
stored_id() { sed -n 's/^stored run \([0-9][0-9]*\) in .*/\1/p' "$1" | tail -n 1; }

# The newest run before $2 of suite $1 with the same target, rungs, config hash and machine, from
# `cuvil-bench history` (columns: id date commit suite target threads rungs config machine...).
previous_run() {
  "$BENCH" history --db "$DB" --suite "$1" --limit 0 | awk -v id="$2" '
    NR == 1 { next }
    { key = $5 " " $7 " " $8; machine = ""; for (i = 9; i <= NF; ++i) machine = machine " " $i; key = key machine }
    $1 == id { want = key; next }
    want != "" && $1 < id && key == want { print $1; exit }'
}

# measure SUITE TARGET RUNGS OUT.json STORE(yes|no): one `cuvil-bench run`; prints its log.
measure() {
  local suite=$1 target=$2 rungs=$3 out=$4 store=$5
  local args=(run --suite "$suite" --target "$target" --out "$out" -q "${MEASURE_ARGS[@]}"
    "${EXTRA_RUN_ARGS[@]}")
  [ -n "$rungs" ] && args+=(--rungs "$rungs")
  if [ "$store" = yes ]; then args+=(--db "$DB"); else args+=(--no-db); fi
  # Per-op probes observe the CPU executor's steps; GPU runs go without.
  [ "$store" = yes ] && [ "$target" = cpu ] && args+=("${STORE_ARGS[@]}")
  "$BENCH" "${args[@]}"
}

# The commit stored with run $2 of suite $1 (history's third column).
commit_of() {
  "$BENCH" history --db "$DB" --suite "$1" --limit 0 | awk -v id="$2" 'NR > 1 && $1 == id { print $3; exit }'
}

# Keeps this cuvil-bench as the build of commit $1, for re-measuring it later; the newest
# $KEEP_BUILDS stay.
keep_build() {
  local commit=$1
  [ -n "$commit" ] && [ "$commit" != unknown ] || return 0
  mkdir -p "$WORK/bin"
  [ -x "$WORK/bin/cuvil-bench-$commit" ] || cp "$BENCH" "$WORK/bin/cuvil-bench-$commit" || return 0
  touch "$WORK/bin/cuvil-bench-$commit"
  ls -t "$WORK/bin"/cuvil-bench-* 2>/dev/null | tail -n +$((KEEP_BUILDS + 1)) | xargs -r rm -f
}

# nightly_suite SUITE TARGET RUNGS: measure, store, flame graph, compare, confirm.
nightly_suite() {
  local suite=$1 target=$2 rungs=$3
  local name="$suite-$target" json="$WORK/$STAMP-$suite-$target.json" out="$WORK/$STAMP-$suite-$target.log"
  log "measuring $suite ($target, rungs: ${rungs:-default})"
  if ! measure "$suite" "$target" "$rungs" "$json" yes >"$out" 2>&1; then
    # A build without the toolkit, or a driver it cannot use, says why in this form.
    if [ "$target" = cuda ] && grep -q "error: --target cuda: " "$out"; then
      log "skipping the GPU rungs of $suite: $(grep -m1 'error: --target cuda: ' "$out" | sed 's/.*error: //')"
      return 0
    fi
    log "FAILED: run of $name (log: $out)"; tail -n 5 "$out"; failed=1; return 0
  fi
  local id
  id=$(stored_id "$out")
  [ -n "$id" ] || { log "FAILED: $name stored no run (log: $out)"; failed=1; return 0; }
  keep_build "$(commit_of "$suite" "$id")"
  # A flame graph beside the run.json, when the run recorded per-op timings; optional.
  if ! "$BENCH" report flame "$json" -o "${json%.json}" >>"$out" 2>&1; then
    log "no flame graph for $name (see $out)"
  fi
  local prev
  prev=$(previous_run "$suite" "$id")
  if [ -z "$prev" ]; then
    log "$name: run $id stored; no previous nightly of it on this machine to compare with"
    return 0
  fi
  "$BENCH" compare "$prev" "$id" --db "$DB" --fail-on-regression "$MAX_SLOWDOWN" >"$WORK/$STAMP-$name.compare.txt" 2>&1
  local status=$?
  cat "$WORK/$STAMP-$name.compare.txt"
  case $status in
    0) log "$name: run $id against run $prev: no regression beyond $MAX_SLOWDOWN%"; return 0 ;;
    1) ;;
    *) log "FAILED: comparing run $prev with run $id"; failed=1; return 0 ;;
  esac
  # Suspected: re-measure the old build and the new one in alternation (old, new, old, new,
  # ...), so that the machine's drift touches both alike, and let `cuvil-bench confirm` decide.
  local old_commit new_commit old_bench
  old_commit=$(commit_of "$suite" "$prev")
  new_commit=$(commit_of "$suite" "$id")
  if [ "$old_commit" = "$new_commit" ]; then
    old_bench=$BENCH  # the same code (a config or machine change would have another series)
  elif [ -n "$old_commit" ] && [ -x "$WORK/bin/cuvil-bench-$old_commit" ]; then
    old_bench=$WORK/bin/cuvil-bench-$old_commit
  else
    log "$name: unconfirmed: no kept build of commit ${old_commit:-?} (run $prev) to re-measure the old side"
    unconfirmed+=("$name: runs $prev -> $id: no kept build of the old side")
    return 0
  fi
  log "$name: suspected regression against run $prev; re-measuring old ($old_commit) and new ($new_commit) in $CONFIRM_ROUNDS alternating rounds"
  local olds=() news=() round
  for round in $(seq 1 "$CONFIRM_ROUNDS"); do
    local a="$WORK/$STAMP-$name.old$round.json" b="$WORK/$STAMP-$name.new$round.json"
    # ABBA: odd rounds old first, even rounds new first, so that whatever favours the second
    # of two back-to-back runs (scripts/confirm_aa.sh measured 3-6%) favours neither side.
    local order=(old new)
    [ $((round % 2)) -eq 0 ] && order=(new old)
    local side
    for side in "${order[@]}"; do
      if [ "$side" = old ]; then
        if ! BENCH=$old_bench measure "$suite" "$target" "$rungs" "$a" no >>"$out" 2>&1; then
          log "$name: unconfirmed: the old build failed to re-measure (log: $out)"
          unconfirmed+=("$name: runs $prev -> $id: the old build could not be re-measured")
          return 0
        fi
      elif ! measure "$suite" "$target" "$rungs" "$b" no >>"$out" 2>&1; then
        log "FAILED: re-measuring $name (log: $out)"; failed=1; return 0
      fi
    done
    olds+=("$a"); news+=("$b")
  done
  local confirm_txt="$WORK/$STAMP-$name.confirm.txt"
  "$BENCH" confirm --old "$(IFS=,; echo "${olds[*]}")" --new "$(IFS=,; echo "${news[*]}")" \
    --min-effect "$MAX_SLOWDOWN" >"$confirm_txt" 2>&1
  status=$?
  cat "$confirm_txt"
  case $status in
    0) if grep -q "unconfirmed: noisy" "$confirm_txt"; then
         log "$name: unconfirmed: noisy (the rounds of a side disagree as much as the slowdown)"
         unconfirmed+=("$name: runs $prev -> $id: noisy")
       else
         log "$name: not confirmed: the alternating re-measurement shows no slowdown beyond $MAX_SLOWDOWN% (noise)"
       fi ;;
    1) log "$name: CONFIRMED regression against run $prev (old and new re-measured in alternation)"
       regressions+=("$name: runs $prev -> $id, $(grep -m1 ': confirmed:' "$confirm_txt" | tr -s ' ')") ;;
    *) log "FAILED: confirming $name"; failed=1 ;;
  esac
}

while read -r suite rungs; do
  [ -n "$suite" ] || continue
  nightly_suite "$suite" cpu "$rungs"
done < <(plan)

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  while read -r suite rungs; do
    [ -n "$suite" ] || continue
    nightly_suite "$suite" cuda "${rungs:-all}"
  done < <(plan)
else
  log "no GPU found (nvidia-smi -L): skipping the GPU rungs"
fi

if "$BENCH" report dashboard --db "$DB" -o "$SITE" --flame-dir "$WORK"; then
  log "dashboard: $SITE/index.html"
else
  log "FAILED: the dashboard"; failed=1
fi

# The correctness checks too slow for every commit's CI.
for check in ${NIGHTLY_CHECKS:-}; do
  case $check in
    sanitize) cmd=("$ROOT/scripts/sanitize.sh") ;;
    fuzz) cmd=("$ROOT/scripts/fuzz.sh" "${NIGHTLY_FUZZ_RUNS:-1000000}") ;;
    *) log "FAILED: unknown NIGHTLY_CHECKS entry '$check' (sanitize, fuzz)"; failed=1; continue ;;
  esac
  log "check $check: ${cmd[*]}"
  if "${cmd[@]}" >"$WORK/$STAMP-check-$check.log" 2>&1; then
    log "check $check: passed"
  else
    log "FAILED: check $check (log: $WORK/$STAMP-check-$check.log)"
    tail -n 20 "$WORK/$STAMP-check-$check.log"
    failed=1
  fi
done

if [ ${#unconfirmed[@]} -gt 0 ]; then
  log "${#unconfirmed[@]} suspected regression(s) that could not be confirmed or refuted:"
  printf '  %s\n' "${unconfirmed[@]}"
fi
if [ ${#regressions[@]} -gt 0 ]; then
  log "${#regressions[@]} confirmed regression(s):"
  printf '  %s\n' "${regressions[@]}"
  exit 1
fi
[ "$failed" -eq 0 ] || { log "finished with failures (see above)"; exit 2; }
log "no confirmed regression"
