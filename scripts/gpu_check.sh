#!/usr/bin/env bash
# The GPU check of the CUDA backend (issue 8), one prepared run on a machine with an NVIDIA GPU
# (sized for an H200 with 16 cores: under 8 minutes):
#   1. build with CUDA into build-gpu/ (-j16, only what the check runs)
#   2. the GPU unit tests (tests/cuda, CudaGpu.*)
#   3. verify all three suites on the GPU against the reference interpreter (f32 on the libraries;
#      at the end, bf16 on the generated kernels)
#   4. the GPU rungs with and without CUDA Graph capture: ResNet-50 b1/b64, Llama-3-8B all 32
#      layers bf16 prefill-512 and decode, SDXL 1024px one UNet step (bf16)
#   5. cuBLAS vs the generated GEMM at the Llama shapes (between the ResNet and Llama rungs)
#   6. a summary table, last.
# Everything is written under $OUT (default gpu-check-<date>/). Each step has a time limit; a step
# that would start after the overall budget is skipped and says so. On a machine without a usable
# GPU the script stops, with the reason, at the first step that needs one (exit 2).
set -uo pipefail
cd "$(dirname "$0")/.."

BUDGET_S=${CUVIL_GPU_CHECK_BUDGET_S:-460}   # leave headroom under 8 minutes
JOBS=${JOBS:-$(nproc)}
[ "$JOBS" -gt 16 ] && JOBS=16
BUILD=${CUVIL_GPU_BUILD_DIR:-build-gpu}
OUT=${OUT:-gpu-check-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.tsv"
: >"$SUMMARY"
START=$(date +%s)
BENCH="$BUILD/bench_suite/cuvil-bench"
# Keep results out of the user's database and the peak/kernel caches inside the run's folder
# unless the machine already has them.
export XDG_DATA_HOME="$OUT/xdg-data"

elapsed() { echo $(( $(date +%s) - START )); }
log() { echo "[gpu_check $(elapsed)s] $*"; }
record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$SUMMARY"; }  # step, status, detail

# run_step NAME LIMIT_S CMD...: runs CMD with a time limit, output to $OUT/NAME.log.
run_step() {
  local name=$1 limit=$2
  shift 2
  local left=$(( BUDGET_S - $(elapsed) ))
  if [ "$left" -le 10 ]; then
    log "SKIP $name: the ${BUDGET_S}s budget is spent"
    record "$name" skipped "budget spent"
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  log "$name (limit ${limit}s)"
  local t0=$(date +%s)
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  local dt=$(( $(date +%s) - t0 ))
  if [ $rc -eq 0 ]; then
    record "$name" ok "${dt}s"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    log "TIMEOUT $name after ${dt}s (tail of $OUT/$name.log):"
    tail -5 "$OUT/$name.log"
    record "$name" timeout "${dt}s"
  else
    log "FAIL $name (exit $rc, tail of $OUT/$name.log):"
    tail -15 "$OUT/$name.log"
    record "$name" "fail($rc)" "${dt}s"
  fi
  return $rc
}

# --- 1. build ------------------------------------------------------------------------------------
if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
  log "cmake/ninja missing: running scripts/setup.sh first"
  scripts/setup.sh || { log "setup failed"; exit 1; }
fi
if [ ! -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null; then
  log "no CUDA toolkit (/usr/local/cuda): the CUDA backend cannot be built here"
  exit 2
fi
log "configure + build into $BUILD with -j$JOBS"
if [ ! -f "$BUILD/build.ninja" ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/configure.log" 2>&1 || {
    log "configure failed (did scripts/setup.sh run?):"
    tail -20 "$OUT/configure.log"
    exit 1
  }
fi
run_step build 300 cmake --build "$BUILD" -j "$JOBS" --target cuvil-bench cuda_tests \
  cuvil-cuda-gemm-compare || { log "build failed: stopping"; exit 1; }

# --- the first step that needs a GPU --------------------------------------------------------------
if ! "$BUILD/runtime/cuvil-cuda-gemm-compare" --device-check >"$OUT/device.txt" 2>&1; then
  log "STOP: $(cat "$OUT/device.txt")"
  log "everything up to here ran; the GPU steps need a machine with an NVIDIA driver and GPU"
  record device unavailable "$(cat "$OUT/device.txt")"
  exit 2
fi
log "device: $(cat "$OUT/device.txt")"
record device ok "$(cat "$OUT/device.txt")"
command -v nvidia-smi >/dev/null && nvidia-smi >"$OUT/nvidia-smi.txt" 2>&1

# --- 2. GPU unit tests ----------------------------------------------------------------------------
run_step gpu_tests 90 "$BUILD/tests/cuda_tests" --gtest_filter='CudaGpu.*:CudaUnavailable.*'

# --- configs: the defaults (f32 on the libraries, capture whole) and variants ----------------------
CFG="$OUT/configs"
mkdir -p "$CFG"
for suite in resnet50 llama3-8b sdxl; do
  base=configs/$suite.cuda.cuvilpass
  cp "$base" "$CFG/$suite.graph.cuvilpass"
  sed 's/capture: whole/capture: off/' "$base" >"$CFG/$suite.nograph.cuvilpass"
  # bf16 GEMMs/convs on the generated kernels (the production precision).
  sed -e 's/linear_dtype: f32/linear_dtype: bf16/' -e 's/matmul_dtype: f32/matmul_dtype: bf16/' \
      -e 's/conv_dtype: f32/conv_dtype: bf16/' -e 's/conv: cudnn/conv: generated/' \
      -e 's/linear: cublas,/linear: generated,/' -e 's/matmul: cublas,/matmul: generated,/' \
      "$base" >"$CFG/$suite.bf16gen.cuvilpass"
  # bf16 on the libraries (cuBLAS/cuDNN), with and without capture.
  sed -e 's/linear_dtype: f32/linear_dtype: bf16/' -e 's/matmul_dtype: f32/matmul_dtype: bf16/' \
      -e 's/conv_dtype: f32/conv_dtype: bf16/' "$base" >"$CFG/$suite.bf16.graph.cuvilpass"
  sed 's/capture: whole/capture: off/' "$CFG/$suite.bf16.graph.cuvilpass" \
      >"$CFG/$suite.bf16.nograph.cuvilpass"
done

# --- 3-5, most important first (a step that would start past the budget is skipped) -------------
verify() {  # SUITE VARIANT
  run_step "verify_$1_$2" 60 "$BENCH" verify --suite "$1" --target cuda --config "$CFG/$1.$2.cuvilpass"
}
RUN_OPTS=(--target cuda --no-db --quiet --warmup 2 --min-samples 5 --min-time 0.3 --timeout 8
          --max-noise 5)
rung() {  # NAME SUITE RUNGS CONFIG LIMIT
  run_step "$1" "$5" "$BENCH" run --suite "$2" --rungs "$3" --config "$4" \
    --out "$OUT/$1.json" "${RUN_OPTS[@]}"
}
# 3. verify on the GPU against the reference interpreter (f32 on the libraries, capture whole)
for suite in resnet50 llama3-8b sdxl; do verify "$suite" graph; done
# 4. GPU rungs with and without CUDA Graph capture; 5. cuBLAS vs generated GEMM
rung run_resnet50_graph resnet50 b1,b64 "$CFG/resnet50.graph.cuvilpass" 60
rung run_resnet50_nograph resnet50 b1,b64 "$CFG/resnet50.nograph.cuvilpass" 60
run_step gemm_compare 60 "$BUILD/runtime/cuvil-cuda-gemm-compare" 20
rung run_llama_bf16_graph llama3-8b prefill-512-full,decode-ctx2048-full \
  "$CFG/llama3-8b.bf16.graph.cuvilpass" 150
rung run_sdxl_graph sdxl 1024px "$CFG/sdxl.bf16.graph.cuvilpass" 90
rung run_llama_bf16_nograph llama3-8b prefill-512-full,decode-ctx2048-full \
  "$CFG/llama3-8b.bf16.nograph.cuvilpass" 150
rung run_sdxl_nograph sdxl 1024px "$CFG/sdxl.bf16.nograph.cuvilpass" 90
# bf16 on the generated kernels, verified against the reference (bf16 bound)
for suite in resnet50 llama3-8b sdxl; do verify "$suite" bf16gen; done

# --- 6. summary (last) ----------------------------------------------------------------------------
log "done in $(elapsed)s; logs and JSON in $OUT/"
python3 - "$OUT" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
print("\n== cuvil GPU check summary (%s) ==" % out)
print("%-28s %-14s %s" % ("step", "status", "detail"))
for line in open(os.path.join(out, "summary.tsv")):
    step, status, detail = (line.rstrip("\n").split("\t") + ["", ""])[:3]
    print("%-28s %-14s %s" % (step, status, detail))
rows = {}
for path in sorted(glob.glob(os.path.join(out, "run_*.json"))):
    variant = os.path.basename(path)[4:-5]
    try:
        doc = json.load(open(path))
    except Exception as e:
        print("unreadable %s: %s" % (path, e)); continue
    for b in doc.get("benchmarks", []):
        if b.get("aggregate_name") != "median":
            continue
        rows.setdefault(b["run_name"], {})[variant] = b
print("\n%-34s %-22s %10s %9s %7s %9s %6s" % ("rung", "config", "median ms", "GFLOP/s", "%peak",
                                              "GB/s", "%bw"))
for name in sorted(rows):
    for variant, b in sorted(rows[name].items()):
        print("%-34s %-22s %10.3f %9.0f %7.1f %9.0f %6.1f" % (
            name, variant, b["real_time"], b.get("GFLOP/s", 0), b.get("pct_peak_flops", 0),
            b.get("GB/s", 0), b.get("pct_peak_bw", 0)))
    graph = [b for v, b in rows[name].items() if v.endswith("_graph")]
    nograph = [b for v, b in rows[name].items() if v.endswith("_nograph")]
    if graph and nograph:
        g, n = graph[0]["real_time"], nograph[0]["real_time"]
        print("%-34s capture saves %.1f%% (%.3f -> %.3f ms)" % (name, 100 * (1 - g / n), n, g))
gemm = os.path.join(out, "gemm_compare.log")
if os.path.exists(gemm):
    print("\n" + open(gemm).read().strip())
PY
