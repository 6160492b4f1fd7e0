// The products a batched matmul step makes: C[bi] = A[a(bi)] B[b(bi)] for every batch index bi of
// the output, where A's and B's batch dimensions broadcast (numpy) to the output's. Shared by the
// fp32 and bf16 matmul kernels.
#pragma once

#include <cstdint>

#include "runtime/cpu/broadcast.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

struct BatchedMatmul {
  int64_t m = 0, k = 0, n = 0;  // each product: [m, k] x [k, n]
  int64_t batches = 0;          // products (output batch elements)

  explicit BatchedMatmul(const Step& step) {
    const ir::Shape& as = step.input_shapes[0];
    const ir::Shape& bs = step.input_shapes[1];
    const ir::Shape& os = step.output_shape;
    m = as[as.size() - 2], k = as.back(), n = bs.back();
    const ir::Shape o_batch(os.begin(), os.end() - 2);
    batches = ir::num_elements(o_batch);
    a_ = Broadcast(ir::Shape(as.begin(), as.end() - 2), o_batch);
    b_ = Broadcast(ir::Shape(bs.begin(), bs.end() - 2), o_batch);
  }

  // Where product bi's operands and result start in the step's A, B and C.
  int64_t a_offset(int64_t bi) const { return batch_of(a_, bi) * m * k; }
  int64_t b_offset(int64_t bi) const { return batch_of(b_, bi) * k * n; }
  int64_t c_offset(int64_t bi) const { return bi * m * n; }

 private:
  static int64_t batch_of(const Broadcast& operand, int64_t bi) {
    int64_t batch = 0;
    operand.for_each_run(bi, 1, [&](int64_t, int64_t off, int64_t, int64_t) { batch = off; });
    return batch;
  }
  Broadcast a_, b_;
};

}  // namespace cuvil::runtime::cpu
