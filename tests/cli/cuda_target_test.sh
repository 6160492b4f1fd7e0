#!/usr/bin/env bash
# cuvil-bench --target cuda end to end. Without a usable GPU: run and verify exit 2 with the one
# line saying why (no driver / no device); with one: verify passes. Either way the binary links no
# driver nor any CUDA library, and a CUDA config naming a CPU pass is a FILE:LINE: FIELD error.
# Usage: cuda_target_test.sh path/to/cuvil-bench
set -u
BENCH=$1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export XDG_DATA_HOME="$TMP/xdg"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
ok() { echo "ok   $*"; }

if ldd "$BENCH" | grep -q 'libcuda\.so'; then
  fail "cuvil-bench links the driver: $(ldd "$BENCH" | grep libcuda)"
else
  ok "no libcuda dependency"
fi
# The CUDA runtime, cuDNN, cuBLAS, cuBLASLt and NVRTC are loaded on first use
# (runtime/cuda/gpu/lazy_libraries.cc): linked, cuBLASLt alone added 0.45 s to every start of
# every program, and no program started on a machine without them.
if readelf -d "$BENCH" | grep NEEDED | grep -qE 'libcudart|libcudnn|libcublas|libnvrtc'; then
  fail "cuvil-bench links what it should load on first use: $(readelf -d "$BENCH" | grep NEEDED | grep -oE 'lib(cudart|cudnn|cublas|nvrtc)[^]]*' | tr '\n' ' ')"
else
  ok "no CUDA runtime, cuDNN, cuBLAS, cuBLASLt or NVRTC dependency"
fi

"$BENCH" verify --suite resnet50 --target cuda >"$TMP/out" 2>"$TMP/err"
status=$?
if [ $status -eq 2 ]; then
  if grep -qE '^cuvil-bench: error: --target cuda: (no CUDA driver|no CUDA device|the CUDA driver|this build has no CUDA toolkit)' "$TMP/err" &&
     [ "$(grep -c . "$TMP/err")" -eq 1 ]; then
    ok "verify without a GPU: $(cat "$TMP/err")"
  else
    fail "verify without a GPU: unexpected message:"; cat "$TMP/err"
  fi
  "$BENCH" run --suite resnet50 --target cuda --rungs b1 --no-db >"$TMP/out" 2>"$TMP/err"
  if [ $? -eq 2 ] && grep -q -- '--target cuda: ' "$TMP/err"; then
    ok "run without a GPU: $(cat "$TMP/err")"
  else
    fail "run without a GPU:"; cat "$TMP/err"
  fi
elif [ $status -eq 0 ]; then
  ok "verify on the GPU passed"
else
  fail "verify --target cuda exited $status:"; cat "$TMP/out" "$TMP/err"
fi

cat >"$TMP/wrong_target.cuvilpass" <<'YAML'
cuvil_pass_version: 1
target: cuda
passes:
  - name: memory-plan
  - name: gemm-tiling
YAML
"$BENCH" verify --suite resnet50 --config "$TMP/wrong_target.cuvilpass" >"$TMP/out" 2>"$TMP/err"
status=$?
if [ $status -eq 2 ] && grep -qF "wrong_target.cuvilpass:5: passes[1].name: pass 'gemm-tiling' does not apply to target cuda" "$TMP/err"; then
  ok "a CPU pass in a CUDA config: $(cat "$TMP/err")"
else
  fail "a CPU pass in a CUDA config (exit $status):"; cat "$TMP/err"
fi

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
