// Scaled dot-product attention. Work is split into tasks of (batch, kv head, block of query
// rows); the query heads that share a kv head (grouped-query) are stacked into one block of
// rows, since they are contiguous in q and in the output. Per task: scores = Q_blk K^T (GEMM),
// softmax in fp32 with the causal mask aligned to the end, then P V (GEMM, epilogue applied).
// At most block x Skv scores live per thread.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/cpu/attention.h"
#include "runtime/cpu/elementwise_math.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/kernels.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

void sdpa_blocked(const KernelArgs& a) {
  const ir::Shape& qs = a.step.input_shapes[0];
  const ir::Shape& ks = a.step.input_shapes[1];
  const ir::Shape& vs = a.step.input_shapes[2];
  const int64_t batch = qs[0], hq = qs[1], sq = qs[2], d = qs[3];
  const int64_t hkv = ks[1], skv = ks[2], dv = vs[3];
  const int64_t group = hq / hkv;
  const SdpaSchedule& sc = schedule_of<SdpaSchedule>(a.step);
  const bool causal = sc.causal;
  const float scale = static_cast<float>(sc.scale);
  const Epilogue epi(a.step, a.in, a.out);

  const int64_t rows = group * sq;  // stacked query rows per (batch, kv head)
  const int64_t block = std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(skv, 1), 1, 64);
  const int64_t blocks_per_head = (rows + block - 1) / block;
  const int64_t tasks = batch * hkv * blocks_per_head;

  a.pool.parallel_for_tid(tasks, [&](int tid, int64_t t0, int64_t t1) {
    float* scores = a.pool.scratch(tid, ThreadPool::kKernel, static_cast<size_t>(block * skv));
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t bh = t / blocks_per_head;  // batch * hkv + kv head
      const int64_t r0 = (t % blocks_per_head) * block;
      const int64_t nr = std::min(block, rows - r0);
      const int64_t b = bh / hkv, kvh = bh % hkv;
      // Row r of this (batch, kv head) is query head kvh*group + r/sq at position r%sq.
      const int64_t row_base = (b * hq + kvh * group) * sq;
      const float* q = a.in[0] + (row_base + r0) * d;
      const float* k = a.in[1] + bh * skv * d;
      const float* v = a.in[2] + bh * skv * dv;
      // Keys any row of this block may see.
      int64_t kv_len = skv;
      if (causal) {
        kv_len = 0;
        for (int64_t r = r0; r < r0 + nr; ++r) kv_len = std::max(kv_len, r % sq + skv - sq + 1);
      }
      GemmProblem s;
      s.m = nr, s.n = kv_len, s.k = d;
      s.a = q, s.lda = d;
      s.b = k, s.ldb = d, s.b_transposed = true;
      s.c = scores, s.ldc = kv_len;
      gemm_serial(s, a.pool, tid);
      for (int64_t i = 0; i < nr; ++i) {
        float* row = scores + i * kv_len;
        const int64_t valid = causal ? std::min(kv_len, (r0 + i) % sq + skv - sq + 1) : kv_len;
        float mx = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j < valid; ++j) mx = std::max(mx, scale * row[j]);
        const double sum = exp_affine_sum(row, scale, -mx, row, valid);
        const float inv = static_cast<float>(1.0 / sum);
        for (int64_t j = 0; j < valid; ++j) row[j] *= inv;
        for (int64_t j = valid; j < kv_len; ++j) row[j] = 0.0f;
      }
      GemmProblem o;
      o.m = nr, o.n = dv, o.k = kv_len;
      o.a = scores, o.lda = kv_len;
      o.b = v, o.ldb = dv;
      o.c = a.out + (row_base + r0) * dv, o.ldc = dv;
      o.epilogue = epi.empty() ? nullptr : &epi;
      gemm_serial(o, a.pool, tid);
    }
  });
}

}  // namespace cuvil::runtime::cpu
