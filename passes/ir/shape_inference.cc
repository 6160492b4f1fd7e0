// Shape, dtype and layout inference, one rule per op (see op.h for each op's contract).
#include "passes/ir/shape_inference.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace cuvil::ir {

namespace {

struct Ctx {
  const Graph& graph;
  const Node& node;  // a view holding only the op's own inputs (no epilogue operands)

  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidNode(node.name, std::string(to_string(node.op)), what);
  }
  const Value& in(size_t i) const { return graph.value(node.inputs[i]); }
  const Shape& shape(size_t i) const { return in(i).shape; }
  void arity(size_t lo, size_t hi) const {
    if (node.inputs.size() < lo || node.inputs.size() > hi) {
      fail("expects " +
           (lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi)) +
           " inputs, got " + std::to_string(node.inputs.size()));
    }
  }
  void rank(size_t i, size_t r) const {
    if (shape(i).size() != r) {
      fail("input " + std::to_string(i) + " must have rank " + std::to_string(r) + ", has shape " +
           to_string(shape(i)));
    }
  }
  void vector_of(size_t i, int64_t n, const char* what) const {
    if (shape(i) != Shape{n}) {
      fail(std::string(what) + " must have shape [" + std::to_string(n) + "], has " +
           to_string(shape(i)));
    }
  }
  Layout layout() const {
    Layout l = Layout::nchw;
    const std::string text = node.attrs.get_string("layout", "nchw");
    if (!parse_layout(text, &l) || l == Layout::any) fail("unknown layout '" + text + "'");
    return l;
  }
  // Shape arithmetic on attributes a file may set to anything: overflowing int64 is the file's
  // error, not undefined behaviour.
  int64_t add(int64_t a, int64_t b) const {
    int64_t r = 0;
    if (__builtin_add_overflow(a, b, &r))
      fail(std::to_string(a) + " + " + std::to_string(b) + " overflows int64");
    return r;
  }
  int64_t mul(int64_t a, int64_t b) const {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r))
      fail(std::to_string(a) + " * " + std::to_string(b) + " overflows int64");
    return r;
  }
  // A window's output length along one axis: (in + 2 pad - window) / stride + 1.
  // Windows that fit: 0 when even one does not (C++ division truncates -1 / 2 to 0, which would
  // make one output of a window wider than the padded input).
  int64_t window_out(int64_t in, int64_t pad, int64_t window, int64_t stride) const {
    const int64_t room = add(add(in, mul(2, pad)), -window);
    return room < 0 ? 0 : room / stride + 1;
  }
  std::vector<int64_t> pair(const char* key, int64_t fallback) const {
    auto v = node.attrs.get_ints(key, {fallback, fallback});
    if (v.size() != 2) fail(std::string("attribute '") + key + "' must have 2 entries");
    return v;
  }
};

// Channel/spatial accessors for a physical activation (rank 5 in nchw16c, else rank 4). In
// nchw16c, c counts physical lanes: ceil(C/16) * 16.
struct Nchw {
  int64_t n, c, h, w;
};
Nchw split4(const Shape& s, Layout l) {
  if (l == Layout::nhwc) return {s[0], s[3], s[1], s[2]};
  if (l == Layout::nchw16c) return {s[0], s[1] * kChannelBlock, s[2], s[3]};
  return {s[0], s[1], s[2], s[3]};
}
Shape join4(Nchw d, Layout l) {
  if (l == Layout::nhwc) return {d.n, d.h, d.w, d.c};
  if (l == Layout::nchw16c)
    return {d.n, (d.c + kChannelBlock - 1) / kChannelBlock, d.h, d.w, kChannelBlock};
  return {d.n, d.c, d.h, d.w};
}

// The activation's rank for its layout; nchw16c also needs 16 lanes innermost.
void activation_rank(const Ctx& c, Layout l) {
  if (l != Layout::nchw16c) return c.rank(0, 4);
  c.rank(0, 5);
  if (c.shape(0)[4] != kChannelBlock)
    c.fail("nchw16c activation must end in 16 lanes, has shape " + to_string(c.shape(0)));
}

