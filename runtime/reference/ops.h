// Internal to the reference interpreter: the per-op kernels and the small helpers they share.
// Every kernel reads its operands through views, writes a caller-allocated output whose shape
// the graph's shape inference already fixed, and accumulates in double.
#pragma once

#include <cstdint>
#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::runtime::reference {

// A read-only fp32 tensor held elsewhere: a graph constant, a caller's input or an intermediate.
struct View {
  const float* data = nullptr;
  ir::Shape shape;
  int64_t numel() const { return ir::num_elements(shape); }
};

// What one kernel call sees: the node (for attributes), its operands in node order, and the
// output buffer of `out_shape` elements.
struct OpArgs {
  const ir::Node& node;
  const std::vector<View>& in;
  const ir::Shape& out_shape;
  float* out;
};

// Sizes and element strides of a physical activation, whatever its layout. In nchw16c
// (block = 16) c counts physical lanes, padding included, and sc is the stride between blocks.
struct Dims4 {
  int64_t n, c, h, w;
  int64_t sn, sc, sh, sw;
  int64_t block = 0;  // channels per block; 0: unblocked
  int64_t at(int64_t in, int64_t ic, int64_t ih, int64_t iw) const {
    const int64_t channel = block ? ic / block * sc + ic % block : ic * sc;
    return in * sn + channel + ih * sh + iw * sw;
  }
};
ir::Layout layout_attr(const ir::Node& node);  // attr "layout", default nchw
Dims4 dims4(const ir::Shape& shape, ir::Layout layout);

// Row-major element strides of a shape.
std::vector<int64_t> strides_of(const ir::Shape& shape);
// Strides for reading `in` at the indices of `out` under numpy broadcasting: 0 on dimensions
// that `in` lacks or has as 1.
std::vector<int64_t> broadcast_strides(const ir::Shape& in, const ir::Shape& out);
// Non-negative axis for a possibly negative `axis` of a rank-`rank` tensor.
int64_t normalize_axis(int64_t axis, size_t rank);

// Elementwise helpers shared by the binary ops and fused epilogues. `out` may alias `a` when
// a.shape equals out_shape (epilogues update the running result in place).
float apply_unary(ir::OpKind op, const ir::UnaryParams& params, float x);
void binary_broadcast(ir::OpKind op, const View& a, const View& b, const ir::Shape& out_shape,
                      float* out);

// elementwise_ops.cc
void run_binary(const OpArgs& a);
void run_unary(const OpArgs& a);
void run_where(const OpArgs& a);
void run_compare(const OpArgs& a);

// linalg_ops.cc
void run_linear(const OpArgs& a);
void run_matmul(const OpArgs& a);

// conv_ops.cc
void run_conv2d(const OpArgs& a);

// pool_ops.cc
void run_max_pool2d(const OpArgs& a);
void run_avg_pool2d(const OpArgs& a);
void run_global_avg_pool(const OpArgs& a);
void run_upsample_nearest2d(const OpArgs& a);

// norm_ops.cc
void run_batch_norm(const OpArgs& a);
void run_group_norm(const OpArgs& a);
void run_layer_norm(const OpArgs& a);
void run_rms_norm(const OpArgs& a);

// attention_ops.cc
void run_softmax(const OpArgs& a);
void run_sdpa(const OpArgs& a);
void run_rope(const OpArgs& a);

// shape_ops.cc
void run_concat(const OpArgs& a);
void run_slice(const OpArgs& a);
void run_reshape(const OpArgs& a);
void run_transpose(const OpArgs& a);
void run_embedding(const OpArgs& a);
void run_pad(const OpArgs& a);
void run_gather(const OpArgs& a);
void run_scatter(const OpArgs& a);
void run_expand(const OpArgs& a);

// reduce_ops.cc
void run_reduce(const OpArgs& a);
void run_cumsum(const OpArgs& a);
void run_cast(const OpArgs& a);

}  // namespace cuvil::runtime::reference
