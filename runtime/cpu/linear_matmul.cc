// linear (x W^T + b) and batched matmul on the packed GEMM. Both run with the blocking their
// schedule read at lowering (gemm_schedule.h); linear may run on a weight packed at lowering.
#include <algorithm>

#include "runtime/cpu/attrs.h"
#include "runtime/cpu/batched_matmul.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/gemm_prepare.h"
#include "runtime/cpu/gemm_schedule.h"
#include "runtime/cpu/gemv.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/cpu/kernels.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

struct LinearPrepared {
  PackedB weight;
};

}  // namespace

std::shared_ptr<const void> linear_gemm_prepare(const Step& step,
                                                const float* const* constant_inputs) {
  // Few-row products read the weight in place: no packing, and no knob of it is consumed.
  if (gemm_reads_in_place(linear_rows(step)) || constant_inputs[1] == nullptr) return nullptr;
  if (step.attrs.get_int(attrs::kGemmPrepack, 0) == 0) return nullptr;
  const GemmBlocking blocking = scheduled_blocking(step, linear_rows(step));
  const ir::Shape& w = step.input_shapes[1];
  const MicroKernel& micro = pick_micro_kernel(blocking.portable ? GemmIsa::ref : active_gemm_isa(),
                                               blocking.mr, blocking.nr);
  auto prepared = std::make_shared<LinearPrepared>();
  const std::unique_ptr<ThreadPool> pool = preparing_pool(w[0] * w[1]);
  prepared->weight = pack_b_ahead(constant_inputs[1], w[1], /*transposed=*/true, w[1], w[0],
                                  blocking.kc, micro.nr, pool.get());
  return prepared;
}

void linear_gemm(const KernelArgs& a) {
  const ir::Shape& w = a.step.input_shapes[1];
  const Epilogue epi(a.step, a.in, a.out);
  GemmProblem p;
  p.n = w[0];
  p.k = w[1];
  p.m = ir::num_elements(a.step.output_shape) / p.n;
  p.a = a.in[0], p.lda = p.k;
  p.b = a.in[1], p.ldb = p.k, p.b_transposed = true;
  p.c = a.out, p.ldc = p.n;
  p.bias = has_operand(a.step, 2) ? a.in[2] : nullptr;
  p.epilogue = epi.empty() ? nullptr : &epi;
  p.blocking = scheduled_blocking(a.step, p.m);
  if (a.step.prepared) {
    p.packed_b = &static_cast<const LinearPrepared*>(a.step.prepared.get())->weight;
  }
  gemm(p, a.pool);
}

void matmul_gemm(const KernelArgs& a) {
  const BatchedMatmul mm(a.step);
  const int64_t m = mm.m, k = mm.k, n = mm.n, batches = mm.batches;
  const Epilogue epi(a.step, a.in, a.out);
  const GemmBlocking blocking = scheduled_blocking(a.step, m);

  auto problem = [&](int64_t bi) {
    GemmProblem p;
    p.m = m, p.n = n, p.k = k;
    p.a = a.in[0] + mm.a_offset(bi), p.lda = k;
    p.b = a.in[1] + mm.b_offset(bi), p.ldb = n;
    p.c = a.out + mm.c_offset(bi), p.ldc = n;
    p.epilogue = epi.empty() ? nullptr : &epi;
    p.blocking = blocking;
    return p;
  };
  // Many small products: one thread per product; few large ones: split each product.
  const bool per_batch = batches >= 2 * a.pool.threads() ||
                         (batches >= a.pool.threads() && m * n * k < (int64_t{1} << 21));
  if (per_batch) {
    a.pool.parallel_for_tid(batches, [&](int tid, int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi) gemm_serial(problem(bi), a.pool, tid);
    });
  } else {
    for (int64_t bi = 0; bi < batches; ++bi) gemm(problem(bi), a.pool);
  }
}

}  // namespace cuvil::runtime::cpu
