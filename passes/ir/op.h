// The op set: what ResNet-50, Llama-3-8B and the SDXL UNet need. Each op's inputs and attributes
// are documented here once; shape_inference.cc and the interpreter follow this table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cuvil::ir {

enum class OpKind : uint8_t {
  // inputs (x, w[O, C/groups, KH, KW], bias[O]?); attrs stride[2], pad[2], groups, layout.
  // Layout "nchw16c" (groups 1 only): x is [N, ceil(C/16), H, W, 16], the output
  // [N, ceil(O/16), OH, OW, 16]; weights and bias keep their shapes. Output lanes past O are 0
  // before the epilogue; input lanes past C are never read.
  conv2d,
  // inputs (x[..., K], w[N, K], bias[N]?) -> [..., N]   (PyTorch's out_features x in_features)
  linear,
  // inputs (a[..., M, K], b[..., K, N]) with batch broadcasting -> [..., M, N]
  matmul,
  // inputs (x, scale[C], bias[C], mean[C], var[C]); attrs eps, layout
  batch_norm,
  // inputs (x, gamma[C], beta[C]); attrs groups, eps, layout
  group_norm,
  // inputs (x[..., D], gamma[D], beta[D]); attr eps
  layer_norm,
  // inputs (x[..., D], gamma[D]); attr eps
  rms_norm,
  // binary, numpy broadcasting
  add,
  sub,
  mul,
  div,
  // unary
  relu,
  silu,
  gelu,  // exact (erf) GELU, as PyTorch's default
  sigmoid,
  // attr axis (default -1)
  softmax,
  // scaled dot-product attention: q[B, Hq, Sq, D], k[B, Hkv, Skv, D], v[B, Hkv, Skv, Dv]
  // -> [B, Hq, Sq, Dv]; Hq % Hkv == 0 (grouped-query); attrs causal (0/1), scale (default
  // 1/sqrt(D)). Causal with Sq < Skv aligns queries to the end (decode with a KV cache).
  sdpa,
  // rotary embedding, rotate-half convention: x[B, H, S, D]; attrs theta, pos_offset
  rope,
  // attrs kernel[2], stride[2], pad[2], layout (nchw, nhwc or nchw16c: pools each lane)
  max_pool2d,
  avg_pool2d,  // attr count_include_pad (default 1: the divisor counts padded zeros)
  // x[N, C, H, W] (or nhwc) -> [N, C]; attr layout
  global_avg_pool,
  // attr scale (integer), layout
  upsample_nearest2d,
  // variadic; attr axis
  concat,
  // attrs axis, start, end
  slice,
  // attr shape (one entry may be -1)
  reshape,
  // attr perm
  transpose,
  // inputs (table[V, D], ids[...] i32) -> [..., D]
  embedding,

  // More unary elementwise ops (imported models use them). clip: attrs min, max (default
  // -inf/+inf); hard_sigmoid: max(0, min(1, alpha*x + beta)), attrs alpha (0.2), beta (0.5);
  // hard_swish: x * relu6(x + 3) / 6; leaky_relu: attr alpha (0.01).
  tanh,
  erf,
  sqrt,
  exp,
  log,
  neg,
  abs,
  clip,
  hard_sigmoid,
  hard_swish,
  leaky_relu,
  // More binary elementwise ops, numpy broadcasting: pow (a^b), max, min.
  pow,
  max,
  min,
  // Reductions over attr axes (list, default all; negative counts from the end), attr keepdims
  // (0/1, default 1).
  reduce_mean,
  reduce_sum,
  reduce_max,
  // attrs pads (2 * rank: the begins of every axis, then the ends; >= 0), mode (constant |
  // reflect | edge), value (constant mode).
  pad,
  // inputs (data, indices i32 [...]); attr axis: out = data.shape[:axis] + indices.shape +
  // data.shape[axis+1:]. Negative indices count from the end.
  gather,
  // inputs (cond, a, b), numpy broadcasting: cond != 0 ? a : b.
  where,
  // numpy broadcast of the input to attr shape (ONNX Expand: the result shape is the broadcast
  // of the input shape and attr shape).
  expand,
  // inputs (a, b), numpy broadcasting: 1 where `a mode b` holds, else 0 (attr mode: equal |
  // not_equal | less | less_equal | greater | greater_equal; IEEE: a NaN is only not_equal). Not an
  // epilogue step: its
  // result is a mask for where, mul or a cast, not a value to keep computing on.
  compare,
  // Running sums along attr axis (negative counts from the end): out[i] = sum of x[j] for j <= i
  // (j < i with attr exclusive = 1; from the end with attr reverse = 1).
  cumsum,
  // More unary elementwise ops: sin and cos (timestep embeddings, rotary tables from run-time
  // positions), floor, ceil, round (half to even, as ONNX and PyTorch), sign (-1, 0 or 1; NaN
  // stays NaN).
  sin,
  cos,
  floor,
  ceil,
  round,
  sign,
  // attr dtype (i32 | f32): the value as that dtype. Storage is fp32 either way, so to i32
  // truncates toward zero and saturates at the int32 range (NaN becomes 0: ONNX leaves it
  // undefined); to f32 copies. Not an epilogue step: its result's dtype is its own.
  cast,
  // The remaining trigonometric and hyperbolic functions ONNX defines (atan: torch.atan2's
  // export; the rest for completeness), unary elementwise like sin and cos.
  tan,
  asin,
  acos,
  atan,
  sinh,
  cosh,
  asinh,
  acosh,
  atanh,
  // gather's inverse: inputs (data, indices i32 [...], updates), attrs axis, reduction (none |
  // add | mul | max | min); updates = data.shape[:axis] + indices.shape + data.shape[axis+1:].
  // The output is data with out[..., indices[k], ...] = updates[..., k, ...] (combined with the
  // element there by the reduction), applied in index order: with none the last write wins.
  // Negative indices count from the end.
  scatter,
};

