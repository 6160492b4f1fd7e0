#!/usr/bin/env bash
# A short real run of ResNet-50 b1 writes Google Benchmark JSON with one entry per sample, the
# environment in the context, and raw samples plus the stopping verdict under "cuvil"; a bad
# --cpus list is a one-line error with exit status 2.
set -euo pipefail
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BENCH" run --suite resnet50 --rungs b1 --warmup 0 --warmup-time 0 --min-samples 2 \
  --max-samples 2 --min-time 0 --timeout 5 --cpus 0 --out "$TMP/run.json" \
  >"$TMP/stdout" 2>"$TMP/stderr"
cat "$TMP/stdout"
grep -q 'resnet50/b1' "$TMP/stdout"
# Not a terminal: no progress line redrawn with carriage returns.
if grep -q $'\r' "$TMP/stderr"; then echo "progress written to a non-terminal"; exit 1; fi
/usr/bin/python3 - "$TMP/run.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
ctx = doc["context"]
for key, kind in [("date", str), ("host_name", str), ("executable", str), ("num_cpus", int),
                  ("mhz_per_cpu", int), ("cpu_scaling_enabled", bool), ("caches", list),
                  ("load_avg", list), ("library_build_type", str)]:
    assert isinstance(ctx[key], kind), (key, ctx[key])
cu = ctx["cuvil"]
assert cu["pinned_cpus"] == [0], cu["pinned_cpus"]
assert cu["threads"] == 1, cu["threads"]  # --cpus 0 without --threads: one thread
for key in ("git_commit", "compiler", "compiler_flags", "cpu_model", "config_yaml", "config_hash",
            "scaling_governor", "cuda_driver", "openmp_wait_policy", "machine_peak", "stopping_rule"):
    assert key in cu, key
assert "passes:" in cu["config_yaml"]
its = [b for b in doc["benchmarks"] if b["run_type"] == "iteration"]
assert len(its) == 2, its
for b in its:
    for key, kind in [("name", str), ("run_name", str), ("run_type", str), ("repetitions", int),
                      ("repetition_index", int), ("threads", int), ("iterations", int),
                      ("real_time", float), ("cpu_time", float), ("time_unit", str)]:
        assert isinstance(b[key], kind), (key, b[key])
aggs = {b["aggregate_name"]: b for b in doc["benchmarks"] if b["run_type"] == "aggregate"}
for name in ("mean", "median", "stddev", "cv", "p99"):
    assert name in aggs, name
assert aggs["cv"]["aggregate_unit"] == "percentage"
med = aggs["median"]
assert med["real_time"] > 0 and med["time_unit"] == "ms"
raw = med["cuvil"]
assert len(raw["real_ns"]) == 2
assert raw["declared_flops"] > 8e9, raw["declared_flops"]  # 4.09 GMAC
assert isinstance(raw["noisy"], bool)
assert raw["stop_reason"] in ("converged", "max_samples"), raw["stop_reason"]
assert raw["peak_rss_bytes"] > 0 and raw["arena_bytes"] > 0
print("run.json ok")
PY
# The old flag names still work.
"$BENCH" run --suite resnet50 --rungs b1 --warmup 0 --min-repetitions 1 --max-repetitions 1 \
  --min-time 0 --quiet >/dev/null 2>&1
# A CPU this process cannot use: one line, exit status 2.
set +e
"$BENCH" run --suite resnet50 --rungs b1 --cpus 99999 >"$TMP/stdout" 2>"$TMP/stderr"
status=$?
set -e
[ "$status" -eq 2 ] || { echo "--cpus 99999: exit $status"; exit 1; }
[ "$(grep -c . "$TMP/stderr")" -eq 1 ] || { echo "--cpus 99999: not one line"; cat "$TMP/stderr"; exit 1; }
grep -q "CPU 99999 is not available" "$TMP/stderr"
echo "bad --cpus ok: $(cat "$TMP/stderr")"
