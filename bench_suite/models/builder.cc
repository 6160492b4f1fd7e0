#include "bench_suite/models/builder.h"

#include <cmath>

#include "base/error.h"
#include "passes/ir/verifier.h"

namespace cuvil::bench::models {

namespace {

// Scales of the made-up parameters: norms start near identity, biases near zero.
constexpr float kGammaLow = 0.9f;
constexpr float kGammaHigh = 1.1f;
constexpr float kBiasStddev = 0.02f;

}  // namespace

uint64_t stable_hash(std::string_view text) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (char c : text) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001B3ull;
  }
  return h;
}

void require_positive(std::string_view model, std::string_view name, int64_t value) {
  if (value < 1) {
    throw UserError(std::string(model) + " options: " + std::string(name) + " must be >= 1, got " +
                    std::to_string(value));
  }
}

uint64_t constant_seed(uint64_t base_seed, std::string_view name) {
  return stable_hash(name) ^ (base_seed * 0x9E3779B97F4A7C15ull);
}

GraphBuilder::Scope::Scope(GraphBuilder* builder, const std::string& part) : builder_(builder) {
  builder_->scopes_.push_back(part);
}

GraphBuilder::Scope::~Scope() {
  builder_->scopes_.pop_back();
}

std::string GraphBuilder::qualified(const std::string& leaf) const {
  std::string name;
  for (const std::string& part : scopes_) {
    name += part;
    name += '.';
  }
  return name + leaf;
}

std::string GraphBuilder::claim(const std::string& full_name) {
  CUVIL_CHECK(names_.insert(full_name).second,
              "model builder made the name '" + full_name + "' twice");
  return full_name;
}

ir::ValueId GraphBuilder::input(const std::string& name, ir::Shape shape, ir::DType dtype) {
  return graph_.add_input(claim(name), std::move(shape), dtype);
}

ir::ValueId GraphBuilder::normal(const std::string& leaf, ir::Shape shape, float mean, float stddev,
                                 bool trainable) {
  const std::string name = claim(qualified(leaf));
  return graph_.add_constant(name, std::move(shape),
                             ir::ConstantInit::normal(mean, stddev, constant_seed(seed_, name)),
                             trainable);
}

ir::ValueId GraphBuilder::uniform(const std::string& leaf, ir::Shape shape, float low, float high,
                                  bool trainable) {
  const std::string name = claim(qualified(leaf));
  return graph_.add_constant(name, std::move(shape),
                             ir::ConstantInit::uniform(low, high, constant_seed(seed_, name)),
                             trainable);
}

ir::ValueId GraphBuilder::op(ir::OpKind kind, std::vector<ir::ValueId> inputs, ir::Attrs attrs,
                             const std::string& leaf) {
  return graph_.add_node(kind, std::move(inputs), std::move(attrs), claim(qualified(leaf)));
}

ir::ValueId GraphBuilder::gamma(const std::string& leaf, int64_t size, float scale) {
  return uniform(leaf, {size}, kGammaLow * scale, kGammaHigh * scale);
}

ir::ValueId GraphBuilder::beta(const std::string& leaf, int64_t size) {
  return normal(leaf, {size}, 0.0f, kBiasStddev);
}

ir::ValueId GraphBuilder::conv2d(ir::ValueId x, const std::string& leaf, int64_t out_channels,
                                 int64_t kernel, int64_t stride, int64_t pad, bool bias,
                                 float gain) {
  const int64_t in_channels = shape(x).at(1);
  const int64_t fan_in = in_channels * kernel * kernel;
  std::vector<ir::ValueId> inputs = {
      x, normal(leaf + ".weight", {out_channels, in_channels, kernel, kernel}, 0.0f,
                gain / std::sqrt(static_cast<float>(fan_in)))};
  if (bias) inputs.push_back(beta(leaf + ".bias", out_channels));
  return op(ir::OpKind::conv2d, std::move(inputs),
            {{"stride", std::vector<int64_t>{stride, stride}},
             {"pad", std::vector<int64_t>{pad, pad}},
             {"groups", int64_t{1}},
             {"layout", std::string("nchw")}},
            leaf);
}

ir::ValueId GraphBuilder::linear(ir::ValueId x, const std::string& leaf, int64_t out_features,
                                 bool bias) {
  const int64_t in_features = shape(x).back();
  std::vector<ir::ValueId> inputs = {x, normal(leaf + ".weight", {out_features, in_features}, 0.0f,
                                               1.0f / std::sqrt(static_cast<float>(in_features)))};
  if (bias) inputs.push_back(beta(leaf + ".bias", out_features));
  return op(ir::OpKind::linear, std::move(inputs), {}, leaf);
}

