// Included by a `<kernel>_avx2.cc` file after all its other headers: compiles the rest of the
// file for AVX2 and FMA whatever -march says, up to target_end.h (as target_avx512_begin.h).
// No include guard: it is meant to act where included.
#ifdef __clang__
#pragma clang attribute push(__attribute__((target("avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#endif
#define CUVIL_AVX2_FILE
#include <immintrin.h>
