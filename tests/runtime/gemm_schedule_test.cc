// The GEMM kernels' schedule hook: the gemm-tiling attributes are read once, at scheduling, and
// the runs use what was read.
#include <gtest/gtest.h>

#include "base/error.h"
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

}  // namespace
}  // namespace cuvil::runtime::cpu
