// Launches of pooling, nearest upsampling and the data-movement ops (concat, slice, transpose,
// rope, embedding, reshape).
#include "runtime/cuda/gpu/step_launch_builders.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "runtime/cuda/attrs.h"

namespace cuvil::runtime::cuda::step_launch {

using ir::OpKind;
using ir::Shape;

namespace {

void strided_copy(Ctx& c, const float* src, sk::StridedCopyParams p) {
  p.src = src;
  p.dst = c.y();
  const int64_t total = p.outer * p.copy_inner;
  if (total == 0) return;
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_strided_copy", dim3(sk::grid_for(total)),
                                dim3(sk::kThreads), p));
}

}  // namespace

void build_pool(Ctx& c) {
  const bool nhwc = is_nhwc(c.step);
  const Shape& x = c.shape(0);
  const Shape& y = c.step.output_shape;
  if (c.step.op == OpKind::global_avg_pool) {
    sk::GlobalPoolParams p{
        c.in(0), c.y(), x[0], nhwc ? x[3] : x[1], nhwc ? x[1] * x[2] : x[2] * x[3], nhwc ? 1 : 0};
    c.out.push_back(simple_launch(*c.s.simple, "cuvil_global_pool", dim3(sk::grid_for(p.n * p.c)),
                                  dim3(sk::kThreads), p));
    return;
  }
  const auto kernel = c.step.attrs.get_ints("kernel", {1, 1});
  const auto stride = c.step.attrs.get_ints("stride", {1, 1});
  const auto pad = c.step.attrs.get_ints("pad", {0, 0});
  if (c.step.op == OpKind::avg_pool2d && c.step.attrs.get_int("count_include_pad", 1) == 0 &&
      (pad[0] > 0 || pad[1] > 0)) {
    unsupported(c.step, "average pooling that excludes padding from the divisor");
  }
  sk::PoolParams p{c.in(0),
                   c.y(),
                   x[0],
                   nhwc ? x[3] : x[1],
                   nhwc ? x[1] : x[2],
                   nhwc ? x[2] : x[3],
                   nhwc ? y[1] : y[2],
                   nhwc ? y[2] : y[3],
                   kernel[0],
                   kernel[1],
                   stride[0],
                   stride[1],
                   pad[0],
                   pad[1],
                   nhwc ? 1 : 0,
                   c.step.op == OpKind::max_pool2d ? 1 : 0};
  const int64_t total = ir::num_elements(y);
  c.out.push_back(
      simple_launch(*c.s.simple, "cuvil_pool", dim3(sk::grid_for(total)), dim3(sk::kThreads), p));
}

void build_upsample(Ctx& c) {
  const bool nhwc = is_nhwc(c.step);
  const Shape& x = c.shape(0);
  sk::UpsampleParams p{c.in(0),
                       c.y(),
                       x[0],
                       nhwc ? x[3] : x[1],
                       nhwc ? x[1] : x[2],
                       nhwc ? x[2] : x[3],
                       c.step.attrs.get_int("scale", 2),
                       nhwc ? 1 : 0};
  const int64_t total = ir::num_elements(c.step.output_shape);
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_upsample", dim3(sk::grid_for(total)),
                                dim3(sk::kThreads), p));
}

void build_concat(Ctx& c) {
  const Shape& y = c.step.output_shape;
  const size_t axis =
      static_cast<size_t>(normalize_axis(c.step.attrs.get_int("axis", 0), y.size()));
  const int64_t outer = product(y, 0, axis), rest = product(y, axis + 1, y.size());
  int64_t offset = 0;
  for (size_t i = 0; i < c.own_inputs(); ++i) {
    const int64_t len = c.shape(i)[axis];
    sk::StridedCopyParams p{nullptr,    nullptr, outer,          len * rest,
                            len * rest, 0,       y[axis] * rest, offset * rest};
    strided_copy(c, c.in(i), p);
    offset += len;
  }
}

void build_slice(Ctx& c) {
  const Shape& x = c.shape(0);
  const Shape& y = c.step.output_shape;
  const size_t axis =
      static_cast<size_t>(normalize_axis(c.step.attrs.get_int("axis", 0), x.size()));
  const int64_t start = c.step.attrs.get_int("start", 0);
  const int64_t outer = product(x, 0, axis), rest = product(x, axis + 1, x.size());
  sk::StridedCopyParams p{nullptr,        nullptr,      outer,          y[axis] * rest,
                          x[axis] * rest, start * rest, y[axis] * rest, 0};
  strided_copy(c, c.in(0), p);
}

void build_transpose(Ctx& c) {
  const Shape& x = c.shape(0);
  const Shape& y = c.step.output_shape;
  const auto perm = c.step.attrs.get_ints("perm", {});
  if (y.size() > static_cast<size_t>(sk::kMaxRank) || perm.size() != x.size()) {
    unsupported(c.step, "transpose of rank above 8 or a bad perm");
  }
  sk::TransposeParams p{};
  p.x = c.in(0);
  p.y = c.y();
  p.total = ir::num_elements(y);
  p.rank = static_cast<int64_t>(y.size());
  for (size_t d = 0; d < y.size(); ++d) {
    p.out_dims[d] = y[d];
    p.in_strides[d] = product(x, static_cast<size_t>(perm[d]) + 1, x.size());
  }
  if (p.total == 0) return;
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_transpose", dim3(sk::grid_for(p.total)),
                                dim3(sk::kThreads), p));
}

void build_rope(Ctx& c) {
  const Shape& x = c.shape(0);
  if (x.size() != 4 || x[3] % 2 != 0) unsupported(c.step, "rope needs x[B, H, S, D] with even D");
  sk::RopeParams p{c.in(0),
                   c.y(),
                   x[0],
                   x[1],
                   x[2],
                   x[3],
                   c.step.attrs.get_int("pos_offset", 0),
                   c.step.attrs.get_float("theta", 10000.0)};
  const int64_t total = x[0] * x[1] * x[2] * (x[3] / 2);
  c.out.push_back(
      simple_launch(*c.s.simple, "cuvil_rope", dim3(sk::grid_for(total)), dim3(sk::kThreads), p));
}

void build_embedding(Ctx& c) {
  const Shape& table = c.shape(0);
  sk::EmbeddingParams p{c.in(0), c.in(1), c.y(), ir::num_elements(c.shape(1)), table[1], table[0]};
  const int64_t total = p.rows * p.dim;
  c.out.push_back(simple_launch(*c.s.simple, "cuvil_embedding", dim3(sk::grid_for(total)),
                                dim3(sk::kThreads), p));
}

void build_reshape(Ctx& c) {
  const float* src = c.in(0);
  float* dst = c.y();
  const size_t bytes = static_cast<size_t>(ir::num_elements(c.step.output_shape)) * 4;
  if (src == dst || bytes == 0) return;
  c.out.push_back([src, dst, bytes](cudaStream_t stream) {
    CUVIL_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream));
  });
}

}  // namespace cuvil::runtime::cuda::step_launch
