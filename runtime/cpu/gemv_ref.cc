#include "runtime/cpu/gemv.h"

namespace cuvil::runtime::cpu {

void gemv_bt_ref(int64_t m, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                 float* c, int64_t ldc, int64_t j0, int64_t j1) {
  for (int64_t j = j0; j < j1; ++j) {
    const float* bj = b + j * ldb;
    for (int64_t i = 0; i < m; ++i) {
      const float* ai = a + i * lda;
      float sum = 0.0f;
      for (int64_t p = 0; p < k; ++p) sum += ai[p] * bj[p];
      c[i * ldc + j] = sum;
    }
  }
}

GemvFn pick_gemv_bt(GemmIsa isa) {
  switch (isa) {
    case GemmIsa::avx512:
      return gemv_bt_avx512;
    case GemmIsa::avx2:
      return gemv_bt_avx2;
    case GemmIsa::ref:
      break;
  }
  return gemv_bt_ref;
}

}  // namespace cuvil::runtime::cpu
