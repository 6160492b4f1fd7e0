#!/usr/bin/env bash
# Configures (once) and builds cuvil into build/ (Release, -Wall -Wextra, CUDA detected).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${CUVIL_BUILD_DIR:-build}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release
fi
cmake --build "$BUILD_DIR" -j "$(nproc)"
