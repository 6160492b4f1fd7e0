#!/usr/bin/env bash
# Builds if needed and runs the whole test suite with CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
cd "${CUVIL_BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)" "$@"
