// Kernels' schedule hooks (GEMM, attention): tiling attributes are read once, at scheduling, and
// the runs use what was read.
#include <gtest/gtest.h>

#include "base/error.h"
#include "runtime/cpu/attention.h"
#include "runtime/cpu/gemm_schedule.h"
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

TEST(SdpaSchedule, AutoRunsBlockedOnDecodeShapesAndReadsNoTile) {
  ir::AttrReadRecorder reads;
  ir::Attrs attrs;
  attrs.set("attention.block_q", int64_t{8}, "attention-tiling.block_q");
  const Step decode = sdpa_step("sdpa.auto", 1, attrs);
  EXPECT_FALSE(sdpa_schedule_of(decode).flash);
  EXPECT_TRUE(reads.origins().empty());
  EXPECT_TRUE(sdpa_schedule_of(sdpa_step("sdpa.auto", 17, attrs)).flash);
  EXPECT_EQ(reads.origins().size(), 1u);
}

}  // namespace
}  // namespace cuvil::runtime::cpu
