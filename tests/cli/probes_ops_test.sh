#!/usr/bin/env bash
# run --probes ops,perf:task-clock on ResNet-50 b1: a per-op table with its check line on stdout,
# per-op records covering every step exactly once in run.json, run-level counters under the
# median entry; --probes bogus is a one-line error with exit status 2 naming the valid probes.
set -euo pipefail
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BENCH" run --suite resnet50 --rungs b1 --warmup 1 --warmup-time 0 --min-samples 3 \
  --max-samples 3 --min-time 0 --timeout 10 --probes ops,perf:task-clock --probe-iterations 2 \
  --out "$TMP/run.json" --no-db --quiet >"$TMP/stdout" 2>"$TMP/stderr"
cat "$TMP/stdout"
grep -q 'top ops of resnet50/b1 by time' "$TMP/stdout"
grep -q '^ops sum .* ms vs measured .* ms (.*%)' "$TMP/stdout"
grep -q 'per-op regions use' "$TMP/stdout"
/usr/bin/python3 - "$TMP/run.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
med = [b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"][0]["cuvil"]
ops = med["ops"]
assert ops["iterations"] == 2, ops["iterations"]
recs = ops["records"]
assert [r["step"] for r in recs] == list(range(len(recs))), "steps not 0..n-1 in order"
assert len(recs) > 50, len(recs)  # ResNet-50 has more than 50 steps after fusion
for r in recs:
    for key in ("node", "op", "kernel", "lowering", "input_shapes", "output_shape", "flops",
                "bytes", "ns_per_iteration", "ns_min", "ns_median", "gflops", "pct_peak_flops",
                "gbps", "pct_peak_bw", "counters"):
        assert key in r, (key, r)
    assert r["lowering"] in ("generated", "onednn"), r["lowering"]
    assert "task-clock" in r["counters"], r["counters"]
total = sum(r["ns_per_iteration"] for r in recs)
assert abs(ops["total_ns_per_iteration"] - total) <= 1e-6 * total
measured = ops["measured_ns_per_iteration"]
assert measured > 0
# Sanity bounds, never speed assertions. The regions are disjoint parts of each probe iteration,
# so their sum stays below the probe iterations' wall time and makes up most of it. Against the
# measured median (other iterations, earlier) only a loose bound: load can change between them.
probe_wall = sum(med["probe_real_ns"]) / len(med["probe_real_ns"])
assert 0.5 * probe_wall < total <= 1.001 * probe_wall + 1e4, (total, probe_wall)
assert 0.1 * measured < total < 10 * measured, (total, measured)
tc = med["counters"]["task-clock"]
assert tc["supported"] is True, tc
assert tc["value"] > 0 and tc["scale"] >= 1.0, tc
assert len(med["probe_real_ns"]) == 2
clock = doc["context"]["cuvil"]["clock"]
assert clock["region_clock"] in ("tsc", "CLOCK_MONOTONIC_RAW"), clock
assert clock["clocks"][0]["read_overhead_ns"] > 0
print("probes run.json ok: %d records, ops sum %.1f%% of measured" % (len(recs), 100 * total / measured))
PY
# The roofline beside run.json, in a real browser: every op a point, the roof drawn.
grep -qF "wrote $TMP/run.roofline.svg" "$TMP/stdout"
"$(dirname "$0")/picture_browser_check.sh" "$TMP/run.roofline.svg" 50 \
  "arithmetic intensity (FLOP/byte, log scale)" "achieved performance (GFLOP/s, log scale)" \
  'class="roof"' 'class="point op lowering-' "this machine's measured"
# An unknown probe: one line, exit status 2, naming the flag and the valid names.
set +e
"$BENCH" run --suite resnet50 --rungs b1 --probes bogus --no-db >"$TMP/stdout" 2>"$TMP/stderr"
status=$?
set -e
[ "$status" -eq 2 ] || { echo "--probes bogus: exit $status"; cat "$TMP/stderr"; exit 1; }
[ "$(grep -c . "$TMP/stderr")" -eq 1 ] || { echo "--probes bogus: not one line"; cat "$TMP/stderr"; exit 1; }
grep -q -- "--probes: unknown probe 'bogus' (valid: ops, perf:EVENT" "$TMP/stderr"
echo "bad --probes ok: $(cat "$TMP/stderr")"
