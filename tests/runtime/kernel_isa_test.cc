// The run-time instruction-set choice of the kernels with per-ISA micro-kernels (cpu_isa.h):
// AVX-512 wherever the CPU has it, in the portable build (CUVIL_NATIVE=OFF) as in the native one;
// AVX2 (the families that have AVX2 tiles) or the portable tiles under CUVIL_CPU_DISABLE=avx512
// (ctest runtime.kernel_isa_disabled runs this program's kernel tests so), the portable tiles
// under CUVIL_ISA=ref; and the same results on every path.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "conv_test_graphs.h"
#include "passes/ir/graph.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/gemm_ukernel.h"
#include "runtime/cpu/quantize.h"
#include "runtime/kernel_table.h"
#include "runtime/reference/interpreter.h"
#include "runtime/thread_pool.h"

namespace cuvil::runtime {
namespace {

using cpu::KernelIsa;

bool env_lists(const char* var, const std::string& item) {
  const char* env = std::getenv(var);
  return env && (std::string(",") + env + ",").find("," + item + ",") != std::string::npos;
}

bool cpuid_has_avx512() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("fma");
}

// The environment as the process started (the GEMM's choice is made once from it; some tests
// set and unset CUVIL_CPU_DISABLE later).
const bool kAvx512DisabledAtStart = env_lists("CUVIL_CPU_DISABLE", "avx512");

bool cpuid_has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

// The families with AVX2 tiles; the others run the portable ones where the GEMM runs AVX2.
bool has_avx2_tiles(const std::string& family) {
  return family == "conv2d.direct_nhwc" || family == "conv2d.winograd_nhwc" ||
         family == "conv2d.depthwise_nhwc" || family == "elementwise_math" ||
         family == "sdpa.flash" || family == "norms";
}

bool isa_from_environment() {
  const char* isa = std::getenv("CUVIL_ISA");
  return isa && *isa;
}

TEST(KernelIsa, Avx512WhereTheCpuHasIt) {
  if (isa_from_environment()) GTEST_SKIP() << "CUVIL_ISA is set";
#if defined(__AVX512F__)
  std::cout << "built with AVX-512 (-march)\n";
#else
  std::cout << "built without AVX-512 (portable build)\n";
#endif
  const bool expect = cpuid_has_avx512() && !kAvx512DisabledAtStart;
  if (env_lists("CUVIL_CPU_DISABLE", "avx512") == kAvx512DisabledAtStart) {
    EXPECT_EQ(cpu::cpu_has_avx512(), expect);
  }
  EXPECT_EQ(cpu::active_gemm_isa() == cpu::GemmIsa::avx512, expect);
  const bool avx2 = !expect && cpuid_has_avx2() && !env_lists("CUVIL_CPU_DISABLE", "avx2");
  const KernelIsa want = expect ? KernelIsa::avx512 : avx2 ? KernelIsa::avx2 : KernelIsa::portable;
  EXPECT_EQ(cpu::kernel_isa(), want);
  const std::vector<cpu::KernelFamilyIsa> families = cpu::kernel_family_isas();
  EXPECT_EQ(families.size(), 7u);
  for (const cpu::KernelFamilyIsa& f : families) {
    std::cout << f.family << ": " << cpu::to_string(f.isa) << "\n";
    const bool portable_instead = want == KernelIsa::avx2 && !has_avx2_tiles(f.family);
    EXPECT_EQ(f.isa, portable_instead ? KernelIsa::portable : want) << f.family;
  }
}

TEST(KernelIsa, DisablingAvx512AlsoDisablesBf16AndVnni) {
  if (!env_lists("CUVIL_CPU_DISABLE", "avx512")) GTEST_SKIP() << "CUVIL_CPU_DISABLE lacks avx512";
  EXPECT_FALSE(cpu::cpu_has_avx512());
  EXPECT_FALSE(cpu::cpu_supports(cpu::GemmIsa::avx512));
  EXPECT_FALSE(cpu::cpu_has_avx512_bf16());
  EXPECT_FALSE(cpu::cpu_has_avx512_vnni());
}

TEST(KernelIsa, FollowsTheGemmOverride) {
  const cpu::GemmIsa before = cpu::active_gemm_isa();
  cpu::set_gemm_isa(cpu::GemmIsa::ref);
  EXPECT_EQ(cpu::kernel_isa(), KernelIsa::portable);
  for (const cpu::KernelFamilyIsa& f : cpu::kernel_family_isas()) {
    EXPECT_EQ(f.isa, KernelIsa::portable) << f.family;
  }
  if (cpu::cpu_supports(cpu::GemmIsa::avx2)) {
    cpu::set_gemm_isa(cpu::GemmIsa::avx2);
    EXPECT_EQ(cpu::kernel_isa(), KernelIsa::avx2);
    for (const cpu::KernelFamilyIsa& f : cpu::kernel_family_isas()) {
      EXPECT_EQ(f.isa, has_avx2_tiles(f.family) ? KernelIsa::avx2 : KernelIsa::portable)
          << f.family;
    }
  }
  if (cpu::cpu_supports(cpu::GemmIsa::avx512)) {
    cpu::set_gemm_isa(cpu::GemmIsa::avx512);
    EXPECT_EQ(cpu::kernel_isa(), KernelIsa::avx512);
  }
  cpu::set_gemm_isa(before);
}

// Node 0 of the graph through `kernel` under instruction set `isa` (prepare hook with the
// constant inputs first, as lowering does), on the graph's random inputs.
std::vector<float> run_under(cpu::GemmIsa isa, const ir::Graph& g, const std::string& kernel,
                             const std::vector<ir::Tensor>& inputs) {
  const cpu::GemmIsa before = cpu::active_gemm_isa();
  cpu::set_gemm_isa(isa);
  const ir::Node& n = g.nodes().at(0);
  const KernelInfo* k = find_kernel(n.op, kernel);
  EXPECT_NE(k, nullptr) << kernel;
  if (!k) return {};
  Step step;
  step.op = n.op;
  step.kernel = k->name;
  step.fn = k->fn;
  step.attrs = n.attrs;
  step.epilogue = n.epilogue;
  step.node_name = n.name;
  std::vector<const float*> in, constants;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::ValueId v = n.inputs[i];
    step.inputs.push_back(static_cast<int32_t>(i));
    step.input_shapes.push_back(g.value(v).shape);
    if (g.is_constant(v)) {
      in.push_back(g.constant_data(v).data());
      constants.push_back(in.back());
    } else {
      size_t index = 0;
      while (g.inputs()[index] != v) ++index;
      in.push_back(inputs[index].data.data());
      constants.push_back(nullptr);
    }
  }
  step.output_shape = g.value(n.output).shape;
  EXPECT_TRUE(!k->supports || k->supports(step)) << kernel;
  schedule_step(step, *k);
  if (k->prepare) step.prepared = k->prepare(step, constants.data());
  std::vector<float> out(static_cast<size_t>(ir::num_elements(step.output_shape)), -7.0f);
  ThreadPool pool(2);
  k->fn({step, in.data(), out.data(), pool});
  cpu::set_gemm_isa(before);
  return out;
}

