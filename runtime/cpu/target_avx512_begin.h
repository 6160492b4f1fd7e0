// Included by a `<kernel>_avx512.cc` file after all its other headers: compiles the rest of the
// file for AVX-512 whatever -march says (cpu_isa.h decides at run time whether it runs), up to
// target_end.h. Headers come first so that none of their inline code is compiled for AVX-512
// and then called on a CPU without it. No include guard: it is meant to act where included.

// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register and warn about it
// where they are inlined (a known false positive).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#ifdef __clang__
// clang ignores GCC's target pragma (the fuzz build uses clang): the attribute on every function.
#pragma clang attribute push( \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx2"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,fma,avx2")
#endif
#define CUVIL_AVX512_FILE
#include <immintrin.h>
