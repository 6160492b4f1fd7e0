// Shared pieces of the oneDNN library lowering: the CPU engine, thread-count control (oneDNN's
// OpenMP team gets exactly the runtime pool's thread count), memory descriptors of our physical
// shapes, and the mapping of a step's fused epilogue onto oneDNN post-ops.
#pragma once

#include <dnnl.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/plan.h"

namespace cuvil::runtime {
class ThreadPool;
}

namespace cuvil::runtime::onednn {

dnnl::engine& cpu_engine();
// oneDNN (OpenMP build) sizes its parallel regions from the calling thread's OpenMP setting.
void use_threads(int threads);
int default_threads();

// Dense row-major descriptor of `dims`.
dnnl::memory::desc dense_desc(const dnnl::memory::dims& dims);

// A binary epilogue operand as a oneDNN post-op argument: its step input and descriptor.
struct BinaryOperand {
  int post_op = 0;  // index in the post-op list
  int input = 0;    // step input
  dnnl::memory::desc desc;
};

// The step's epilogue as post-ops when every step maps; `operand_desc(input)` gives a binary
// operand's descriptor in the primitive's logical dims (or returns false if it cannot).
bool epilogue_post_ops(const Step& step,
                       const std::function<bool(int input, dnnl::memory::desc*)>& operand_desc,
                       dnnl::post_ops* ops, std::vector<BinaryOperand>* operands);

// A step's primitive and weights, made for one thread count. Kernels keep one per thread count
// they have run with (the OpenMP decomposition is fixed at primitive creation).
struct Prepared {
  dnnl::primitive primitive;
  dnnl::memory::desc scratchpad;  // what the primitive needs per execution (user-managed)
  dnnl::memory::desc src, weights, bias, dst;
  dnnl::memory weights_memory;  // reordered constant weights; empty: use the step's input
  bool fused_epilogue = false;
  std::vector<BinaryOperand> operands;
};

// Per-step cache of Prepared by thread count, filled at lowering for the default thread count.
class PreparedCache {
 public:
  using Make = std::function<Prepared(int threads, const float* const* constants)>;
  PreparedCache(Make make, bool constant_weights, const float* const* constants);
  // The entry for `threads`, made on first use with the kernel's current inputs.
  const Prepared& get(int threads, const float* const* inputs) const;

 private:
  Make make_;
  bool constant_weights_;
  mutable std::mutex mutex_;
  mutable std::map<int, std::unique_ptr<Prepared>> by_threads_;
};

// Attributes every primitive is made with: a user-managed scratchpad, which execute() gives from
// a buffer of the calling thread. With oneDNN's library scratchpad (one shared buffer, Debian's
// build) a primitive must run on the thread that made it, and two Python threads calling one
// model at once corrupt each other's scratch (a crash in NCHW convolutions).
dnnl::primitive_attr primitive_attr();

// Runs `p` on the step's buffers, then the epilogue when it was not fused.
void execute(const Prepared& p, const KernelArgs& a, int weights_input, int bias_input);

}  // namespace cuvil::runtime::onednn
