#!/usr/bin/env bash
# How often the nightly's confirmation step is wrong, measured (issue 16). PAIRS times each:
#   A/A  the same pipeline as both sides: every "confirmed" is a false alarm (expected: at most
#        one in twenty);
#   A/B  the default pipeline against the same without the passes --drop names (default
#        fuse-elementwise), a real slowdown (expected: confirmed nearly every time).
# A pair is what the nightly does on a suspected regression: ROUNDS rounds of old and new measured
# in alternation (separate processes; --order abba, the nightly's, puts new first in even rounds,
# --order ab always old first), then `cuvil-bench confirm --min-effect MIN_EFFECT`.
# Prints one line per pair and a summary; with --load N, N busy-looping processes run beside the
# measurements (the shared, noisy machine the verdicts must survive).
#
# Usage: scripts/confirm_aa.sh [--pairs N] [--rounds R] [--load CPUS] [--suite S] [--rungs R]
#                              [--min-effect PCT] [--order abba|ab] [--only aa|ab] [--quick]
#                              [--drop PASS[,PASS...]] [--work DIR]
#   CUVIL_BENCH  the cuvil-bench binary (default: build/bench_suite/cuvil-bench)
# Exit status: 0 when the false alarms stay at most PAIRS/20 (rounded up), 1 otherwise, 2 when
# a measurement failed.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BENCH=${CUVIL_BENCH:-$ROOT/build/bench_suite/cuvil-bench}
PAIRS=20
ROUNDS=8  # the nightly's NIGHTLY_CONFIRM_ROUNDS default
LOAD=0
SUITE=resnet50
RUNGS=b1
MIN_EFFECT=3  # the nightly's default --max-slowdown
QUICK=0
ORDER=abba
ONLY=
DROP=fuse-elementwise
WORK=

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case $1 in
    --pairs) PAIRS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --load) LOAD=$2; shift 2 ;;
    --suite) SUITE=$2; shift 2 ;;
    --rungs) RUNGS=$2; shift 2 ;;
    --min-effect) MIN_EFFECT=$2; shift 2 ;;
    --order) ORDER=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --drop) DROP=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --work) WORK=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "confirm_aa: unknown argument '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
case $ORDER in abba|ab) ;; *) echo "confirm_aa: --order is abba or ab" >&2; exit 2 ;; esac
[ -x "$BENCH" ] || { echo "confirm_aa: no cuvil-bench at $BENCH (scripts/build.sh builds it)" >&2; exit 2; }
WORK_IS_TEMP=
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d)
  WORK_IS_TEMP=1
fi
mkdir -p "$WORK"
spinners=()
stop_spinners() { [ ${#spinners[@]} -eq 0 ] || kill "${spinners[@]}" 2>/dev/null; }
trap 'stop_spinners; [ -z "$WORK_IS_TEMP" ] || rm -rf "$WORK"' EXIT

# The slower side of A/B: the suite's default file without the --drop passes.
default_config=$ROOT/configs/$SUITE.cpu.cuvilpass
slow_config=$WORK/$SUITE.without-dropped.cuvilpass
/usr/bin/python3 - "$default_config" "$slow_config" "$DROP" <<'PY' || exit 2
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
drop = set(sys.argv[3].split(","))
missing = drop - {p["name"] for p in doc["passes"]}
if missing:
    sys.exit("confirm_aa: --drop names passes the default pipeline lacks: " + ", ".join(sorted(missing)))
doc["passes"] = [p for p in doc["passes"] if p["name"] not in drop]
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
PY

for _ in $(seq 1 "$LOAD"); do
  bash -c 'while :; do :; done' &
  spinners+=($!)
done

STOP=()
[ "$QUICK" = 1 ] && STOP=(--warmup 0 --warmup-time 0 --min-samples 5 --max-samples 7 --min-time 0 --timeout 10)
measure() {  # measure CONFIG OUT
  "$BENCH" run --suite "$SUITE" --rungs "$RUNGS" --config "$1" --no-db -q "${STOP[@]}" \
    --out "$2" >"$2.log" 2>&1 || { echo "confirm_aa: a run failed (log: $2.log)" >&2; exit 2; }
}

# pair KIND INDEX NEW_CONFIG: one verdict, "confirmed", "noisy" or "same", and the pooled ratio.
pair() {
  local kind=$1 index=$2 new_config=$3 olds=() news=() round
  local tag=${kind//\//}  # A/A -> AA in file names
  for round in $(seq 1 "$ROUNDS"); do
    local a="$WORK/$tag$index.old$round.json" b="$WORK/$tag$index.new$round.json"
    if [ "$ORDER" = abba ] && [ $((round % 2)) -eq 0 ]; then
      measure "$new_config" "$b"
      measure "$default_config" "$a"
    else
      measure "$default_config" "$a"
      measure "$new_config" "$b"
    fi
    olds+=("$a"); news+=("$b")
  done
  local txt="$WORK/$tag$index.confirm.txt"
  "$BENCH" confirm --old "$(IFS=,; echo "${olds[*]}")" --new "$(IFS=,; echo "${news[*]}")" \
    --min-effect "$MIN_EFFECT" >"$txt" 2>&1
  local status=$? verdict
  case $status in
    1) verdict=confirmed ;;
    0) if grep -q "unconfirmed: noisy" "$txt"; then verdict=noisy
       elif grep -q "not enough data" "$txt"; then verdict=not-enough-data
       else verdict=same; fi ;;
    *) echo "confirm_aa: confirm failed ($txt)" >&2; cat "$txt" >&2; exit 2 ;;
  esac
  local ratio
  ratio=$(/usr/bin/python3 - "${olds[@]}" -- "${news[@]}" <<'PY'
import json, statistics, sys
args = sys.argv[1:]
cut = args.index("--")
def pooled(files):
    samples = []
    for f in files:
        for b in json.load(open(f))["benchmarks"]:
            if b.get("run_type") == "iteration":
                samples.append(b["real_time"])
    return statistics.median(samples)
print("%.3f" % (pooled(args[cut + 1:]) / pooled(args[:cut])))
PY
)
  printf '%s %2d: %-15s new/old pooled median %s\n' "$kind" "$index" "$verdict" "$ratio"
  echo "$kind $verdict $ratio" >>"$WORK/verdicts.txt"
}

: >"$WORK/verdicts.txt"
echo "confirm_aa: $SUITE/$RUNGS, $PAIRS pairs, $ROUNDS rounds a side ($ORDER), --min-effect $MIN_EFFECT%," \
  "$LOAD busy-looping processes beside; cpu: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)," \
  "$(nproc) CPUs; commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ "$ONLY" != ab ]; then
  for i in $(seq 1 "$PAIRS"); do pair A/A "$i" "$default_config"; done
fi
if [ "$ONLY" != aa ]; then
  for i in $(seq 1 "$PAIRS"); do pair A/B "$i" "$slow_config"; done
fi

count() { awk -v k="$1" -v v="$2" '$1 == k && $2 == v' "$WORK/verdicts.txt" | wc -l; }
median_ratio() { awk -v k="$1" '$1 == k { print $3 }' "$WORK/verdicts.txt" | sort -n |
  awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
false_alarms=$(count A/A confirmed)
echo "A/A (same pipeline): $false_alarms confirmed of $PAIRS (false alarms), $(count A/A noisy) noisy," \
  "median ratio $(median_ratio A/A)"
echo "A/B (without $DROP): $(count A/B confirmed) confirmed of $PAIRS, $(count A/B noisy) noisy," \
  "median ratio $(median_ratio A/B)"
allowed=$(((PAIRS + 19) / 20))
[ "$false_alarms" -le "$allowed" ]