// The kernel under the portable tiles and under AVX2 and AVX-512 where the CPU has them: each
// matches the reference, and the portable tiles.
void expect_same_on_every_path(const ir::Graph& g, const std::string& kernel, double bound) {
  const std::vector<ir::Tensor> inputs = ir::random_inputs(g, 11);
  const ir::Tensor want = reference::interpret(g, inputs).at(0);
  const ir::Shape& shape = want.shape;
  const ir::Tensor portable(shape, run_under(cpu::GemmIsa::ref, g, kernel, inputs));
  EXPECT_LT(ir::max_relative_error(portable, want), bound) << kernel << " portable";
  for (cpu::GemmIsa isa : {cpu::GemmIsa::avx2, cpu::GemmIsa::avx512}) {
    if (!cpu::cpu_supports(isa)) continue;
    const ir::Tensor fast(shape, run_under(isa, g, kernel, inputs));
    EXPECT_LT(ir::max_relative_error(fast, want), bound) << kernel << " " << cpu::to_string(isa);
    EXPECT_LT(ir::max_relative_error(fast, portable), bound)
        << kernel << " " << cpu::to_string(isa) << " vs portable";
  }
}

TEST(KernelIsa, ConvolutionsAgreeOnEveryPath) {
  using testing::conv_graph;
  using testing::ConvCase;
  // n, c, h, w, o, k, stride, pad, groups, bias: odd channel counts around the 16-lane vectors.
  const ConvCase direct{1, 19, 9, 11, 37, 3, 1, 1, 1, true};
  const ConvCase strided{2, 33, 13, 13, 70, 3, 2, 1, 1, false};
  const ConvCase pointwise{1, 48, 7, 9, 65, 1, 1, 0, 1, true};
  for (const ConvCase& cc : {direct, strided, pointwise}) {
    expect_same_on_every_path(conv_graph(cc, "nhwc", false, true), "conv2d.direct_nhwc", 1e-4);
    expect_same_on_every_path(conv_graph(cc, "nchw16c", false, false), "conv2d.direct_nchw16c",
                              1e-4);
  }
  expect_same_on_every_path(conv_graph(direct, "nhwc", false, true), "conv2d.winograd_nhwc", 1e-3);
  const ConvCase big{1, 40, 17, 15, 50, 3, 1, 1, 1, true};  // F(4x4) tiles
  expect_same_on_every_path(conv_graph(big, "nhwc", false, false), "conv2d.winograd_nhwc", 1e-3);
  const ConvCase depthwise{2, 35, 11, 11, 35, 3, 1, 1, 35, true};
  expect_same_on_every_path(conv_graph(depthwise, "nhwc", false, true), "conv2d.depthwise_nhwc",
                            1e-5);
}

