#include "runtime/cpu/epilogue.h"

#include "base/error.h"
#include "runtime/cpu/elementwise_math.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime::cpu {

namespace {

// The lane form of one epilogue step, or false where it has none.
bool lane_step(ir::OpKind op, const ir::UnaryParams& params, const float* src, const Broadcast& bc,
               int64_t columns, LaneEpilogue::Step& out) {
  using Operand = LaneEpilogue::Operand;
  out.op = op;
  switch (op) {
    case ir::OpKind::relu:
      return true;
    case ir::OpKind::clip:
    case ir::OpKind::leaky_relu:
      out.a = params.a;
      out.b = params.b;
      return true;
    case ir::OpKind::add:
    case ir::OpKind::sub:
    case ir::OpKind::mul:
    case ir::OpKind::div:
      break;
    default:
      return false;
  }
  out.src = src;
  switch (bc.pattern(columns)) {
    case Broadcast::Pattern::element:
      out.operand = Operand::element;
      return true;
    case Broadcast::Pattern::column:
      out.operand = Operand::column;
      return true;
    case Broadcast::Pattern::scalar:
      out.operand = Operand::scalar;
      return true;
    case Broadcast::Pattern::other:
      return false;
  }
  return false;
}

}  // namespace

Epilogue::Epilogue(const Step& step, const float* const* in, float* out)
    : out_(out), numel_(ir::num_elements(step.output_shape)) {
  CUVIL_CHECK(step.epilogue.size() <= kMaxSteps, "epilogue too long");
  lanes_.out = out;
  lanes_.columns = step.output_shape.empty() ? 1 : step.output_shape.back();
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
    has_lanes_ = has_lanes_ && lane_step(item.op, item.params, item.src, item.bc, lanes_.columns,
                                         lanes_.steps[lanes_.count++]);
  }
}

void apply_lanes(const LaneEpilogue& e, float* y, int64_t col, int64_t n) {
  using Operand = LaneEpilogue::Operand;
  const int64_t at = y - e.out;
  for (int s = 0; s < e.count; ++s) {
    const LaneEpilogue::Step& st = e.steps[s];
    for (int64_t i = 0; i < n; ++i) {
      const float v = y[i];
      float x = 0.0f;
      if (st.operand == Operand::element) x = st.src[at + i];
      if (st.operand == Operand::column) x = st.src[col + i];
      if (st.operand == Operand::scalar) x = st.src[0];
      switch (st.op) {
        case ir::OpKind::relu:
          y[i] = v < 0.0f ? 0.0f : v;  // NaN passes, as PyTorch's relu
          break;
        case ir::OpKind::clip:
          y[i] = v < st.a ? st.a : (v > st.b ? st.b : v);
          break;
        case ir::OpKind::leaky_relu:
          y[i] = v >= 0.0f ? v : st.a * v;
          break;
        case ir::OpKind::add:
          y[i] = v + x;
          break;
        case ir::OpKind::sub:
          y[i] = v - x;
          break;
        case ir::OpKind::mul:
          y[i] = v * x;
          break;
        case ir::OpKind::div:
          y[i] = v / x;
          break;
        default:
          CUVIL_CHECK(false, "apply_lanes: a step without a lane form");
      }
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
