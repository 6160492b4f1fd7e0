// Kernels' schedule hooks: tiling attributes (GEMM, attention) and every other attribute a kernel
// reads are read once, at scheduling, and the runs use what was read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "conv_test_graphs.h"
#include "kernel_reference_util.h"
#include "runtime/cpu/attention.h"
#include "runtime/cpu/gemm_schedule.h"
#include "runtime/cpu/gemm_ukernel.h"
#include "runtime/kernel_table.h"

namespace cuvil::runtime::cpu {
namespace {

Step linear_step(int64_t rows, ir::Attrs attrs) {
  const KernelInfo* k = find_kernel(ir::OpKind::linear, "linear.gemm");
  EXPECT_NE(k, nullptr);
  Step s;
  s.op = ir::OpKind::linear;
  s.kernel = k->name;
  s.fn = k->fn;
  s.node_name = "fc";
  s.attrs = std::move(attrs);
  s.inputs = {0, 1};
  s.input_shapes = {{rows, 17}, {7, 17}};
  s.output_shape = {rows, 7};
  schedule_step(s, *k);
  return s;
}

TEST(GemmSchedule, EveryGemmKernelHasAScheduleHook) {
  for (const char* name : {"conv2d.auto", "conv2d.gemm_1x1", "conv2d.im2col"})
    EXPECT_NE(find_kernel(ir::OpKind::conv2d, name)->schedule, nullptr) << name;
  EXPECT_NE(find_kernel(ir::OpKind::linear, "linear.gemm")->schedule, nullptr);
  EXPECT_NE(find_kernel(ir::OpKind::matmul, "matmul.gemm")->schedule, nullptr);
}

TEST(GemmSchedule, RunsUseWhatWasReadAtScheduling) {
  ir::Attrs attrs;
  attrs.set("gemm.mc", int64_t{96});
  attrs.set("gemm.mr_nr", std::string("8x32"));
  Step s = linear_step(33, attrs);
  s.attrs.set("gemm.mc", int64_t{48});  // after scheduling: no run sees it
  const GemmBlocking b = scheduled_blocking(s, 33);
  EXPECT_EQ(b.mc, 96);
  EXPECT_EQ(b.mr, 8);
  EXPECT_EQ(b.nr, 32);
}

TEST(GemmSchedule, FewRowProductsKeepTheDefaults) {
  ir::Attrs attrs;
  attrs.set("gemm.mc", int64_t{96});
  const Step s = linear_step(3, attrs);  // reads B in place: blocking unused
  EXPECT_EQ(scheduled_blocking(s, 3).mc, GemmBlocking{}.mc);
}

TEST(GemmSchedule, AMalformedKnobFailsAtSchedulingNotAtRun) {
  ir::Attrs attrs;
  attrs.set("gemm.mr_nr", std::string("12by32"));
  EXPECT_THROW(linear_step(33, attrs), UserError);
  EXPECT_NO_THROW(linear_step(2, attrs));  // few rows: the knob is never read
}

Step sdpa_step(const char* kernel, int64_t sq, ir::Attrs attrs) {
  const KernelInfo* k = find_kernel(ir::OpKind::sdpa, kernel);
  EXPECT_NE(k, nullptr);
  Step s;
  s.op = ir::OpKind::sdpa;
  s.kernel = k->name;
  s.fn = k->fn;
  s.attrs = std::move(attrs);
  s.inputs = {0, 1, 2};
  s.input_shapes = {{1, 4, sq, 16}, {1, 2, 77, 16}, {1, 2, 77, 16}};
  s.output_shape = {1, 4, sq, 16};
  schedule_step(s, *k);
  return s;
}

const SdpaSchedule& sdpa_schedule_of(const Step& s) {
  return *static_cast<const SdpaSchedule*>(s.schedule.get());
}

TEST(SdpaSchedule, FlashTilesAreReadOnceAndFitTheShape) {
  ir::Attrs attrs;
  attrs.set("attention.block_q", int64_t{1000});  // more rows than there are: clamped
  attrs.set("attention.block_kv", int64_t{40});   // whole panels of 32 keys
  Step s = sdpa_step("sdpa.flash", 17, attrs);
  s.attrs.set("attention.block_q", int64_t{8});  // after scheduling: no run sees it
  EXPECT_TRUE(sdpa_schedule_of(s).flash);
  EXPECT_EQ(sdpa_schedule_of(s).block_q, 2 * 17);  // two query heads per kv head, stacked
  EXPECT_EQ(sdpa_schedule_of(s).block_kv, 64);
}

// Sets the kernels' instruction set for the scope (kernel_isa() follows the GEMM's).
class ScopedIsa {
 public:
  explicit ScopedIsa(cpu::GemmIsa isa) : before_(cpu::active_gemm_isa()) { cpu::set_gemm_isa(isa); }
  ~ScopedIsa() { cpu::set_gemm_isa(before_); }

