// The bf16 and int8 kernels' schedule hooks: gemm-tiling's bf16/int8 panel sizes and the conv
// geometry are read once at scheduling, only where a product has more rows than the skinny path
// takes, and the kernels run with what was read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "conv_test_graphs.h"
#include "kernel_reference_util.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/lowp_gemm_schedule.h"
#include "runtime/cpu/quantize.h"
#include "runtime/kernel_table.h"

namespace cuvil::runtime::cpu {
namespace {

Step scheduled(ir::OpKind op, const char* kernel, std::vector<ir::Shape> inputs, ir::Shape output,
               ir::Attrs attrs) {
  const KernelInfo* k = find_kernel(op, kernel);
  EXPECT_NE(k, nullptr) << kernel;
  Step s;
  s.op = op;
  s.kernel = kernel;
  s.fn = k->fn;
  s.node_name = "op";
  s.attrs = std::move(attrs);
  for (size_t i = 0; i < inputs.size(); ++i) s.inputs.push_back(static_cast<int32_t>(i));
  s.input_shapes = std::move(inputs);
  s.output_shape = std::move(output);
  schedule_step(s, *k);
  return s;
}

Step linear(const char* kernel, int64_t rows, ir::Attrs attrs) {
  return scheduled(ir::OpKind::linear, kernel, {{rows, 40}, {24, 40}}, {rows, 24},
                   std::move(attrs));
}

ir::Attrs panels(int64_t bf16_mc, int64_t bf16_kc, int64_t bf16_nc, int64_t int8_mc) {
  ir::Attrs a;
  a.set(attrs::kGemmBf16Mc, bf16_mc, "gemm-tiling.bf16_mc");
  a.set(attrs::kGemmBf16Kc, bf16_kc, "gemm-tiling.bf16_kc");
  a.set(attrs::kGemmBf16Nc, bf16_nc, "gemm-tiling.bf16_nc");
  a.set(attrs::kGemmInt8Mc, int8_mc, "gemm-tiling.int8_mc");
  return a;
}

TEST(LowpGemmSchedule, EveryReducedPrecisionGemmKernelHasAScheduleHook) {
  for (const KernelInfo& k : kernel_table()) {
    if (k.precision.empty()) continue;
    EXPECT_NE(k.schedule, nullptr) << k.name;
  }
}

TEST(LowpGemmSchedule, Bf16PanelsAreReadOnceAtScheduling) {
  Step s = linear("linear.bf16", 33, panels(48, 64, 96, 24));
  s.attrs.set(attrs::kGemmBf16Mc, int64_t{8});  // after scheduling: no run sees it
  const LowpSchedule& got = scheduled_lowp(s);
  EXPECT_EQ(got.bf16.mc, 48);
  EXPECT_EQ(got.bf16.kc, 64);
  EXPECT_EQ(got.bf16.nc, 96);
}

TEST(LowpGemmSchedule, Int8ReadsOnlyItsOwnPanel) {
  ir::AttrReadRecorder reads;
  const Step s = linear("linear.int8", 33, panels(48, 64, 96, 24));
  EXPECT_EQ(scheduled_lowp(s).int8_mc, 24);
  EXPECT_EQ(reads.origins(), (std::set<std::string>{"gemm-tiling.int8_mc"}));
}

TEST(LowpGemmSchedule, SkinnyProductsReadNoPanel) {
  ir::AttrReadRecorder reads;
  const Step bf16 = linear("linear.bf16", kBf16SkinnyRows, panels(48, 64, 96, 24));
  const Step int8 = linear("linear.int8", kInt8SkinnyRows, panels(48, 64, 96, 24));
  EXPECT_TRUE(reads.origins().empty());
  EXPECT_EQ(scheduled_lowp(bf16).bf16.mc, Bf16Blocking{}.mc);
  EXPECT_EQ(scheduled_lowp(int8).int8_mc, kInt8DefaultMc);
  EXPECT_EQ(
      scheduled_lowp(linear("linear.bf16", kBf16SkinnyRows + 1, panels(48, 64, 96, 24))).bf16.mc,
      48);
}

TEST(LowpGemmSchedule, MatmulRowsAreTheProductsNotTheBatch) {
  ir::AttrReadRecorder reads;
  const Step decode = scheduled(ir::OpKind::matmul, "matmul.bf16", {{8, 1, 40}, {8, 40, 24}},
                                {8, 1, 24}, panels(48, 64, 96, 24));
  EXPECT_TRUE(reads.origins().empty());
  const Step prefill = scheduled(ir::OpKind::matmul, "matmul.bf16", {{8, 17, 40}, {8, 40, 24}},
                                 {8, 17, 24}, panels(48, 64, 96, 24));
  EXPECT_EQ(scheduled_lowp(prefill).bf16.kc, 64);
}

TEST(LowpGemmSchedule, ConvGeometryAndPixelBlockComeWithThePanels) {
  using Ints = std::vector<int64_t>;
  ir::Attrs a = panels(48, 64, 96, 24);
  a.set("stride", Ints{2, 2});
  a.set("pad", Ints{1, 1});
  a.set("layout", std::string("nhwc"));
  const Step s =
      scheduled(ir::OpKind::conv2d, "conv2d.int8", {{1, 9, 9, 7}, {5, 7, 3, 3}}, {1, 5, 5, 5}, a);
  const LowpSchedule& got = scheduled_lowp(s);
  EXPECT_EQ(got.conv.oh, 5);
  EXPECT_EQ(got.conv.sh, 2);
  EXPECT_EQ(got.pixel_block, 25);  // every output pixel in one im2col block
  EXPECT_EQ(got.int8_mc, 24);
}

TEST(LowpGemmSchedule, ANonPositivePanelFailsAtScheduling) {
  EXPECT_THROW(linear("linear.bf16", 33, panels(48, 0, 96, 24)), UserError);
  EXPECT_THROW(linear("linear.int8", 33, panels(48, 64, 96, -1)), UserError);
  EXPECT_NO_THROW(linear("linear.bf16", 2, panels(48, 0, 96, 24)));  // skinny: never read
}

// Odd panels (mc not a multiple of the register tile, kc splitting K unevenly, nc one sliver)
// still give the reference's answer: the knobs reach the GEMMs' loops, not only a struct.
TEST(LowpGemmSchedule, OddPanelsMatchTheReference) {
  const ir::Attrs odd = panels(13, 18, 32, 13);
  ir::Graph fc;
  fc.mark_output(fc.add_node(ir::OpKind::linear,
                             {fc.add_input("x", {41, 45}), fc.add_input("w", {70, 45})}, {}, "fc"));
  const testing::ConvCase cc = {1, 17, 9, 9, 40, 3, 1, 1, 1, false};
  const ir::Graph conv = testing::conv_graph(cc, "nhwc", /*weights_input=*/true, false);
  if (cpu_has_avx512_bf16()) {
    EXPECT_LE(testing::kernel_error(fc, "linear.bf16", 2, odd), kBf16GemmTolerance);
    EXPECT_LE(testing::kernel_error(conv, "conv2d.bf16", 2, odd), kBf16GemmTolerance);
  }
  if (cpu_has_avx512_vnni()) {
    EXPECT_LE(testing::kernel_error(fc, "linear.int8", 2, odd), kInt8GemmTolerance);
    EXPECT_LE(testing::kernel_error(conv, "conv2d.int8", 2, odd), kInt8GemmTolerance);
  }
  if (!cpu_has_avx512_bf16() && !cpu_has_avx512_vnni()) {
    GTEST_SKIP() << "CPU lacks avx512_bf16 and avx512_vnni";
  }
}

}  // namespace
}  // namespace cuvil::runtime::cpu