ir::ValueId GraphBuilder::batch_norm(ir::ValueId x, const std::string& leaf, double eps,
                                     float gamma_scale) {
  const int64_t c = shape(x).at(1);
  const ir::ValueId scale = gamma(leaf + ".weight", c, gamma_scale);
  const ir::ValueId shift = beta(leaf + ".bias", c);
  // Running statistics are buffers, not parameters; the variance must stay positive.
  const ir::ValueId mean = normal(leaf + ".running_mean", {c}, 0.0f, 0.1f, false);
  const ir::ValueId var = uniform(leaf + ".running_var", {c}, 0.5f, 1.5f, false);
  return op(ir::OpKind::batch_norm, {x, scale, shift, mean, var},
            {{"eps", eps}, {"layout", std::string("nchw")}}, leaf);
}

ir::ValueId GraphBuilder::group_norm(ir::ValueId x, const std::string& leaf, int64_t groups,
                                     double eps) {
  const int64_t c = shape(x).at(1);
  const ir::ValueId g = gamma(leaf + ".weight", c);
  const ir::ValueId b = beta(leaf + ".bias", c);
  return op(ir::OpKind::group_norm, {x, g, b},
            {{"groups", groups}, {"eps", eps}, {"layout", std::string("nchw")}}, leaf);
}

ir::ValueId GraphBuilder::layer_norm(ir::ValueId x, const std::string& leaf, double eps) {
  const int64_t d = shape(x).back();
  const ir::ValueId g = gamma(leaf + ".weight", d);
  const ir::ValueId b = beta(leaf + ".bias", d);
  return op(ir::OpKind::layer_norm, {x, g, b}, {{"eps", eps}}, leaf);
}

ir::ValueId GraphBuilder::rms_norm(ir::ValueId x, const std::string& leaf, double eps) {
  const ir::ValueId g = gamma(leaf + ".weight", shape(x).back());
  return op(ir::OpKind::rms_norm, {x, g}, {{"eps", eps}}, leaf);
}

ir::ValueId GraphBuilder::embedding(ir::ValueId ids, const std::string& leaf, int64_t vocab,
                                    int64_t dim) {
  // Unit-variance rows: the first RMSNorm sees O(1) activations, as in a trained model.
  const ir::ValueId table = normal(leaf + ".weight", {vocab, dim}, 0.0f, 1.0f);
  return op(ir::OpKind::embedding, {table, ids}, {}, leaf);
}

ir::ValueId GraphBuilder::unary(ir::OpKind kind, ir::ValueId x, const std::string& leaf) {
  return op(kind, {x}, {}, leaf);
}

ir::ValueId GraphBuilder::binary(ir::OpKind kind, ir::ValueId a, ir::ValueId b,
                                 const std::string& leaf) {
  return op(kind, {a, b}, {}, leaf);
}

ir::ValueId GraphBuilder::reshape(ir::ValueId x, ir::Shape shape, const std::string& leaf) {
  return op(ir::OpKind::reshape, {x}, {{"shape", std::move(shape)}}, leaf);
}

ir::ValueId GraphBuilder::transpose(ir::ValueId x, std::vector<int64_t> perm,
                                    const std::string& leaf) {
  return op(ir::OpKind::transpose, {x}, {{"perm", std::move(perm)}}, leaf);
}

ir::ValueId GraphBuilder::concat(std::vector<ir::ValueId> xs, int64_t axis,
                                 const std::string& leaf) {
  return op(ir::OpKind::concat, std::move(xs), {{"axis", axis}}, leaf);
}

ir::ValueId GraphBuilder::slice(ir::ValueId x, int64_t axis, int64_t start, int64_t end,
                                const std::string& leaf) {
  return op(ir::OpKind::slice, {x}, {{"axis", axis}, {"start", start}, {"end", end}}, leaf);
}

ir::ValueId GraphBuilder::split_heads(ir::ValueId x, int64_t heads, const std::string& leaf) {
  const ir::Shape s = shape(x);
  CUVIL_CHECK(s.size() == 3 && s[2] % heads == 0, "split_heads needs [B, S, H*hd]");
  const ir::ValueId r = reshape(x, {s[0], s[1], heads, s[2] / heads}, leaf + ".reshape");
  return transpose(r, {0, 2, 1, 3}, leaf + ".transpose");
}

ir::ValueId GraphBuilder::merge_heads(ir::ValueId x, const std::string& leaf) {
  const ir::Shape s = shape(x);
  CUVIL_CHECK(s.size() == 4, "merge_heads needs [B, H, S, hd]");
  const ir::ValueId t = transpose(x, {0, 2, 1, 3}, leaf + ".transpose");
  return reshape(t, {s[0], s[2], s[1] * s[3]}, leaf + ".reshape");
}

ir::ValueId GraphBuilder::sdpa(ir::ValueId q, ir::ValueId k, ir::ValueId v, bool causal,
                               const std::string& leaf) {
  return op(ir::OpKind::sdpa, {q, k, v}, {{"causal", int64_t{causal ? 1 : 0}}}, leaf);
}

ir::Graph GraphBuilder::finish(const std::vector<ir::ValueId>& outputs) {
  for (ir::ValueId out : outputs) graph_.mark_output(out);
  ir::verify(graph_);
  return std::move(graph_);
}

}  // namespace cuvil::bench::models
