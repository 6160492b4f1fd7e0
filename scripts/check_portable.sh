#!/usr/bin/env bash
# Compiles, as the portable build does (-DCUVIL_NATIVE=OFF: no -march=native), every source that
# compiles code for an instruction set beyond the build's -march (those that include
# runtime/cpu/target_avx2_begin.h, target_avx512_begin.h or target_attributes.h, or carry a target
# attribute), and fails on any error or warning. With -march=native the whole file has AVX-512
# and FMA, so a target attribute that lacks what an inlined helper needs builds there and fails
# only here.
#
#   scripts/check_portable.sh [BUILD_DIR]     # default build/portable; configured once
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build/portable}
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUVIL_NATIVE=OFF \
    -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null
fi
list_sources() {  # the project's .cc files outside tests/
  git ls-files '*.cc' 2>/dev/null || find . -name '*.cc' -not -path './build*' | sed 's|^\./||'
}
mapfile -t sources < <(list_sources | grep -v '^tests/' |
  xargs grep -l -E '#include "runtime/cpu/target_(avx2_begin|avx512_begin|attributes)\.h"|__attribute__\(\(target\(' || true)
[ ${#sources[@]} -gt 0 ] || { echo "check_portable: no ISA-specific sources found" >&2; exit 1; }
# Object files are DIR/CMakeFiles/TARGET.dir/REST.o for a source DIR/REST.cc (each target that
# compiles it).
ninja -C "$BUILD_DIR" build.ninja >/dev/null 2>&1  # re-globs the sources (a new file) if needed
mapfile -t all < <(ninja -C "$BUILD_DIR" -t targets all | sed -n 's|^\([^:]*\.cc\.o\): .*|\1|p')
objects=()
for src in "${sources[@]}"; do
  dir=${src%%/*} rest=${src#*/}
  found=0
  for obj in "${all[@]}"; do
    if [[ $obj == "$dir"/CMakeFiles/*.dir/"$rest".o ]]; then objects+=("$obj") found=1; fi
  done
  [ $found -eq 1 ] || { echo "check_portable: no object file is built from $src" >&2; exit 1; }
done
# Rebuilt every time, so that warnings are seen again.
rm -f "${objects[@]/#/$BUILD_DIR/}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
ninja -C "$BUILD_DIR" -k 0 "${objects[@]}" >"$log" 2>&1 || status=$?
if [ $status -ne 0 ] || grep -q -E 'warning:|error:' "$log"; then
  grep -E -A3 'warning:|error:|FAILED' "$log" | head -60
  echo "check_portable: the portable build of ${#objects[@]} ISA-specific sources failed or warned" >&2
  exit 1
fi
echo "check_portable: ${#objects[@]} ISA-specific sources build without warnings for the portable target"