// Ops other than conv2d and pooling keep channels logical: they do not take nchw16c.
Layout unblocked_layout(const Ctx& c) {
  const Layout l = c.layout();
  if (l == Layout::nchw16c) c.fail("layout nchw16c is for conv2d (groups 1) and pooling only");
  return l;
}

int64_t norm_axis(const Ctx& c, int64_t axis, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r)
    c.fail("axis " + std::to_string(axis) + " out of range for rank " + std::to_string(r));
  return axis;
}

// cast's target (attr dtype): i32 or f32.
DType cast_dtype(const Ctx& c) {
  const std::string to = c.node.attrs.get_string("dtype", "");
  if (to == "i32") return DType::i32;
  if (to == "f32") return DType::f32;
  c.fail("cast needs attr dtype i32 or f32, got '" + to + "'");
}

Shape broadcast(const Ctx& c, const Shape& a, const Shape& b) {
  const size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    const int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    const int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1) {
      c.fail("shapes " + to_string(a) + " and " + to_string(b) + " do not broadcast");
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

void infer_conv(const Ctx& c, Value* out) {
  c.arity(2, 3);
  const Layout l = c.layout();
  activation_rank(c, l);
  c.rank(1, 4);
  Nchw x = split4(c.shape(0), l);
  const Shape& w = c.shape(1);
  const int64_t groups = c.node.attrs.get_int("groups", 1);
  if (l == Layout::nchw16c) {
    if (groups != 1) c.fail("layout nchw16c needs groups 1, has " + std::to_string(groups));
    // Lanes past the weight's channels are padding: the logical channel count is the weight's.
    if ((w[1] + kChannelBlock - 1) / kChannelBlock * kChannelBlock != x.c) {
      c.fail("weight " + to_string(w) + " expects " + std::to_string(w[1]) +
             " input channels, nchw16c activation has " + std::to_string(x.c / kChannelBlock) +
             " blocks");
    }
    x.c = w[1];
  }
  if (groups < 1 || x.c % groups != 0 || w[0] % groups != 0) {
    c.fail("groups " + std::to_string(groups) + " must be >= 1 and divide the " +
           std::to_string(x.c) + " input and " + std::to_string(w[0]) + " output channels");
  }
  if (c.mul(w[1], groups) != x.c) {
    c.fail("weight " + to_string(w) + " expects " + std::to_string(w[1] * groups) +
           " input channels, activation has " + std::to_string(x.c));
  }
  if (c.node.inputs.size() == 3) c.vector_of(2, w[0], "bias");
  const auto stride = c.pair("stride", 1);
  const auto pad = c.pair("pad", 0);
  const auto dilation = c.pair("dilation", 1);
  if (stride[0] < 1 || stride[1] < 1) c.fail("stride " + to_string(stride) + " must be >= 1");
  if (pad[0] < 0 || pad[1] < 0) c.fail("pad " + to_string(pad) + " must be >= 0");
  if (dilation[0] < 1 || dilation[1] < 1)
    c.fail("dilation " + to_string(dilation) + " must be >= 1");
  // A dilated kernel spans dilation * (k - 1) + 1 input pixels.
  const int64_t oh = c.window_out(x.h, pad[0], c.add(c.mul(dilation[0], w[2] - 1), 1), stride[0]);
  const int64_t ow = c.window_out(x.w, pad[1], c.add(c.mul(dilation[1], w[3] - 1), 1), stride[1]);
  if (oh < 1 || ow < 1) c.fail("output would be empty");
  out->shape = join4({x.n, w[0], oh, ow}, l);
  out->layout = l;
}

void infer_pool(const Ctx& c, Value* out) {
  c.arity(1, 1);
  const Layout l = c.layout();
  activation_rank(c, l);
  const Nchw x = split4(c.shape(0), l);
  const auto k = c.pair("kernel", 1);
  const auto stride = c.pair("stride", 1);
  const auto pad = c.pair("pad", 0);
  if (k[0] < 1 || k[1] < 1) c.fail("kernel " + to_string(k) + " must be >= 1");
  if (stride[0] < 1 || stride[1] < 1) c.fail("stride " + to_string(stride) + " must be >= 1");
  if (pad[0] < 0 || pad[1] < 0) c.fail("pad " + to_string(pad) + " must be >= 0");
  if (pad[0] > k[0] / 2 || pad[1] > k[1] / 2) c.fail("padding larger than half the kernel");
  const int64_t oh = c.window_out(x.h, pad[0], k[0], stride[0]);
  const int64_t ow = c.window_out(x.w, pad[1], k[1], stride[1]);
  if (oh < 1 || ow < 1) c.fail("output would be empty");
  out->shape = join4({x.n, x.c, oh, ow}, l);
  out->layout = l;
}

void infer_norm_nchw(const Ctx& c, size_t params, Value* out) {
  c.arity(params + 1, params + 1);
  const Layout l = unblocked_layout(c);
  c.rank(0, 4);
  const Nchw x = split4(c.shape(0), l);
  for (size_t i = 1; i <= params; ++i) c.vector_of(i, x.c, "per-channel parameter");
  if (c.node.op == OpKind::group_norm) {
    const int64_t g = c.node.attrs.get_int("groups", 32);
    if (g < 1 || x.c % g != 0)
      c.fail("channels " + std::to_string(x.c) + " not divisible by groups " + std::to_string(g));
  }
  out->shape = c.shape(0);
  out->layout = l;
}

void infer_last_dim_norm(const Ctx& c, size_t params, Value* out) {
  c.arity(params + 1, params + 1);
  if (c.shape(0).empty()) c.fail("input must have rank >= 1");
  const int64_t d = c.shape(0).back();
  for (size_t i = 1; i <= params; ++i) c.vector_of(i, d, "normalisation parameter");
  out->shape = c.shape(0);
  out->layout = c.in(0).layout;
}

void infer_matmul(const Ctx& c, Value* out) {
  c.arity(2, 2);
  const Shape& a = c.shape(0);
  const Shape& b = c.shape(1);
  if (a.size() < 2 || b.size() < 2) c.fail("operands must have rank >= 2");
  if (a.back() != b[b.size() - 2])
    c.fail("inner dimensions differ: " + to_string(a) + " x " + to_string(b));
  Shape batch = broadcast(c, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  batch.push_back(a[a.size() - 2]);
  batch.push_back(b.back());
  out->shape = batch;
}

void infer_linear(const Ctx& c, Value* out) {
  c.arity(2, 3);
  c.rank(1, 2);
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  if (x.empty() || x.back() != w[1]) {
    c.fail("input " + to_string(x) + " does not match weight " + to_string(w) + " ([out, in])");
  }
  if (c.node.inputs.size() == 3) c.vector_of(2, w[0], "bias");
  Shape s = x;
  s.back() = w[0];
  out->shape = s;
}

void infer_sdpa(const Ctx& c, Value* out) {
  c.arity(3, 3);
  for (size_t i = 0; i < 3; ++i) c.rank(i, 4);
  const Shape& q = c.shape(0);
  const Shape& k = c.shape(1);
  const Shape& v = c.shape(2);
  if (k[0] != q[0] || v[0] != q[0]) c.fail("batch sizes differ");
  if (k[1] != v[1] || k[1] < 1 || q[1] % k[1] != 0) {
    c.fail("query heads " + std::to_string(q[1]) + " must be a multiple of key/value heads " +
           std::to_string(k[1]));
  }
  if (k[2] != v[2]) c.fail("key and value lengths differ");
  if (k[3] != q[3]) c.fail("query and key head dims differ");
  if (c.node.attrs.get_int("causal", 0) && q[2] > k[2]) c.fail("causal attention needs Sq <= Skv");
  out->shape = {q[0], q[1], q[2], v[3]};
}

void infer_concat(const Ctx& c, Value* out) {
  if (c.node.inputs.empty()) c.fail("needs at least one input");
  const Shape& first = c.shape(0);
  const int64_t axis = norm_axis(c, c.node.attrs.get_int("axis", 0), first.size());
  Shape s = first;
  s[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < c.node.inputs.size(); ++i) {
    const Shape& si = c.shape(i);
    if (si.size() != first.size()) c.fail("inputs differ in rank");
    for (size_t d = 0; d < si.size(); ++d) {
      if (static_cast<int64_t>(d) != axis && si[d] != first[d]) {
        c.fail("inputs " + to_string(first) + " and " + to_string(si) +
               " differ off the concat axis");
      }
    }
    s[static_cast<size_t>(axis)] =
        c.add(s[static_cast<size_t>(axis)], si[static_cast<size_t>(axis)]);
  }
  out->shape = s;
  out->layout = c.in(0).layout;
}

void infer_reshape(const Ctx& c, Value* out) {
  c.arity(1, 1);
  Shape s = c.node.attrs.get_ints("shape", {});
  const int64_t total = num_elements(c.shape(0));
  int64_t known = 1;
  int wild = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (wild >= 0) c.fail("more than one -1 in shape");
      wild = static_cast<int>(i);
    } else if (s[i] < 1) {
      c.fail("target dimension " + std::to_string(s[i]) + " must be >= 1 or -1");
    } else {
      known = c.mul(known, s[i]);
    }
  }
  if (wild >= 0) {
    if (known == 0 || total % known != 0) c.fail("cannot infer -1");
    s[static_cast<size_t>(wild)] = total / known;
  }
  if (bounded_elements(s) != total)
    c.fail("cannot reshape " + to_string(c.shape(0)) + " to " + to_string(s));
  out->shape = s;
}

