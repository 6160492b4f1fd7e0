#include "runtime/cpu/gemm_schedule.h"

#include <algorithm>

#include "runtime/cpu/conv_schedule.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/kernel_table.h"

namespace cuvil::runtime::cpu {

namespace {

// The blocking of a step whose largest product has `max_rows` rows.
GemmBlocking blocking_for(const Step& step, int64_t max_rows) {
  return gemm_reads_in_place(max_rows) ? GemmBlocking{} : gemm_blocking(step.attrs);
}

}  // namespace

std::shared_ptr<const void> linear_gemm_schedule(const Step& step) {
  return std::make_shared<GemmBlocking>(blocking_for(step, linear_rows(step)));
}

std::shared_ptr<const void> matmul_gemm_schedule(const Step& step) {
  return std::make_shared<GemmBlocking>(blocking_for(step, matmul_rows(step)));
}

std::shared_ptr<const void> conv2d_gemm_schedule(const Step& step) {
  auto s = std::make_shared<ConvSchedule>();
  const ConvGeometry& g = s->geometry = conv_geometry(step);
  if (g.blocked) return s;  // direct_nchw16c: no GEMM
  // NCHW: W [og, k] times columns, og rows. NHWC: pixels (all of them for a 1x1, a block of at
  // most all output pixels for im2col) times W^T.
  const int64_t pixels = g.is_1x1_unit_stride() ? g.n * g.h * g.w : g.oh * g.ow;
  s->blocking = blocking_for(step, g.nhwc ? pixels : g.og);
  return s;
}

GemmBlocking scheduled_blocking(const Step& step, int64_t m) {
  const GemmBlocking& scheduled = step.op == ir::OpKind::conv2d
                                      ? schedule_of<ConvSchedule>(step).blocking
                                      : schedule_of<GemmBlocking>(step);
  return gemm_reads_in_place(m) ? GemmBlocking{} : scheduled;
}

}  // namespace cuvil::runtime::cpu
