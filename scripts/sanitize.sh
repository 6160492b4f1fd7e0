#!/usr/bin/env bash
# The unit tests under AddressSanitizer and UndefinedBehaviorSanitizer (GCC): configures a
# separate build in build-asan/ (once; CPU-only, portable ISA flags, -O1 with debug info), builds
# the module test programs (tests/<module>/, CTest label unit_<module>) and runs them. Any sanitizer
# report fails its test: UBSan does not recover, ASan stops at the first error. The nightly runs
# it; a build takes about twice the normal one and the tests about three times as long.
#
#   scripts/sanitize.sh                 # every unit test
#   scripts/sanitize.sh -R 'Gemm|Conv'  # extra arguments go to ctest
#   CUVIL_SANITIZE_MODULES="ir stats" scripts/sanitize.sh   # build these test programs only
#   CUVIL_SANITIZE_BUILD_DIR=DIR        # build somewhere else than build-asan/
#
# LeakSanitizer is on. Memory that the OpenMP runtime and oneDNN keep for the process's life
# is reported by their own allocations only when a test leaks through them; suppressions, if one
# is ever needed, belong in tests/sanitizer/lsan.supp with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${CUVIL_SANITIZE_BUILD_DIR:-build-asan}
read -r -a MODULES <<<"${CUVIL_SANITIZE_MODULES:-ir stats runtime passes probes bench_suite tuner reports}"

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  flags="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_C_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCUVIL_NATIVE=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null
fi
targets=()
for m in "${MODULES[@]}"; do targets+=("${m}_tests"); done
cmake --build "$BUILD_DIR" --target "${targets[@]}" -j "$(nproc)"

# Only the programs built here: a module left out has no executable, and CTest would count its
# tests as failed ("Not Run"). Each module's tests carry the label unit_<module>.
labels=$(IFS='|'; echo "${MODULES[*]}")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ -f tests/sanitizer/lsan.supp ]; then
  export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/sanitizer/lsan.supp}
fi
cd "$BUILD_DIR"
ctest -L "^unit_($labels)\$" --output-on-failure -j "$(nproc)" "$@"