void infer_transpose(const Ctx& c, Value* out) {
  c.arity(1, 1);
  const Shape& x = c.shape(0);
  const auto perm = c.node.attrs.get_ints("perm", {});
  if (perm.size() != x.size())
    c.fail("perm has " + std::to_string(perm.size()) + " entries for rank " +
           std::to_string(x.size()));
  std::vector<char> seen(x.size(), 0);
  Shape s(x.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] < 0 || perm[i] >= static_cast<int64_t>(x.size()) ||
        seen[static_cast<size_t>(perm[i])]) {
      c.fail("perm is not a permutation");
    }
    seen[static_cast<size_t>(perm[i])] = 1;
    s[i] = x[static_cast<size_t>(perm[i])];
  }
  out->shape = s;
  // Transposes are how layouts change: NCHW->NHWC is perm {0,2,3,1}.
  if (x.size() == 4 && perm == std::vector<int64_t>{0, 2, 3, 1}) out->layout = Layout::nhwc;
  if (x.size() == 4 && perm == std::vector<int64_t>{0, 3, 1, 2}) out->layout = Layout::nchw;
  // The last step into nchw16c: [N, Cb, 16, H, W] or [N, H, W, Cb, 16] -> [N, Cb, H, W, 16].
  if (x.size() == 5 && s[4] == kChannelBlock &&
      (perm == std::vector<int64_t>{0, 1, 3, 4, 2} || perm == std::vector<int64_t>{0, 3, 1, 2, 4}))
    out->layout = Layout::nchw16c;
}

