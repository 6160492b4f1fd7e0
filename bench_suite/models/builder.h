// A thin layer over ir::Graph for writing model builders: hierarchical names ("layer1.0.conv1"),
// deterministic per-tensor seeds, and the layers the reference workloads are made of. Weights
// are lazy ir::ConstantInit descriptions; building never materialises them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::bench::models {

// FNV-1a: stable across compilers and runs, unlike std::hash.
uint64_t stable_hash(std::string_view text);

// The seed of the constant called `name` in a model built with `base_seed`. Deriving it from the
// name (not from a running counter) keeps a tensor's values fixed when unrelated options change,
// e.g. layer 0 of a 2-layer Llama equals layer 0 of the 32-layer one.
uint64_t constant_seed(uint64_t base_seed, std::string_view name);

// Option checks shared by the builders: a UserError "<model> options: <name> must be >= 1, got v".
void require_positive(std::string_view model, std::string_view name, int64_t value);

class GraphBuilder {
 public:
  explicit GraphBuilder(uint64_t seed) : seed_(seed) {}

  // While a Scope lives, every name made by the builder is prefixed with its part.
  class [[nodiscard]] Scope {
   public:
    Scope(GraphBuilder* builder, const std::string& part);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    GraphBuilder* builder_;
  };
  Scope scope(const std::string& part) { return Scope(this, part); }
  Scope scope(const std::string& part, int64_t index) {
    return Scope(this, part + "." + std::to_string(index));
  }
  std::string qualified(const std::string& leaf) const;

  ir::Graph& graph() { return graph_; }
  const ir::Shape& shape(ir::ValueId id) const { return graph_.value(id).shape; }

  // Graph inputs are named exactly as given (no scope prefix): they are the graph's interface.
  ir::ValueId input(const std::string& name, ir::Shape shape, ir::DType dtype = ir::DType::f32);

  // Constants named "<scope>.<leaf>" with a seed derived from that name.
  ir::ValueId normal(const std::string& leaf, ir::Shape shape, float mean, float stddev,
                     bool trainable = true);
  ir::ValueId uniform(const std::string& leaf, ir::Shape shape, float low, float high,
                      bool trainable = true);

  ir::ValueId op(ir::OpKind kind, std::vector<ir::ValueId> inputs, ir::Attrs attrs,
                 const std::string& leaf);

  // Layers. Parameters are "<scope>.<leaf>.weight" / ".bias"; the node is "<scope>.<leaf>".
  // Weights ~ N(0, gain / sqrt(fan_in)) so activations keep their scale through deep stacks.
  ir::ValueId conv2d(ir::ValueId x, const std::string& leaf, int64_t out_channels, int64_t kernel,
                     int64_t stride, int64_t pad, bool bias, float gain = 1.0f);
  ir::ValueId linear(ir::ValueId x, const std::string& leaf, int64_t out_features, bool bias);
  // gamma_scale < 1 damps a residual branch (as zero_init_residual does, but not to zero).
  ir::ValueId batch_norm(ir::ValueId x, const std::string& leaf, double eps,
                         float gamma_scale = 1.0f);
  ir::ValueId group_norm(ir::ValueId x, const std::string& leaf, int64_t groups, double eps);
  ir::ValueId layer_norm(ir::ValueId x, const std::string& leaf, double eps);
  ir::ValueId rms_norm(ir::ValueId x, const std::string& leaf, double eps);
  ir::ValueId embedding(ir::ValueId ids, const std::string& leaf, int64_t vocab, int64_t dim);

  ir::ValueId unary(ir::OpKind kind, ir::ValueId x, const std::string& leaf);
  ir::ValueId binary(ir::OpKind kind, ir::ValueId a, ir::ValueId b, const std::string& leaf);
  ir::ValueId reshape(ir::ValueId x, ir::Shape shape, const std::string& leaf);
  ir::ValueId transpose(ir::ValueId x, std::vector<int64_t> perm, const std::string& leaf);
  ir::ValueId concat(std::vector<ir::ValueId> xs, int64_t axis, const std::string& leaf);
  ir::ValueId slice(ir::ValueId x, int64_t axis, int64_t start, int64_t end,
                    const std::string& leaf);

  // Multi-head plumbing: [B, S, H*hd] -> [B, H, S, hd] and back.
  ir::ValueId split_heads(ir::ValueId x, int64_t heads, const std::string& leaf);
  ir::ValueId merge_heads(ir::ValueId x, const std::string& leaf);
  ir::ValueId sdpa(ir::ValueId q, ir::ValueId k, ir::ValueId v, bool causal,
                   const std::string& leaf);

  // Marks the outputs, verifies the graph and hands it over; the builder is spent afterwards.
  ir::Graph finish(const std::vector<ir::ValueId>& outputs);

 private:
  std::string claim(const std::string& full_name);
  ir::ValueId gamma(const std::string& leaf, int64_t size, float scale = 1.0f);
  ir::ValueId beta(const std::string& leaf, int64_t size);

  uint64_t seed_;
  ir::Graph graph_;
  std::vector<std::string> scopes_;
  std::unordered_set<std::string> names_;
};

}  // namespace cuvil::bench::models
