#include "passes/registry.h"

#include "passes/attention_tiling.h"
#include "passes/conv_tiling.h"
#include "passes/cuda_attention_tiling.h"
#include "passes/cuda_gemm_tiling.h"
#include "passes/cuda_graph.h"
#include "passes/cuda_lowering.h"
#include "passes/cuda_precision.h"
#include "passes/fold_batchnorm.h"
#include "passes/fuse_elementwise.h"
#include "passes/gemm_tiling.h"
#include "passes/layout.h"
#include "passes/memory_plan.h"
#include "passes/python_binding.h"
#include "passes/recognize_patterns.h"
#include "passes/reduced_precision.h"
#include "passes/select_lowering.h"
#include "passes/targets.h"
#include "passes/threading.h"

namespace cuvil::passes {

namespace {
std::vector<std::unique_ptr<Pass>> make_registry() {
  // Order matters: it is the default pipeline. Folding first removes BNs before layout and
  // fusion see them; layout runs before fusion so epilogue operands are already in place;
  // memory planning needs the final node list.
  std::vector<std::unique_ptr<Pass>> passes;
  // Imported models first have their decomposed patterns raised to the IR's fused ops.
  passes.push_back(std::make_unique<RecognizePatternsPass>());
  passes.push_back(std::make_unique<FoldBatchNormPass>());
  passes.push_back(std::make_unique<LayoutPass>());
  passes.push_back(std::make_unique<FuseElementwisePass>());
  passes.push_back(std::make_unique<SelectLoweringPass>());
  // After every pass that picks kernels (select-lowering): a non-f32 precision wins.
  passes.push_back(std::make_unique<ReducedPrecisionPass>());
  passes.push_back(std::make_unique<AttentionTilingPass>());
  passes.push_back(std::make_unique<GemmTilingPass>());
  passes.push_back(std::make_unique<ConvTilingPass>());
  passes.push_back(std::make_unique<ThreadingPass>());
  passes.push_back(std::make_unique<PythonBindingPass>());
  passes.push_back(std::make_unique<MemoryPlanPass>());
  // CUDA passes (applies_to "cuda" only) after every CPU pass, so CPU pipelines keep their order.
  // They only set node attributes, so running after memory planning changes nothing for it.
  passes.push_back(std::make_unique<CudaLoweringPass>());
  passes.push_back(std::make_unique<CudaPrecisionPass>());
  passes.push_back(std::make_unique<CudaAttentionTilingPass>());
  passes.push_back(std::make_unique<CudaGemmTilingPass>());
  passes.push_back(std::make_unique<CudaGraphPass>());
  return passes;
}
}  // namespace

std::string applicable_targets(const Pass& pass) {
  std::string out;
  for (std::string_view target : kTargets) {
    if (pass.applies_to(target)) out += (out.empty() ? "" : ", ") + std::string(target);
  }
  return out;
}

const std::vector<std::unique_ptr<Pass>>& pass_registry() {
  static const std::vector<std::unique_ptr<Pass>> registry = make_registry();
  return registry;
}

const Pass* find_pass(std::string_view name) {
  for (const auto& pass : pass_registry()) {
    if (pass->name() == name) return pass.get();
  }
  return nullptr;
}

}  // namespace cuvil::passes