ir::Graph one_node(ir::OpKind op, const std::vector<ir::Shape>& shapes, ir::Attrs attrs) {
  ir::Graph g;
  std::vector<ir::ValueId> in;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string name = "x";  // built by append: GCC 12 warns falsely on "x" + std::string
    name += std::to_string(i);
    in.push_back(g.add_input(name, shapes[i]));
  }
  g.mark_output(g.add_node(op, in, std::move(attrs), "node"));
  return g;
}

TEST(KernelIsa, AttentionNormsAndActivationsAgreeOnEveryPath) {
  // batch, heads, positions, head dim: grouped-query causal prefill at odd sizes.
  expect_same_on_every_path(
      one_node(ir::OpKind::sdpa, {{1, 6, 37, 72}, {1, 2, 37, 72}, {1, 2, 37, 72}},
               {{"causal", int64_t{1}}}),
      "sdpa.flash", 1e-4);
  expect_same_on_every_path(one_node(ir::OpKind::rms_norm, {{5, 1031}, {1031}}, {}), "rms_norm.cpu",
                            1e-4);
  expect_same_on_every_path(one_node(ir::OpKind::layer_norm, {{3, 2053}, {2053}, {2053}}, {}),
                            "layer_norm.cpu", 1e-4);
  expect_same_on_every_path(one_node(ir::OpKind::softmax, {{7, 77}}, {}), "softmax.cpu", 1e-4);
  for (ir::OpKind op : {ir::OpKind::gelu, ir::OpKind::silu, ir::OpKind::tanh, ir::OpKind::exp}) {
    const KernelInfo& k = default_kernel(op);
    expect_same_on_every_path(one_node(op, {{3, 45}}, {}), k.name, 1e-4);
  }
}

}  // namespace
}  // namespace cuvil::runtime