// The reduced axes of a rank-`rank` input, sorted and distinct (attr axes; default: all).
std::vector<int64_t> reduced_axes(const Ctx& c, size_t rank) {
  std::vector<int64_t> axes = c.node.attrs.get_ints("axes", {});
  if (axes.empty()) {
    for (size_t i = 0; i < rank; ++i) axes.push_back(static_cast<int64_t>(i));
  }
  std::vector<char> seen(rank, 0);
  for (int64_t& a : axes) {
    a = norm_axis(c, a, rank);
    if (seen[static_cast<size_t>(a)]) c.fail("axis " + std::to_string(a) + " listed twice");
    seen[static_cast<size_t>(a)] = 1;
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

void infer_reduce(const Ctx& c, Value* out) {
  c.arity(1, 1);
  const Shape& x = c.shape(0);
  const std::vector<int64_t> axes = reduced_axes(c, x.size());
  const bool keep = c.node.attrs.get_int("keepdims", 1) != 0;
  Shape s;
  for (size_t d = 0; d < x.size(); ++d) {
    const bool reduced = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (!reduced) {
      s.push_back(x[d]);
    } else if (keep) {
      s.push_back(1);
    }
  }
  out->shape = s;
}

void infer_pad(const Ctx& c, Value* out) {
  c.arity(1, 1);
  const Shape& x = c.shape(0);
  const std::vector<int64_t> pads = c.node.attrs.get_ints("pads", {});
  if (pads.size() != 2 * x.size()) {
    c.fail("pads has " + std::to_string(pads.size()) + " entries, expected " +
           std::to_string(2 * x.size()) + " (begins then ends of each axis)");
  }
  const std::string mode = c.node.attrs.get_string("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge")
    c.fail("unknown pad mode '" + mode + "' (expected constant, reflect or edge)");
  Shape s = x;
  for (size_t d = 0; d < x.size(); ++d) {
    const int64_t lo = pads[d], hi = pads[d + x.size()];
    if (lo < 0 || hi < 0) c.fail("negative pads are not supported");
    if (mode == "reflect" && (lo >= x[d] || hi >= x[d]))
      c.fail("reflect padding must be smaller than the axis (" + std::to_string(x[d]) + ")");
    if (mode == "edge" && x[d] == 0 && lo + hi > 0) c.fail("edge padding of an empty axis");
    s[d] = c.add(c.add(x[d], lo), hi);
  }
  out->shape = s;
}

void infer_gather(const Ctx& c, Value* out) {
  c.arity(2, 2);
  const Shape& data = c.shape(0);
  if (data.empty()) c.fail("data must have rank >= 1");
  if (c.in(1).dtype != DType::i32) c.fail("indices must be i32");
  const int64_t axis = norm_axis(c, c.node.attrs.get_int("axis", 0), data.size());
  Shape s(data.begin(), data.begin() + axis);
  const Shape& idx = c.shape(1);
  s.insert(s.end(), idx.begin(), idx.end());
  s.insert(s.end(), data.begin() + axis + 1, data.end());
  out->shape = s;
}

// scatter: updates must have gather's output shape for (data, indices, axis).
void infer_scatter(const Ctx& c, Value* out) {
  c.arity(3, 3);
  const Shape& data = c.shape(0);
  if (data.empty()) c.fail("data must have rank >= 1");
  if (c.in(1).dtype != DType::i32) c.fail("indices must be i32");
  try {
    scatter_reduction(c.node.attrs);
  } catch (const UserError& e) {
    c.fail(e.what());
  }
  const int64_t axis = norm_axis(c, c.node.attrs.get_int("axis", 0), data.size());
  Shape expected(data.begin(), data.begin() + axis);
  const Shape& idx = c.shape(1);
  expected.insert(expected.end(), idx.begin(), idx.end());
  expected.insert(expected.end(), data.begin() + axis + 1, data.end());
  if (c.shape(2) != expected) {
    c.fail("updates have shape " + to_string(c.shape(2)) + "; data " + to_string(data) +
           " with indices " + to_string(idx) + " along axis " + std::to_string(axis) + " needs " +
           to_string(expected));
  }
  out->shape = data;
}

}  // namespace

void infer_node(const Graph& graph, const Node& full_node, Value* out) {
  Node node = full_node;
  node.inputs.resize(full_node.op_input_count());
  node.epilogue.clear();
  const Ctx c{graph, node};
  out->kind = ValueKind::intermediate;
  out->dtype = DType::f32;
  out->layout = Layout::any;
  for (ValueId in : node.inputs) {
    if (in < 0 || in >= graph.value_count())
      c.fail("input id " + std::to_string(in) + " does not exist");
  }
  switch (node.op) {
    case OpKind::conv2d:
      infer_conv(c, out);
      break;
    case OpKind::linear:
      infer_linear(c, out);
      break;
    case OpKind::matmul:
      infer_matmul(c, out);
      break;
    case OpKind::batch_norm:
      infer_norm_nchw(c, 4, out);
      break;
    case OpKind::group_norm:
      infer_norm_nchw(c, 2, out);
      break;
    case OpKind::layer_norm:
      infer_last_dim_norm(c, 2, out);
      break;
    case OpKind::rms_norm:
      infer_last_dim_norm(c, 1, out);
      break;
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::div:
    case OpKind::pow:
    case OpKind::max:
    case OpKind::min:
      c.arity(2, 2);
      out->shape = broadcast(c, c.shape(0), c.shape(1));
      out->layout = out->shape == c.shape(0) ? c.in(0).layout : c.in(1).layout;
      break;
    case OpKind::relu:
    case OpKind::silu:
    case OpKind::gelu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::erf:
    case OpKind::sqrt:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::neg:
    case OpKind::abs:
    case OpKind::hard_sigmoid:
    case OpKind::hard_swish:
    case OpKind::leaky_relu:
    case OpKind::sin:
    case OpKind::cos:
    case OpKind::floor:
    case OpKind::ceil:
    case OpKind::round:
    case OpKind::sign:
    case OpKind::tan:
    case OpKind::asin:
    case OpKind::acos:
    case OpKind::atan:
    case OpKind::sinh:
    case OpKind::cosh:
    case OpKind::asinh:
    case OpKind::acosh:
    case OpKind::atanh:
      c.arity(1, 1);
      out->shape = c.shape(0);
      out->layout = c.in(0).layout;
      break;
    case OpKind::clip: {
      c.arity(1, 1);
      const UnaryParams p = unary_params(OpKind::clip, node.attrs);
      if (std::isnan(p.a) || std::isnan(p.b) || p.a > p.b) c.fail("clip needs min <= max");
      out->shape = c.shape(0);
      out->layout = c.in(0).layout;
      break;
    }
    case OpKind::reduce_mean:
    case OpKind::reduce_sum:
    case OpKind::reduce_max:
      infer_reduce(c, out);
      break;
    case OpKind::pad:
      infer_pad(c, out);
      break;
    case OpKind::gather:
      infer_gather(c, out);
      break;
    case OpKind::scatter:
      infer_scatter(c, out);
      break;
    case OpKind::where:
      c.arity(3, 3);
      out->shape = broadcast(c, broadcast(c, c.shape(0), c.shape(1)), c.shape(2));
      break;
    case OpKind::compare:
      c.arity(2, 2);
      try {
        compare_mode(node.attrs);
      } catch (const UserError& e) {
        c.fail(e.what());
      }
      out->shape = broadcast(c, c.shape(0), c.shape(1));
      break;
    case OpKind::expand: {
      c.arity(1, 1);
      const Shape target = node.attrs.get_ints("shape", {});
      for (int64_t d : target) {
        if (d < 1) c.fail("expand shape " + to_string(target) + " has a dimension < 1");
      }
      out->shape = broadcast(c, c.shape(0), target);
      break;
    }
    case OpKind::softmax:
      c.arity(1, 1);
      norm_axis(c, node.attrs.get_int("axis", -1), c.shape(0).size());
      out->shape = c.shape(0);
      break;
    case OpKind::cumsum:
      c.arity(1, 1);
      norm_axis(c, node.attrs.get_int("axis", 0), c.shape(0).size());
      out->shape = c.shape(0);
      break;
    case OpKind::cast:
      c.arity(1, 1);
      out->shape = c.shape(0);
      out->dtype = cast_dtype(c);
      break;
    case OpKind::sdpa:
      infer_sdpa(c, out);
      break;
    case OpKind::rope:
      c.arity(1, 1);
      c.rank(0, 4);
      if (c.shape(0)[3] % 2 != 0) c.fail("head dim must be even");
      if (const int64_t pos = node.attrs.get_int("pos_offset", 0); pos < 0 || pos > kMaxElements)
        c.fail("pos_offset must be in [0, 2^40]");
      out->shape = c.shape(0);
      break;
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
      infer_pool(c, out);
      break;
    case OpKind::global_avg_pool: {
      c.arity(1, 1);
      const Layout l = unblocked_layout(c);
      c.rank(0, 4);
      const Nchw x = split4(c.shape(0), l);
      out->shape = {x.n, x.c};
      break;
    }
    case OpKind::upsample_nearest2d: {
      c.arity(1, 1);
      const Layout l = unblocked_layout(c);
      c.rank(0, 4);
      const int64_t s = node.attrs.get_int("scale", 2);
      if (s < 1) c.fail("scale must be >= 1");
      Nchw x = split4(c.shape(0), l);
      x.h = c.mul(x.h, s);
      x.w = c.mul(x.w, s);
      out->shape = join4(x, l);
      out->layout = l;
      break;
    }
    case OpKind::concat:
      infer_concat(c, out);
      break;
    case OpKind::slice: {
      c.arity(1, 1);
      const Shape& x = c.shape(0);
      const int64_t axis = norm_axis(c, node.attrs.get_int("axis", 0), x.size());
      const int64_t start = node.attrs.get_int("start", 0);
      const int64_t end = node.attrs.get_int("end", x[static_cast<size_t>(axis)]);
      if (start < 0 || end > x[static_cast<size_t>(axis)] || start >= end) {
        c.fail("slice [" + std::to_string(start) + ", " + std::to_string(end) +
               ") out of range for " + to_string(x));
      }
      out->shape = x;
      out->shape[static_cast<size_t>(axis)] = end - start;
      break;
    }
    case OpKind::reshape:
      infer_reshape(c, out);
      break;
    case OpKind::transpose:
      infer_transpose(c, out);
      break;
    case OpKind::embedding: {
      c.arity(2, 2);
      c.rank(0, 2);
      if (c.in(1).dtype != DType::i32) c.fail("ids must be i32");
      out->shape = c.shape(1);
      out->shape.push_back(c.shape(0)[1]);
      break;
    }
  }
  if (bounded_elements(out->shape) < 0) {
    c.fail("result shape " + to_string(out->shape) +
           " has a negative dimension or more than 2^40 elements");
  }
  // Ops that only move data keep integer ids integer (e.g. ids reshaped before a gather), and so
  // does integer arithmetic on integers (position ids counted from a mask: RoBERTa's cumsum);
  // comparisons give 0/1 integers.
  auto all_integer = [&] {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (c.in(i).dtype != DType::i32) return false;
    }
    return !node.inputs.empty();
  };
  switch (node.op) {
    case OpKind::reshape:
    case OpKind::transpose:
    case OpKind::slice:
    case OpKind::concat:
    case OpKind::gather:
    case OpKind::expand:
    case OpKind::pad:
    case OpKind::cumsum:
      if (c.in(0).dtype == DType::i32) out->dtype = DType::i32;
      break;
    case OpKind::scatter:
      if (c.in(0).dtype == DType::i32 && c.in(2).dtype == DType::i32) out->dtype = DType::i32;
      break;
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::max:
    case OpKind::min:
    case OpKind::neg:
    case OpKind::abs:
    case OpKind::floor:
    case OpKind::ceil:
    case OpKind::round:
    case OpKind::sign:
      if (all_integer()) out->dtype = DType::i32;
      break;
    case OpKind::reduce_sum:
    case OpKind::reduce_max:
      if (all_integer()) out->dtype = DType::i32;
      break;
    case OpKind::where:  // the mask picks between integers
      if (c.in(1).dtype == DType::i32 && c.in(2).dtype == DType::i32) out->dtype = DType::i32;
      break;
    case OpKind::compare:
      out->dtype = DType::i32;
      break;
    default:
      break;
  }
  // Fused epilogue operands follow the op's inputs, one per binary step, and must broadcast to
  // the result without changing its shape.
  const Ctx full{graph, full_node};
  size_t next_operand = node.inputs.size();
  for (const EpilogueStep& step : full_node.epilogue) {
    if (is_binary_elementwise(step.op)) {
      if (step.input != static_cast<int>(next_operand++)) {
        c.fail("epilogue step reads input " + std::to_string(step.input) + ", expected " +
               std::to_string(next_operand - 1) + " (operands are appended in step order)");
      }
      if (broadcast(c, out->shape, full.shape(static_cast<size_t>(step.input))) != out->shape) {
        c.fail("epilogue operand would change the result's shape");
      }
    } else if (!is_unary_elementwise(step.op)) {
      c.fail("epilogue step '" + std::string(to_string(step.op)) + "' is not elementwise");
    }
  }
}

}  // namespace cuvil::ir
