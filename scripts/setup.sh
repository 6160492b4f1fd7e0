#!/usr/bin/env bash
# Installs every Debian package cuvil needs (idempotent; apt-get update runs once, only when
# something is missing) and builds into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build git pkg-config clang-format
  clang libclang-rt-dev         # scripts/fuzz.sh: libFuzzer and the sanitizer runtimes (tests/fuzz);
                                # libclang-rt is only recommended by clang, so named here
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libdnnl-dev libsqlite3-dev
  ocl-icd-opencl-dev            # Debian's dnnl-config.cmake finds OpenCL (only recommended: not
                                # installed under --no-install-recommends, so configure failed)
  python3-optuna python3-sklearn libxgboost-dev xgboost
  libpfm4-dev                   # perf_event counters named as users name them
  python3-psycopg2 postgresql   # one Optuna study shared through PostgreSQL (and its test)
  chromium                      # the dashboard's headless-browser test
  libonnx-dev libprotobuf-dev protobuf-compiler   # the ONNX importer (bench_suite/models/onnx)
  python3-onnx python3-numpy python3-pytest       # ONNX importer tests (tests/onnx)
  python3-torch python3-torchvision               # PyTorch exports and baselines
  pybind11-dev python3-dev      # the `cuvil` Python module (python/), built into build/python/
  libopenblas0-pthread          # Debian's PyTorch links libblas.so.3: without OpenBLAS it runs
                                # the reference BLAS (~2 GFLOP/s) and every baseline is wrong
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

exec scripts/build.sh
