// Launches of attention, the norms and softmax: generated kernels where the generator takes the
// step, the simple kernels otherwise (with the reason).
#include "runtime/cuda/gpu/step_launch_builders.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/cuda/attrs.h"
#include "runtime/cuda/codegen/attention.h"
#include "runtime/cuda/codegen/norm.h"

namespace cuvil::runtime::cuda::step_launch {

using ir::OpKind;
using ir::Shape;

namespace {

unsigned row_threads(int64_t len) {
  // Whole warps, at most 256, enough for short rows.
  return static_cast<unsigned>(std::clamp<int64_t>((len + 31) / 32 * 32, 32, 256));
}

// The generated row-reduction kernels (layer/RMS/group norm, last-axis softmax); false when the
// generator rejects the node (the caller runs the simple kernel, and says why).
bool generated_norm(Ctx& c) {
  if (c.lowering.library != Library::generated) return false;
  const Shape& x = c.shape(0);
  codegen::NormProblem p;
  p.io = codegen::ElemType::f32;
  p.param = codegen::ElemType::f32;
  p.eps = c.step.attrs.get_float("eps", 1e-5);
  const void* gamma = nullptr;
  const void* beta = nullptr;
  switch (c.step.op) {
    case OpKind::group_norm: {
      const bool nhwc = is_nhwc(c.step);
      p.kind = codegen::NormKind::group_norm;
      p.n = x[0];
      p.c = nhwc ? x[3] : x[1];
      p.spatial = nhwc ? x[1] * x[2] : x[2] * x[3];
      p.groups = c.step.attrs.get_int("groups", 32);
      p.nhwc = nhwc;
      gamma = c.in(1);
      beta = c.in(2);
      break;
    }
    case OpKind::layer_norm:
    case OpKind::rms_norm:
    case OpKind::softmax:
      p.kind = c.step.op == OpKind::layer_norm ? codegen::NormKind::layer_norm
               : c.step.op == OpKind::rms_norm ? codegen::NormKind::rms_norm
                                               : codegen::NormKind::softmax;
      p.dim = x.back();
      p.rows = ir::num_elements(x) / std::max<int64_t>(p.dim, 1);
      if (c.step.op != OpKind::softmax) gamma = c.in(1);
      if (c.step.op == OpKind::layer_norm) beta = c.in(2);
      break;
    default:
      return false;
  }
  const codegen::NormTiles tiles;
  try {
    codegen::validate_norm(p, tiles);
    const codegen::NormKernelParams params = codegen::norm_params(p, c.in(0), c.y(), gamma, beta);
    c.out.push_back(generated_launch(c.s, codegen::norm_source(p, tiles),
                                     codegen::norm_geometry(p, tiles), &params, sizeof params));
    return true;
  } catch (const UserError& e) {
    c.lowering.fallback = std::string("the generated kernel rejected the node: ") + e.what();
    c.lowering.library = Library::simple;
    c.lowering.kernel = std::string(ir::to_string(c.step.op)) + ".simple";
    return false;
  }
}

}  // namespace

void build_sdpa(Ctx& c) {
  const Shape& q = c.shape(0);
  const Shape& k = c.shape(1);
  const Shape& v = c.shape(2);
  const bool causal = c.step.attrs.get_int("causal", 0) != 0;
  const double scale = c.step.attrs.get_float("scale", 1.0 / std::sqrt(static_cast<double>(q[3])));
  if (c.lowering.library == Library::generated) {
    codegen::AttentionProblem p;
    p.batch = q[0], p.heads_q = q[1], p.heads_kv = k[1], p.seq_q = q[2], p.seq_kv = k[2];
    p.head_dim = q[3], p.head_dim_v = v[3];
    p.causal = causal;
    p.scale = scale;
    p.type = codegen::ElemType::f32;
    codegen::AttentionTiles t;
    t.block_q = static_cast<int>(c.step.attrs.get_int(attrs::kAttentionBlockQ, t.block_q));
    t.block_kv = static_cast<int>(c.step.attrs.get_int(attrs::kAttentionBlockKv, t.block_kv));
    t.warps = static_cast<int>(c.step.attrs.get_int(attrs::kAttentionWarps, t.warps));
    try {
      codegen::validate_attention(p, t);
      const codegen::AttentionKernelParams params =
          codegen::attention_dense_params(p, c.in(0), c.in(1), c.in(2), c.y());
      c.out.push_back(generated_launch(c.s, codegen::attention_source(p, t),
                                       codegen::attention_geometry(p, t), &params, sizeof params));
      return;
    } catch (const UserError& e) {
      // The simple kernel runs every shape: say why the generated one did not.
      c.lowering.kernel = "sdpa.simple";
      c.lowering.library = Library::simple;
      c.lowering.fallback = std::string("generated attention rejected the node: ") + e.what();
    }
  }
  if (q[3] > sk::kSdpaMaxHeadDim || v[3] > sk::kSdpaMaxHeadDim) {
    unsupported(c.step, "head dim above 256");
  }
  if (q[1] > 65535 || q[0] > 65535) unsupported(c.step, "more than 65535 heads or batches");
  sk::SdpaParams p{c.in(0), c.in(1), c.in(2), c.y(), q[0],           q[1], k[1],
                   q[2],    k[2],    q[3],    v[3],  causal ? 1 : 0, scale};
  const dim3 grid(static_cast<unsigned>((q[2] + sk::kSdpaWarps - 1) / sk::kSdpaWarps),
                  static_cast<unsigned>(q[1]), static_cast<unsigned>(q[0]));
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_sdpa", grid, dim3(32 * sk::kSdpaWarps), p));
}

void build_norm(Ctx& c) {
  if (generated_norm(c)) return;
  const Shape& x = c.shape(0);
  const double eps = c.step.attrs.get_float("eps", 1e-5);
  if (c.step.op == OpKind::group_norm) {
    const bool nhwc = is_nhwc(c.step);
    const int64_t groups = c.step.attrs.get_int("groups", 32);
    sk::GroupNormParams p{c.in(0),
                          c.y(),
                          c.in(1),
                          c.in(2),
                          x[0],
                          nhwc ? x[3] : x[1],
                          nhwc ? x[1] * x[2] : x[2] * x[3],
                          groups,
                          nhwc ? 1 : 0,
                          eps};
    if (p.c % groups != 0) unsupported(c.step, "channels not divisible by groups");
    c.out.push_back(simple_launch(*c.s.simple, "cuvil_group_norm",
                                  dim3(static_cast<unsigned>(x[0] * groups)), dim3(512), p));
    return;
  }
  if (c.step.op == OpKind::batch_norm) {
    const bool nhwc = is_nhwc(c.step);
    const int64_t total = ir::num_elements(x);
    sk::BatchNormParams p{c.in(0),
                          c.y(),
                          c.in(1),
                          c.in(2),
                          c.in(3),
                          c.in(4),
                          total,
                          nhwc ? x[3] : x[1],
                          nhwc ? 1 : x[2] * x[3],
                          eps};
    c.out.push_back(simple_launch(*c.s.simple, "cuvil_batch_norm", dim3(sk::grid_for(total)),
                                  dim3(sk::kThreads), p));
    return;
  }
  const int64_t dim = x.back();
  const int64_t rows = ir::num_elements(x) / std::max<int64_t>(dim, 1);
  const bool layer = c.step.op == OpKind::layer_norm;
  sk::RowNormParams p{c.in(0), c.y(), c.in(1),       layer ? c.in(2) : nullptr,
                      rows,    dim,   layer ? 0 : 1, eps};
  if (rows > INT32_MAX) unsupported(c.step, "more than 2^31 rows");
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_row_norm", dim3(static_cast<unsigned>(rows)),
                                dim3(row_threads(dim)), p));
}

void build_softmax(Ctx& c) {
  if (generated_norm(c)) return;
  const Shape& x = c.shape(0);
  const size_t axis =
      static_cast<size_t>(normalize_axis(c.step.attrs.get_int("axis", -1), x.size()));
  sk::SoftmaxParams p{c.in(0), c.y(), product(x, 0, axis), x[axis], product(x, axis + 1, x.size())};
  const int64_t rows = p.outer * p.inner;
  if (rows > INT32_MAX) unsupported(c.step, "more than 2^31 rows");
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_softmax", dim3(static_cast<unsigned>(rows)),
                                dim3(row_threads(p.axis)), p));
}

}  // namespace cuvil::runtime::cuda::step_launch