 private:
  cpu::GemmIsa before_;
};

TEST(SdpaSchedule, AutoRunsBlockedOnDecodeShapesAndReadsNoTile) {
  if (!cpu::cpu_supports(cpu::GemmIsa::avx512)) GTEST_SKIP() << "no AVX-512";
  ScopedIsa avx512(cpu::GemmIsa::avx512);
  ir::AttrReadRecorder reads;
  ir::Attrs attrs;
  attrs.set("attention.block_q", int64_t{8}, "attention-tiling.block_q");
  const Step decode = sdpa_step("sdpa.auto", 1, attrs);
  EXPECT_FALSE(sdpa_schedule_of(decode).flash);
  EXPECT_TRUE(reads.origins().empty());
  EXPECT_TRUE(sdpa_schedule_of(sdpa_step("sdpa.auto", 17, attrs)).flash);
  EXPECT_EQ(reads.origins().size(), 1u);
}

// On the portable tiles the blocked kernel's GEMMs beat flash attention; with AVX2 or AVX-512
// tiles flash wins (docs/performance.md).
TEST(SdpaSchedule, AutoRunsFlashOnVectorTilesAndBlockedOnPortableOnes) {
  for (cpu::GemmIsa isa : {cpu::GemmIsa::avx512, cpu::GemmIsa::avx2, cpu::GemmIsa::ref}) {
    if (!cpu::cpu_supports(isa)) continue;
    ScopedIsa scoped(isa);
    EXPECT_EQ(sdpa_schedule_of(sdpa_step("sdpa.auto", 17, {})).flash, isa != cpu::GemmIsa::ref)
        << cpu::to_string(isa);
  }
}

// The kernels without tuning knobs read their op's attributes (axes, windows, masks, offsets)
// once at scheduling too: an attribute changed after scheduling is seen by no run, so each
// kernel still matches the reference of the graph as built.
struct ScheduledOpCase {
  const char* kernel;
  ir::OpKind op;
  std::vector<ir::Shape> inputs;
  ir::Attrs attrs, after_scheduling;
};

double error_after_changing_attributes(const ScheduledOpCase& c,
                                       const std::vector<ir::Tensor>* given = nullptr) {
  ir::Graph g;
  std::vector<ir::ValueId> in;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    std::string name = "x";  // built by append: GCC 12 warns falsely on "x" + std::string
    name += std::to_string(i);
    const bool indices = (c.op == ir::OpKind::gather || c.op == ir::OpKind::scatter) && i == 1;
    in.push_back(g.add_input(name, c.inputs[i], indices ? ir::DType::i32 : ir::DType::f32));
  }
  g.mark_output(g.add_node(c.op, in, c.attrs, "op"));
  return testing::kernel_error(g, c.kernel, 2, {}, given, c.after_scheduling);
}

using Ints = std::vector<int64_t>;

TEST(OpSchedule, RunsUseTheAttributesReadAtScheduling) {
  const Ints window{3, 3}, stride{2, 2}, pad{1, 1};
  const std::vector<ScheduledOpCase> cases = {
      {"softmax.cpu",
       ir::OpKind::softmax,
       {{3, 7, 5}},
       {{"axis", int64_t{1}}},
       {{"axis", int64_t{2}}}},
      {"layer_norm.cpu",
       ir::OpKind::layer_norm,
       {{3, 17}, {17}, {17}},
       {{"eps", 1e-5}},
       {{"eps", 10.0}}},
      {"rms_norm.cpu", ir::OpKind::rms_norm, {{3, 17}, {17}}, {{"eps", 1e-5}}, {{"eps", 10.0}}},
      {"group_norm.cpu",
       ir::OpKind::group_norm,
       {{2, 6, 3, 5}, {6}, {6}},
       {{"groups", int64_t{3}}, {"eps", 1e-5}},
       {{"groups", int64_t{2}}}},
      {"avg_pool2d.cpu",
       ir::OpKind::avg_pool2d,
       {{1, 3, 7, 7}},
       {{"kernel", window}, {"stride", stride}, {"pad", pad}, {"count_include_pad", int64_t{0}}},
       {{"count_include_pad", int64_t{1}}}},
      {"max_pool2d.cpu",
       ir::OpKind::max_pool2d,
       {{1, 3, 7, 7}},
       {{"kernel", window}, {"stride", stride}, {"pad", pad}},
       {{"pad", Ints{0, 0}}}},
      {"upsample_nearest2d.cpu",
       ir::OpKind::upsample_nearest2d,
       {{1, 2, 3, 3}},
       {{"scale", int64_t{2}}},
       {{"scale", int64_t{3}}}},
      {"transpose.cpu",
       ir::OpKind::transpose,
       {{3, 3, 3}},
       {{"perm", Ints{2, 0, 1}}},
       {{"perm", Ints{1, 2, 0}}}},
      {"slice.cpu",
       ir::OpKind::slice,
       {{3, 9}},
       {{"axis", int64_t{1}}, {"start", int64_t{2}}, {"end", int64_t{6}}},
       {{"start", int64_t{5}}}},
      {"concat.cpu",
       ir::OpKind::concat,
       {{2, 3}, {2, 3}},
       {{"axis", int64_t{0}}},
       {{"axis", int64_t{1}}}},
      {"pad.cpu",
       ir::OpKind::pad,
       {{2, 5}},
       {{"pads", Ints{0, 2, 0, 3}}, {"mode", std::string("reflect")}},
       {{"mode", std::string("constant")}, {"value", 3.0}}},
      {"reduce_sum.cpu",
       ir::OpKind::reduce_sum,
       {{3, 3, 5}},
       {{"axes", Ints{1}}},
       {{"axes", Ints{0}}}},
      {"rope.cpu",
       ir::OpKind::rope,
       {{1, 2, 5, 8}},
       {{"theta", 10000.0}, {"pos_offset", int64_t{3}}},
       {{"theta", 500.0}, {"pos_offset", int64_t{0}}}},
      {"sdpa.blocked",
       ir::OpKind::sdpa,
       {{1, 2, 5, 8}, {1, 2, 5, 8}, {1, 2, 5, 8}},
       {{"causal", int64_t{1}}},
       {{"causal", int64_t{0}}, {"scale", 3.0}}},
      {"sdpa.flash",
       ir::OpKind::sdpa,
       {{1, 2, 37, 8}, {1, 2, 37, 8}, {1, 2, 37, 8}},
       {{"causal", int64_t{1}}},
       {{"causal", int64_t{0}}, {"scale", 3.0}}},
  };
  for (const ScheduledOpCase& c : cases)
    EXPECT_LT(error_after_changing_attributes(c), 1e-4) << c.kernel;
}

TEST(OpSchedule, GatherUsesTheAxisReadAtScheduling) {
  const ScheduledOpCase c{"gather.cpu",
                          ir::OpKind::gather,
                          {{4, 4}, {4}},
                          {{"axis", int64_t{0}}},
                          {{"axis", int64_t{1}}}};
  std::vector<ir::Tensor> given = {ir::Tensor({4, 4}, std::vector<float>(16)),
                                   ir::Tensor({4}, {3, 0, 2, 1}, ir::DType::i32)};
  for (size_t i = 0; i < 16; ++i) given[0].data[i] = static_cast<float>(i);
  EXPECT_LT(error_after_changing_attributes(c, &given), 1e-6);
}

TEST(OpSchedule, ScatterUsesTheAxisAndReductionReadAtScheduling) {
  const ScheduledOpCase c{"scatter.cpu",
                          ir::OpKind::scatter,
                          {{4, 4}, {4}, {4, 4}},
                          {{"axis", int64_t{0}}, {"reduction", std::string("add")}},
                          {{"axis", int64_t{1}}, {"reduction", std::string("none")}}};
  std::vector<ir::Tensor> given = {ir::Tensor({4, 4}, std::vector<float>(16)),
                                   ir::Tensor({4}, {3, 0, 3, 1}, ir::DType::i32),
                                   ir::Tensor({4, 4}, std::vector<float>(16))};
  for (size_t i = 0; i < 16; ++i) {
    given[0].data[i] = static_cast<float>(i);
    given[2].data[i] = static_cast<float>(100 + i);
  }
  EXPECT_LT(error_after_changing_attributes(c, &given), 1e-6);
}

TEST(OpSchedule, ConvolutionsRunTheGeometryReadAtScheduling) {
  const ir::Attrs changed{{"pad", Ints{0, 0}}, {"layout", std::string("nchw")}};
  const struct {
    const char* kernel;
    testing::ConvCase cc;
  } cases[] = {
      {"conv2d.im2col", {1, 7, 9, 9, 5, 3, 2, 1, 1, false}},
      {"conv2d.auto", {1, 7, 9, 9, 5, 3, 2, 1, 1, false}},
      {"conv2d.direct_nhwc", {1, 7, 9, 9, 5, 3, 2, 1, 1, false}},
      {"conv2d.winograd_nhwc", {1, 7, 9, 9, 5, 3, 1, 1, 1, false}},
      {"conv2d.depthwise_nhwc", {1, 6, 9, 9, 6, 3, 1, 1, 6, false}},
  };
  for (const auto& c : cases) {
    const ir::Graph g = testing::conv_graph(c.cc, "nhwc", true, false);
    EXPECT_LT(testing::kernel_error(g, c.kernel, 2, {}, nullptr, changed), 1e-4) << c.kernel;
  }
}

// With run-time weights (nothing prepared) the direct and Winograd kernels still take their
// conv-tiling knobs from the schedule: values that would fail if read (a Winograd tile of 3,
// negative vectors and channels per pass) are set after scheduling and no run sees them.
TEST(OpSchedule, UnpreparedConvolutionsRunTheTilingReadAtScheduling) {
  const ir::Attrs tiling{{"conv.vectors", int64_t{1}},
                         {"conv.winograd_tile", int64_t{2}},
                         {"conv.channels_per_pass", int64_t{3}}};
  const ir::Attrs changed{{"conv.vectors", int64_t{-1}},
                          {"conv.winograd_tile", int64_t{3}},
                          {"conv.channels_per_pass", int64_t{-1}},
                          {"conv.partition", std::string("diagonal")}};
  const testing::ConvCase direct = {1, 7, 9, 9, 5, 3, 2, 1, 1, false};
  const testing::ConvCase winograd = {1, 7, 9, 9, 5, 3, 1, 1, 1, false};
  EXPECT_LT(testing::kernel_error(testing::conv_graph(direct, "nhwc", true, false),
                                  "conv2d.direct_nhwc", 2, tiling, nullptr, changed),
            1e-4);
  EXPECT_LT(testing::kernel_error(testing::conv_graph(winograd, "nhwc", true, false),
                                  "conv2d.winograd_nhwc", 2, tiling, nullptr, changed),
            1e-4);
}

TEST(OpSchedule, AMalformedConvTilingFailsAtScheduling) {
  const ir::Graph g = testing::conv_graph({1, 7, 9, 9, 5, 3, 1, 1, 1, false}, "nhwc", true, false);
  EXPECT_THROW(
      testing::kernel_error(g, "conv2d.winograd_nhwc", 2, {{"conv.winograd_tile", int64_t{3}}}),
      UserError);
  EXPECT_THROW(
      testing::kernel_error(g, "conv2d.direct_nhwc", 2, {{"conv.channels_per_pass", int64_t{-2}}}),
      UserError);
}

}  // namespace
}  // namespace cuvil::runtime::cpu