inline constexpr int kOpKindCount = static_cast<int>(OpKind::scatter) + 1;

std::string_view to_string(OpKind op);

bool is_unary_elementwise(OpKind op);
bool is_binary_elementwise(OpKind op);
bool is_reduction(OpKind op);  // reduce_mean, reduce_sum, reduce_max
inline bool is_elementwise(OpKind op) {
  return is_unary_elementwise(op) || is_binary_elementwise(op);
}
// Ops that carry a "layout" attribute and whose 4-D shapes are physical. Of these, conv2d
// (groups 1), max_pool2d and avg_pool2d also take the blocked layout nchw16c (rank 5); the
// others reject it. Layouts change only through transpose (and, to or from nchw16c, reshape,
// slice and a concat with zeros that pads channels to a multiple of 16).
bool is_layout_aware(OpKind op);

// The constants of the parameterised unary ops (clip: a = min, b = max; hard_sigmoid: a = alpha,
// b = beta; leaky_relu: a = alpha). Read once from a node's attributes; other ops ignore them.
struct UnaryParams {
  float a = 0.0f;
  float b = 0.0f;
  bool operator==(const UnaryParams&) const = default;
};

// One step of a fused elementwise epilogue applied to a node's result, in order. A binary step
// combines the running result with node input `input` (broadcast to the result's shape); the
// running result is the left operand. Epilogue operands are APPENDED after the op's own inputs,
// one per binary step in step order (the k-th binary step reads input op_input_count() + k), so
// an op's own operands (e.g. a conv's optional bias) are always Node::op_input_count() long.
struct EpilogueStep {
  OpKind op;
  int input = -1;
  UnaryParams params = {};  // unary steps: the fused node's constants
  bool operator==(const EpilogueStep&) const = default;
};

// How many operands an epilogue appends after the op's own inputs (one per binary step).
size_t epilogue_operand_count(const std::vector<EpilogueStep>& epilogue);

// cast to i32 of one stored value: toward zero, saturated at the int32 range, NaN as 0.
inline float truncate_to_i32(float v) {
  if (!(v == v)) return 0.0f;
  if (v >= 2147483648.0f) return 2147483647.0f;  // rounds to 2^31 in fp32, as storage holds it
  if (v <= -2147483648.0f) return -2147483648.0f;
  return static_cast<float>(static_cast<int32_t>(v));
}

// compare's relation (attr mode).
enum class CompareMode : uint8_t { equal, not_equal, less, less_equal, greater, greater_equal };
std::string_view to_string(CompareMode mode);
// Whether `a mode b` holds; with a NaN only not_equal holds (IEEE comparisons).
inline bool compare_holds(CompareMode mode, float a, float b) {
  switch (mode) {
    case CompareMode::equal:
      return a == b;
    case CompareMode::not_equal:
      return a != b;
    case CompareMode::less:
      return a < b;
    case CompareMode::less_equal:
      return a <= b;
    case CompareMode::greater:
      return a > b;
    case CompareMode::greater_equal:
      return a >= b;
  }
  return false;
}

// How scatter combines an update with the element it lands on (attr reduction). max and min
// propagate a NaN from either side, as numpy's maximum (ONNX's reference) and PyTorch's amax do.
enum class ScatterReduction : uint8_t { none, add, mul, max, min };
std::string_view to_string(ScatterReduction reduction);
inline float scatter_combine(ScatterReduction reduction, float old, float update) {
  switch (reduction) {
    case ScatterReduction::none:
      return update;
    case ScatterReduction::add:
      return old + update;
    case ScatterReduction::mul:
      return old * update;
    case ScatterReduction::max:
      return old != old || old >= update ? old : update;
    case ScatterReduction::min:
      return old != old || old <= update ? old : update;
  }
  return update;
}

}  // namespace cuvil::ir
