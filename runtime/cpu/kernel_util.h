// Small helpers shared by the CPU kernels: attribute access and 4-D geometry.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "passes/ir/types.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

inline int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}
inline int64_t round_up(int64_t v, int64_t multiple) {
  return ceil_div(v, multiple) * multiple;
}

inline bool is_nhwc(const Step& s) {
  return s.attrs.get_string("layout", "nchw") == "nhwc";
}
// Blocked channels: physical [N, ceil(C/16), H, W, 16] (ir::Layout::nchw16c).
inline bool is_nchw16c(const Step& s) {
  return s.attrs.get_string("layout", "nchw") == "nchw16c";
}

// The op's own inputs: epilogue operands are appended after them, one per binary step (see
// ir::EpilogueStep), so e.g. a conv's bias is present iff op_input_count > 2.
inline size_t op_input_count(const Step& s) {
  return s.inputs.size() - ir::epilogue_operand_count(s.epilogue);
}
inline bool has_operand(const Step& s, size_t index) {
  return index < op_input_count(s);
}

// Rows of a linear's product (all leading dimensions of its input) and of each of a batched
// matmul's products.
inline int64_t linear_rows(const Step& s) {
  return ir::num_elements(s.output_shape) / s.input_shapes[1][0];
}
inline int64_t matmul_rows(const Step& s) {
  const ir::Shape& a = s.input_shapes[0];
  return a[a.size() - 2];
}

struct Dims4 {
  int64_t n, c, h, w;
};
// Logical N, C, H, W of a physical 4-D shape.
inline Dims4 dims4(const ir::Shape& s, bool nhwc) {
  if (nhwc) return {s[0], s[3], s[1], s[2]};
  return {s[0], s[1], s[2], s[3]};
}

// An nchw16c activation seen lane-wise: [N * blocks] images of [H, W, 16] NHWC pixels (for ops
// that treat every channel alike, like pooling).
inline Dims4 blocked_as_nhwc(const ir::Shape& s) {
  return {s[0] * s[1], s[4], s[2], s[3]};
}

// A (height, width) attribute such as stride, pad or a pooling window; the verifier has checked
// it has two entries.
inline std::array<int64_t, 2> attr_pair(const Step& s, const char* key, int64_t fallback) {
  const std::vector<int64_t> v = s.attrs.get_ints(key, {fallback, fallback});
  CUVIL_CHECK(v.size() == 2, "step '" + s.node_name + "': " + key + " is not a pair");
  return {v[0], v[1]};
}

// Sums in fp64 with independent lanes so the compiler can vectorise them.
double sum_f64(const float* x, int64_t n);

// Weight work at lowering (packing, precision conversion) runs on every core when it is large:
// prepare hooks are called outside any plan's pool. A pool of all hardware threads for work of
// at least kParallelPrepareElements, else null (run inline).
inline constexpr int64_t kParallelPrepareElements = int64_t{1} << 20;
std::unique_ptr<ThreadPool> preparing_pool(int64_t elements);

}  // namespace cuvil::runtime::cpu
