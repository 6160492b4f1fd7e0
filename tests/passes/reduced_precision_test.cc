#include <gtest/gtest.h>

#include <algorithm>

#include <cstdlib>
#include <tuple>

#include "base/error.h"
#include "passes/lower.h"
#include "passes/pipeline.h"
#include "passes/reduced_precision.h"
#include "passes/select_lowering.h"
#include "passes/target_cpu.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/quantize.h"
#include "runtime/executor.h"
#include "runtime/reference/interpreter.h"
#include "tests/passes/test_support.h"

namespace cuvil::passes {
namespace {

using ir::Graph;
using ir::OpKind;

// The default pipeline with reduced-precision's parameters overridden.
PipelineConfig with_precision(const ParamMap& overrides) {
  PipelineConfig config = default_pipeline("cpu");
  for (PassInvocation& p : config.passes) {
    if (p.name != "reduced-precision") continue;
    for (const auto& [k, v] : overrides) p.params[k] = v;
  }
  return config;
}

using testing::compiled_vs_reference;

int count_precision(const Graph& g, OpKind op, const std::string& precision) {
  int count = 0;
  for (const ir::Node& n : g.nodes()) {
    count += n.op == op && n.attrs.get_string("precision", "") == precision ? 1 : 0;
  }
  return count;
}

// VDPBF16PS: flash attention, Winograd and the direct stems in bf16.
bool has_bf16() {
  return runtime::cpu::cpu_has_avx512_bf16();
}
// bf16 weight products: on VDPBF16PS, or widened to fp32 on any AVX-512 CPU.
bool has_bf16_products() {
  return runtime::cpu::cpu_has_avx512();
}
bool has_vnni() {
  return runtime::cpu::cpu_has_avx512_vnni();
}

TEST(ReducedPrecision, DefaultIsF32AndTouchesNothing) {
  Graph g = testing::tiny_decoder(1, 5, 24);
  testing::run_pass(g, "reduced-precision");
  for (const ir::Node& n : g.nodes()) {
    EXPECT_FALSE(n.attrs.has("precision")) << n.name;
    EXPECT_FALSE(n.attrs.has("impl")) << n.name;
  }
}

TEST(ReducedPrecision, Bf16LinearsPickTheBf16KernelAndMarkWeights) {
  if (!has_bf16_products()) GTEST_SKIP() << "CPU lacks avx512";
  Graph g = testing::tiny_decoder(1, 5, 24);
  testing::run_pass(g, "reduced-precision",
                    {{"linear_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
  int linears = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::linear) continue;
    ++linears;
    EXPECT_EQ(n.attrs.get_string("impl", ""), "linear.bf16") << n.name;
    EXPECT_EQ(g.value(n.inputs[1]).dtype, ir::DType::bf16) << n.name;
    EXPECT_EQ(g.value(n.output).dtype, ir::DType::f32) << n.name;  // results stay fp32
  }
  EXPECT_GT(linears, 0);
  EXPECT_EQ(count_precision(g, OpKind::linear, "bf16"), linears);
}

// Stated bound: kBf16Tolerance max relative error against the fp32 reference interpreter.
TEST(ReducedPrecision, Bf16DecoderMatchesReferenceWithinBound) {
  if (!has_bf16_products()) GTEST_SKIP() << "CPU lacks avx512";
  const Graph g = testing::tiny_decoder(2, 37, 64);
  const PipelineConfig config = with_precision({{"linear_dtype", std::string("bf16")},
                                                {"matmul_dtype", std::string("bf16")},
                                                {"attention_dtype", std::string("bf16")},
                                                {"min_k", int64_t{1}}});
  for (int threads : {1, 2}) {
    const double e = compiled_vs_reference(g, config, threads);
    EXPECT_LE(e, kBf16Tolerance) << threads;
    EXPECT_GT(e, 1e-6);  // it really ran in reduced precision
  }
}

// Attention with more than 16 query rows per kv head runs flash in bf16; its operands are
// activations, so no value's dtype changes.
TEST(ReducedPrecision, Bf16AttentionPicksTheBf16FlashKernel) {
  if (!has_bf16()) GTEST_SKIP() << "CPU lacks avx512_bf16";
  Graph g = testing::tiny_decoder(1, 9, 64);  // 2 query heads per kv head: 18 rows
  testing::run_pass(g, "reduced-precision",
                    {{"attention_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
  int sdpas = 0;
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::sdpa) continue;
    ++sdpas;
    EXPECT_EQ(n.attrs.get_string("impl", ""), "sdpa.flash_bf16");
    EXPECT_EQ(n.attrs.get_string("precision", ""), "bf16");
    for (ir::ValueId in : n.inputs) EXPECT_EQ(g.value(in).dtype, ir::DType::f32);
  }
  EXPECT_EQ(sdpas, 1);
}

// Decode-like attention (at most 16 query rows per kv head) stays f32, and says why.
TEST(ReducedPrecision, DecodeLikeAttentionStaysF32) {
  if (!has_bf16()) GTEST_SKIP() << "CPU lacks avx512_bf16";
  Graph g = testing::tiny_decoder(1, 8, 64);  // 16 rows per kv head
  testing::run_pass(g, "reduced-precision",
                    {{"attention_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::sdpa) continue;
    EXPECT_FALSE(n.attrs.has("impl"));
    EXPECT_EQ(n.attrs.get_string("precision", ""), "f32");
    EXPECT_NE(n.attrs.get_string("precision.fallback", "").find("decode"), std::string::npos);
  }
}

// A weight large enough to be converted and packed on all hardware threads at lowering
// (runtime::cpu::kParallelPrepareElements) gives the same product.
TEST(ReducedPrecision, Bf16LargeWeightPackedOnAllThreadsMatchesReference) {
  if (!has_bf16_products()) GTEST_SKIP() << "CPU lacks avx512";
  Graph g;
  const ir::ValueId x = g.add_input("x", {9, 1031});
  g.mark_output(
      g.add_node(OpKind::linear, {x, testing::random_constant(g, "w", {1027, 1031}, 3)}, {}, "fc"));
  const PipelineConfig config = with_precision({{"linear_dtype", std::string("bf16")}});
  EXPECT_LE(compiled_vs_reference(g, config, 2), kBf16Tolerance);
}

// The declared bytes count a weight a reduced-precision kernel replaced at the size it reads:
// 2 bytes per element for bf16, 1 for int8; activations and outputs stay fp32.
TEST(ReducedPrecision, DeclaredBytesCountReplacedWeightsAtTheirStorage) {
  Graph g;
  const ir::ValueId x = g.add_input("x", {9, 64});
  g.mark_output(
      g.add_node(OpKind::linear, {x, testing::random_constant(g, "w", {32, 64}, 3)}, {}, "fc"));
  const double activations = (9 * 64 + 9 * 32) * 4.0, weight = 32 * 64;
  EXPECT_DOUBLE_EQ(compile(g, default_pipeline("cpu"), 1).plan.steps[0].bytes,
                   activations + 4 * weight);
  for (const auto& [dtype, bytes, has] :
       {std::tuple{"bf16", 2.0, has_bf16_products()}, std::tuple{"int8", 1.0, has_vnni()}}) {
    if (!has) continue;
    const Compiled c = compile(
        g, with_precision({{"linear_dtype", std::string(dtype)}, {"min_k", int64_t{1}}}), 1);
    ASSERT_EQ(c.plan.steps[0].kernel, std::string("linear.") + dtype);
    EXPECT_DOUBLE_EQ(c.plan.steps[0].bytes, activations + bytes * weight) << dtype;
  }
}

TEST(ReducedPrecision, Bf16ConvNetMatchesReferenceWithinBound) {
  if (!has_bf16_products()) GTEST_SKIP() << "CPU lacks avx512";
  const Graph g = testing::tiny_resnet(2, 16, 9);
  const PipelineConfig config = with_precision({{"conv_dtype", std::string("bf16")},
                                                {"linear_dtype", std::string("bf16")},
                                                {"min_k", int64_t{1}}});
  EXPECT_LE(compiled_vs_reference(g, config, 2), kBf16Tolerance);
}

// The bf16 and int8 conv kernels have no dilation: a dilated conv stays f32 (on im2col) while the
// undilated one beside it is converted, and the whole still matches the reference.
TEST(ReducedPrecision, DilatedConvsStayF32) {
  for (const auto& [dtype, available] :
       {std::tuple{"bf16", has_bf16_products()}, std::tuple{"int8", has_vnni()}}) {
    if (!available) continue;
    Graph g;
    const ir::ValueId x = g.add_input("x", {1, 16, 9, 7});
    ir::ValueId y = testing::add_dilated_conv(g, x, 16, 16, 3, {2, 2}, 1, {2, 2}, 1);
    g.mark_output(testing::add_conv(g, y, 16, 16, 3, 1, true, 3));
    const PipelineConfig config =
        with_precision({{"conv_dtype", std::string(dtype)}, {"min_k", int64_t{1}}});
    const Compiled compiled = compile(g, config, 2);
    for (const ir::Node& n : compiled.graph.nodes()) {
      if (n.op != OpKind::conv2d) continue;
      const bool dilated = n.attrs.has("dilation");
      EXPECT_EQ(n.attrs.get_string("precision", "f32"), dilated ? "f32" : dtype) << n.name;
    }
    EXPECT_LE(compiled_vs_reference(g, config, 2), std::string(dtype) == "bf16" ? 1e-1 : 5e-2);
  }
}

// A 3x3 convolution select-lowering gave to Winograd stays Winograd in bf16; the others take the
// bf16 GEMM kernel.
TEST(ReducedPrecision, Bf16KeepsWinogradForThreeByThreeConvs) {
  if (!has_bf16()) GTEST_SKIP() << "CPU lacks avx512_bf16";
  for (const char* lowering : {"winograd", "direct"}) {
    Graph g = testing::tiny_resnet(1, 16, 9);
    testing::run_pass(g, "layout", {{"memory_layout", std::string("nhwc")}});
    testing::run_pass(g, "select-lowering",
                      {{"conv_3x3", std::string(lowering)}, {"winograd_min_tiles", int64_t{0}}});
    testing::run_pass(g, "reduced-precision",
                      {{"conv_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
    int winograd = 0;
    for (const ir::Node& n : g.nodes()) {
      if (n.op != OpKind::conv2d || n.attrs.get_string("precision", "") != "bf16") continue;
      const bool three = conv_class(g, n) == "conv_3x3" && n.attrs.get_int("groups", 1) == 1;
      // Below 8 input channels select-lowering runs a 3x3 direct (the stem here).
      const bool want_winograd =
          three && std::string(lowering) == "winograd" && g.value(n.inputs[1]).shape[1] >= 8;
      EXPECT_EQ(n.attrs.get_string("impl", ""),
                want_winograd ? "conv2d.winograd_bf16" : "conv2d.bf16")
          << lowering << " " << n.name;
      winograd += want_winograd ? 1 : 0;
    }
    if (std::string(lowering) == "winograd") {
      EXPECT_GT(winograd, 0);
    }
  }
}

// Stated bound: int8 5e-2 (per-channel weights, dynamic per-tensor activations).
TEST(ReducedPrecision, Int8ConvNetMatchesReferenceWithinBound) {
  if (!has_vnni()) GTEST_SKIP() << "CPU lacks avx512_vnni";
  const Graph g = testing::tiny_resnet(3, 16, 11);
  const PipelineConfig config = with_precision({{"conv_dtype", std::string("int8")},
                                                {"linear_dtype", std::string("int8")},
                                                {"min_k", int64_t{1}}});
  Compiled compiled = compile(g, config, 2);
  EXPECT_GT(count_precision(compiled.graph, OpKind::conv2d, "int8"), 0);
  for (int threads : {1, 2}) {
    const double e = compiled_vs_reference(g, config, threads);
    EXPECT_LE(e, kInt8Tolerance) << threads;
    EXPECT_GT(e, 1e-6);
  }
}

TEST(ReducedPrecision, NchwConvsStayF32WithAReason) {
  Graph g = testing::tiny_resnet(1, 8, 7);  // nchw: the layout pass did not run
  testing::run_pass(g, "reduced-precision",
                    {{"conv_dtype", std::string("int8")}, {"min_k", int64_t{1}}});
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::conv2d) continue;
    EXPECT_EQ(n.attrs.get_string("precision", ""), "f32") << n.name;
    EXPECT_FALSE(n.attrs.has("impl")) << n.name;
  }
}

// `g` laid out NHWC, then through reduced-precision with conv_dtype `dtype` and `min_k`.
void nhwc_in_precision(Graph& g, const std::string& dtype, int64_t min_k) {
  testing::run_pass(g, "layout", {{"memory_layout", std::string("nhwc")}});
  testing::run_pass(g, "reduced-precision", {{"conv_dtype", dtype}, {"min_k", min_k}});
}

// One k x k convolution (bias, `o` outputs, `stride`) on `image` ([n, c, h, w]), through
// nhwc_in_precision.
Graph one_conv_in_precision(const ir::Shape& image, int64_t o, int64_t k, int64_t stride,
                            const std::string& dtype, int64_t min_k) {
  Graph g;
  const ir::ValueId x = g.add_input("image", image);
  g.mark_output(testing::add_conv(g, x, image[1], o, k, stride, true, 10));
  nhwc_in_precision(g, dtype, min_k);
  return g;
}

std::vector<const ir::Node*> convs_of(const Graph& g) {
  std::vector<const ir::Node*> out;
  for (const ir::Node& n : g.nodes()) {
    if (n.op == OpKind::conv2d) out.push_back(&n);
  }
  return out;
}

// Convolutions of few input channels go bf16 on conv2d.bf16's direct path: a stem at stride 1
// (tiny_resnet's: 3 channels, 3x3, every other window starting inside a bf16 pair) and at stride
// 2 (ResNet's: 7x7/2). A 1x1 stride-1 product of few channels stays f32 with the reason: its
// GEMM has nothing to gain. 16 channels and more go bf16.
TEST(ReducedPrecision, Bf16StemsOfFewChannelsGoBf16) {
  if (!has_bf16()) GTEST_SKIP() << "CPU lacks avx512_bf16";
  for (int64_t stride : {1, 2}) {
    Graph g;
    if (stride == 1) {
      g = testing::tiny_resnet(1, 16, 9);
      nhwc_in_precision(g, "bf16", 1);
    } else {
      g = one_conv_in_precision({1, 3, 17, 17}, 16, 7, 2, "bf16", 1);
    }
    int stems = 0;
    for (const ir::Node* n : convs_of(g)) {
      stems += g.value(n->inputs[1]).shape[1] < 16 ? 1 : 0;
      EXPECT_EQ(n->attrs.get_string("precision", ""), "bf16") << n->name;
      EXPECT_EQ(n->attrs.get_string("impl", ""), "conv2d.bf16") << n->name;
      EXPECT_FALSE(n->attrs.has("precision.fallback")) << n->name;
    }
    EXPECT_EQ(stems, 1) << "stride " << stride;
  }
}

TEST(ReducedPrecision, Bf16OneByOneOfFewChannelsStaysF32WithAReason) {
  if (!has_bf16_products()) GTEST_SKIP() << "CPU lacks avx512";
  const Graph g = one_conv_in_precision({1, 3, 9, 9}, 32, 1, 1, "bf16", 1);
  const std::vector<const ir::Node*> convs = convs_of(g);
  ASSERT_EQ(convs.size(), 1u);
  EXPECT_EQ(convs[0]->attrs.get_string("precision", ""), "f32");
  EXPECT_NE(convs[0]->attrs.get_string("precision.fallback", "").find("input channels"),
            std::string::npos);
}

// min_k weighs converting A per product against the products; the bf16 direct path converts the
// input once, so a 3-channel 3x3 stem (K = 27, below the default 32) still goes bf16, and its
// kernel is not attributed to min_k. int8 has no direct path: min_k keeps the same stem f32.
TEST(ReducedPrecision, Bf16DirectStemsIgnoreMinK) {
  if (!has_bf16() || !has_vnni()) GTEST_SKIP() << "CPU lacks avx512_bf16 or avx512_vnni";
  const Graph bf16 = one_conv_in_precision({1, 3, 17, 17}, 16, 3, 2, "bf16", 32);
  const std::vector<const ir::Node*> stem = convs_of(bf16);
  ASSERT_EQ(stem.size(), 1u);
  EXPECT_EQ(stem[0]->attrs.get_string("precision", ""), "bf16");
  EXPECT_EQ(stem[0]->attrs.origin("impl").find("min_k"), std::string::npos);
  EXPECT_NE(stem[0]->attrs.origin("impl").find("conv_dtype"), std::string::npos);

  const Graph int8 = one_conv_in_precision({1, 3, 17, 17}, 16, 3, 2, "int8", 32);
  const std::vector<const ir::Node*> int8_stem = convs_of(int8);
  ASSERT_EQ(int8_stem.size(), 1u);
  EXPECT_EQ(int8_stem[0]->attrs.get_string("precision", ""), "f32");
  EXPECT_EQ(int8_stem[0]->attrs.get_string("precision.fallback", ""), "K below min_k");
}

TEST(ReducedPrecision, SmallReductionsStayF32BelowMinK) {
  Graph g = testing::tiny_decoder(1, 5, 24);  // every linear has K < 100
  testing::run_pass(g, "reduced-precision",
                    {{"linear_dtype", std::string("bf16")}, {"min_k", int64_t{100}}});
  EXPECT_EQ(count_precision(g, OpKind::linear, "bf16"), 0);
  EXPECT_GT(count_precision(g, OpKind::linear, "f32"), 0);
}

TEST(ReducedPrecision, CpuWithoutTheInstructionsFallsBackToF32) {
  setenv("CUVIL_CPU_DISABLE", "avx512_bf16,avx512_vnni", 1);
  Graph g = testing::tiny_decoder(1, 5, 24);
  testing::run_pass(g, "reduced-precision",
                    {{"linear_dtype", std::string("int8")}, {"min_k", int64_t{1}}});
  unsetenv("CUVIL_CPU_DISABLE");
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::linear) continue;
    EXPECT_EQ(n.attrs.get_string("precision", ""), "f32");
    EXPECT_EQ(n.attrs.get_string("precision.fallback", ""), "target cpu lacks avx512_vnni");
    EXPECT_FALSE(n.attrs.has("impl"));
  }
}

// The config's cpu_features decide, not the host: one file, one plan on every host.
TEST(ReducedPrecision, ATargetWithoutBf16StaysF32OnAnyHost) {
  PipelineConfig config =
      with_precision({{"linear_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
  config.cpu_features = std::vector<std::string>{};
  config.source = "plain.cuvilpass";
  Graph g = testing::tiny_decoder(1, 5, 24);
  run_pipeline(g, config);
  EXPECT_EQ(count_precision(g, OpKind::linear, "bf16"), 0);
  for (const ir::Node& n : g.nodes()) {
    if (n.op != OpKind::linear) continue;
    EXPECT_EQ(n.attrs.get_string("precision.fallback", ""), "target cpu lacks avx512_bf16");
  }
}

// A plan compiled for avx512_bf16 runs on an AVX-512 host without it, on the widened tiles;
// a host without AVX-512 cannot run it, and lowering says so instead of running another plan.
TEST(ReducedPrecision, ATargetWithBf16IsCompiledForBf16EvenOnAHostWithout) {
  if (!has_bf16_products()) GTEST_SKIP() << "CPU lacks avx512";
  setenv("CUVIL_CPU_DISABLE", "avx512_bf16", 1);
  PipelineConfig config =
      with_precision({{"linear_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
  config.cpu_features = std::vector<std::string>{"avx512_bf16"};
  Graph g = testing::tiny_decoder(1, 5, 24);
  run_pipeline(g, config);
  EXPECT_GT(count_precision(g, OpKind::linear, "bf16"), 0);
  EXPECT_NO_THROW(lower(g, LowerOptions{}));
  EXPECT_LE(compiled_vs_reference(testing::tiny_decoder(1, 5, 24), config, 2), kBf16Tolerance);
  setenv("CUVIL_CPU_DISABLE", "avx512_bf16,avx512", 1);
  EXPECT_THROW(lower(g, LowerOptions{}), UserError);
  unsetenv("CUVIL_CPU_DISABLE");
}

// What the target CPU makes of bf16 is said once per process, however often the pass runs (`run`
// compiles every rung): the notice names the target, so another target is named again.
TEST(ReducedPrecision, SaysOncePerProcessWhatTheTargetWidens) {
  auto notices = [](const std::string& source) {
    Graph g = testing::tiny_decoder(1, 9, 64);
    set_target_cpu(g, {"avx512"}, source);
    ::testing::internal::CaptureStderr();
    testing::run_pass(g, "reduced-precision",
                      {{"linear_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
    const std::string err = ::testing::internal::GetCapturedStderr();
    size_t count = 0;
    for (size_t at = err.find("weights widened"); at != std::string::npos;
         at = err.find("weights widened", at + 1))
      ++count;
    return count;
  };
  EXPECT_EQ(notices("once-a.cuvilpass"), 1u);
  EXPECT_EQ(notices("once-a.cuvilpass"), 0u);
  EXPECT_EQ(notices("once-b.cuvilpass"), 1u);
}

// A target with AVX-512 and no avx512_bf16 (a Skylake-SP to Ice Lake class CPU) runs bf16 weight
// products widened, and keeps f32 what only VDPBF16PS runs: flash attention, Winograd, the
// direct stems, and matmuls of two activations. Decided from the target, on any host.
TEST(ReducedPrecision, AnAvx512TargetWithoutBf16WidensOnlyWeightProducts) {
  Graph decoder = testing::tiny_decoder(1, 9, 64);  // 18 query rows per kv head: flash-sized
  set_target_cpu(decoder, {"avx512"}, "widened.cuvilpass");
  testing::run_pass(decoder, "reduced-precision",
                    {{"linear_dtype", std::string("bf16")},
                     {"attention_dtype", std::string("bf16")},
                     {"min_k", int64_t{1}}});
  int linears = 0, sdpas = 0;
  for (const ir::Node& n : decoder.nodes()) {
    if (n.op == OpKind::linear) {
      ++linears;
      EXPECT_EQ(n.attrs.get_string("impl", ""), "linear.bf16") << n.name;
      EXPECT_EQ(decoder.value(n.inputs[1]).dtype, ir::DType::bf16) << n.name;
    }
    if (n.op == OpKind::sdpa) {
      ++sdpas;
      EXPECT_EQ(n.attrs.get_string("precision", ""), "f32");
      EXPECT_NE(n.attrs.get_string("precision.fallback", "").find("needs avx512_bf16"),
                std::string::npos);
    }
  }
  EXPECT_GT(linears, 0);
  EXPECT_EQ(sdpas, 1);

  Graph product;  // a matmul of two activations: nothing for the widened tiles to save
  const ir::ValueId a = product.add_input("a", {7, 64});
  const ir::ValueId b = product.add_input("b", {64, 17});
  product.mark_output(product.add_node(OpKind::matmul, {a, b}, {}, "mm"));
  set_target_cpu(product, {"avx512"}, "widened.cuvilpass");
  testing::run_pass(product, "reduced-precision",
                    {{"matmul_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
  const ir::Node& mm = product.nodes()[0];
  EXPECT_EQ(mm.attrs.get_string("precision", ""), "f32");
  EXPECT_NE(mm.attrs.get_string("precision.fallback", "").find("needs avx512_bf16"),
            std::string::npos);

  Graph convnet = testing::tiny_resnet(1, 16, 9);
  set_target_cpu(convnet, {"avx512"}, "widened.cuvilpass");
  testing::run_pass(convnet, "layout", {{"memory_layout", std::string("nhwc")}});
  testing::run_pass(convnet, "select-lowering",
                    {{"conv_3x3", std::string("winograd")}, {"winograd_min_tiles", int64_t{0}}});
  testing::run_pass(convnet, "reduced-precision",
                    {{"conv_dtype", std::string("bf16")}, {"min_k", int64_t{1}}});
  int winograd = 0, stems = 0, widened = 0;
  for (const ir::Node* n : convs_of(convnet)) {
    const std::string fallback = n->attrs.get_string("precision.fallback", "");
    if (n->attrs.get_string("impl", "") == "conv2d.winograd_nhwc") {
      ++winograd;
      EXPECT_EQ(n->attrs.get_string("precision", ""), "f32") << n->name;
      EXPECT_EQ(fallback, "its bf16 variant conv2d.winograd_bf16 needs avx512_bf16") << n->name;
    } else if (convnet.value(n->inputs[1]).shape[1] < 16) {
      ++stems;  // no direct bf16 path: the bf16 GEMM on few channels is slower than f32
      EXPECT_EQ(n->attrs.get_string("precision", ""), "f32") << n->name;
      EXPECT_NE(fallback.find("input channels"), std::string::npos) << n->name;
    } else {
      ++widened;
      EXPECT_EQ(n->attrs.get_string("impl", ""), "conv2d.bf16") << n->name;
    }
  }
  EXPECT_GT(winograd, 0);
  EXPECT_EQ(stems, 1);
  EXPECT_GT(widened, 0);
}

TEST(ReducedPrecision, ThePlanRecordsTheCpuItWasCompiledFor) {
  PipelineConfig config = default_pipeline("cpu");
  const Compiled host = compile(testing::tiny_decoder(1, 5, 24), config, 1);
  std::string want;
  for (const std::string& f : host_cpu_features()) want += (want.empty() ? "" : ",") + f;
  EXPECT_EQ(host.plan.settings.get_string(kTargetCpuFeaturesSetting, "?"), want);
  EXPECT_EQ(host.plan.settings.get_string(kTargetCpuFeaturesSourceSetting, "?"), "host");

  config.cpu_features = std::vector<std::string>{"avx512_vnni"};
  config.source = "vnni.cuvilpass";
  const Compiled named = compile(testing::tiny_decoder(1, 5, 24), config, 1);
  EXPECT_EQ(named.plan.settings.get_string(kTargetCpuFeaturesSetting, "?"), "avx512_vnni");
  EXPECT_EQ(named.plan.settings.get_string(kTargetCpuFeaturesSourceSetting, "?"), "vnni.cuvilpass");
}

TEST(ReducedPrecision, Int8MatmulIsRejectedByTheSchema) {
  const std::string yaml =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: reduced-precision\n"
      "    params: { matmul_dtype: int8 }\n";
  EXPECT_THROW(parse_cuvilpass(yaml, "test.cuvilpass"), UserError);
}

// Attention has no int8 kernel: the schema refuses it, naming the file, line and field.
TEST(ReducedPrecision, Int8AttentionIsRejectedByTheSchema) {
  const std::string yaml =
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: reduced-precision\n"
      "    params: { attention_dtype: int8 }\n";
  try {
    parse_cuvilpass(yaml, "test.cuvilpass");
    ADD_FAILURE() << "accepted attention_dtype: int8";
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("test.cuvilpass:5"), std::string::npos) << what;
    EXPECT_NE(what.find("attention_dtype"), std::string::npos) << what;
  }
}

TEST(ReducedPrecision, Int8KernelOnAnNchwConvIsAUserErrorAtLowering) {
  Graph g = testing::tiny_resnet(1, 8, 7);
  for (ir::Node& n : g.mutable_nodes()) {
    if (n.op == OpKind::conv2d) n.attrs.set("impl", std::string("conv2d.int8"));
  }
  EXPECT_THROW(lower(g, LowerOptions{}), UserError);
}

TEST(ReducedPrecision, ToleranceFollowsTheConfig) {
  std::string label;
  EXPECT_DOUBLE_EQ(precision_tolerance(default_pipeline("cpu"), &label), kFp32Tolerance);
  EXPECT_EQ(label, "f32");
  EXPECT_DOUBLE_EQ(
      precision_tolerance(with_precision({{"linear_dtype", std::string("bf16")}}), &label),
      kBf16Tolerance);
  EXPECT_EQ(label, "bf16");
  EXPECT_DOUBLE_EQ(
      precision_tolerance(with_precision({{"conv_dtype", std::string("int8")}}), &label),
      kInt8Tolerance);
  EXPECT_EQ(label, "int8");
  // Mixed precisions: the loosest bound of those asked for.
  EXPECT_DOUBLE_EQ(precision_tolerance(with_precision({{"linear_dtype", std::string("bf16")},
                                                       {"conv_dtype", std::string("int8")}}),
                                       &label),
                   std::max(kBf16Tolerance, kInt8Tolerance));
}

}  // namespace
}  // namespace cuvil::passes
