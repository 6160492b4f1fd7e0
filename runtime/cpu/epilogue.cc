#include "runtime/cpu/epilogue.h"

#include "base/error.h"
#include "runtime/cpu/elementwise_math.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

Epilogue::Epilogue(const Step& step, const float* const* in, float* out)
    : out_(out), numel_(ir::num_elements(step.output_shape)) {
  CUVIL_CHECK(step.epilogue.size() <= kMaxSteps, "epilogue too long");
  for (const ir::EpilogueStep& e : step.epilogue) {
    Item& item = items_[count_++];
    item.op = e.op;
    item.params = e.params;
    if (ir::is_binary_elementwise(e.op)) {
      CUVIL_CHECK(e.input >= 0 && e.input < static_cast<int>(step.inputs.size()),
                  "epilogue operand out of range in step " + step.node_name);
      item.src = in[e.input];
      item.bc = Broadcast(step.input_shapes[static_cast<size_t>(e.input)], step.output_shape);
    }
  }
}

void Epilogue::apply(float* p, int64_t len) const {
  const int64_t flat = p - out_;
  for (int s = 0; s < count_; ++s) {
    const Item& item = items_[s];
    if (!item.src) {
      unary_run(item.op, p, p, len, item.params);
      continue;
    }
    item.bc.for_each_run(flat, len, [&](int64_t pos, int64_t off, int64_t stride, int64_t n) {
      float* y = out_ + pos;
      binary_run(item.op, y, item.src + off, stride, y, n);
    });
  }
}

void Epilogue::apply_all(ThreadPool& pool) const {
  if (count_ == 0) return;
  constexpr int64_t kBlock = 4096;
  const int64_t blocks = (numel_ + kBlock - 1) / kBlock;
  pool.parallel_for(blocks, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t begin = b * kBlock;
      apply(out_ + begin, std::min(kBlock, numel_ - begin));
    }
  });
}

}  // namespace cuvil::runtime::cpu
