#include "runtime/cpu/lowp_gemm_schedule.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/conv_bf16_direct.h"
#include "runtime/cpu/gemm.h"
#include "runtime/cpu/kernel_util.h"
#include "runtime/kernel_table.h"

namespace cuvil::runtime::cpu {

namespace {

// im2col column buffers of about this many elements (fp32 for bf16, u8 for int8).
constexpr int64_t kBf16ColumnElements = int64_t{1} << 21;
constexpr int64_t kInt8ColumnElements = int64_t{1} << 23;

int64_t positive(const Step& step, const char* key, int64_t fallback) {
  const int64_t v = step.attrs.get_int(key, fallback);
  if (v < 1) {
    throw UserError("step '" + step.node_name + "': " + key + " must be positive, got " +
                    std::to_string(v));
  }
  return v;
}

// The threading pass's split of C, read as the fp32 GEMM reads it; errors name the step.
GemmPartition partition(const Step& step) {
  try {
    return gemm_partition(step.attrs);
  } catch (const UserError& e) {
    throw UserError("step '" + step.node_name + "': " + e.what());
  }
}

Bf16Blocking bf16_blocking(const Step& step, int64_t max_rows) {
  Bf16Blocking b;
  if (max_rows <= kBf16SkinnyRows) return b;
  b.mc = positive(step, attrs::kGemmBf16Mc, b.mc);
  b.kc = positive(step, attrs::kGemmBf16Kc, b.kc);
  b.nc = positive(step, attrs::kGemmBf16Nc, b.nc);
  b.partition = partition(step);
  return b;
}

enum class Lowp { bf16, int8 };

// The geometry (conv2d), and the panels where the largest product has more rows than the
// skinny path takes: a linear's rows, a matmul's rows per product, a 1x1 conv's pixels, another
// conv's pixels per im2col block.
std::shared_ptr<const void> schedule(const Step& step, Lowp precision) {
  auto s = std::make_shared<LowpSchedule>();
  int64_t max_rows = 0;
  if (step.op == ir::OpKind::conv2d) {
    s->conv = lowp_conv(step);
    const LowpConv& g = s->conv;
    // Few channels run direct, with no panels: the gemm-tiling knobs reach nothing there.
    s->bf16_direct = precision == Lowp::bf16 && bf16_conv_runs_direct_here(g);
    if (s->bf16_direct) return s;
    if (g.is_1x1()) {
      max_rows = g.n * g.h * g.w;
    } else {
      s->pixel_block =
          lowp_pixel_block(g, precision == Lowp::bf16 ? kBf16ColumnElements : kInt8ColumnElements);
      max_rows = precision == Lowp::bf16 && bf16_conv_gathers_in_place(g)
                     ? g.n * g.oh * g.ow
                     : std::min(s->pixel_block, g.oh * g.ow);
    }
  } else {
    max_rows = step.op == ir::OpKind::linear ? linear_rows(step) : matmul_rows(step);
  }
  if (precision == Lowp::bf16) {
    s->bf16 = bf16_blocking(step, max_rows);
  } else {
    if (max_rows > kInt8SkinnyRows) {
      s->int8_mc = positive(step, attrs::kGemmInt8Mc, kInt8DefaultMc);
      s->int8_partition = partition(step);
    }
  }
  return s;
}

}  // namespace

std::shared_ptr<const void> bf16_gemm_schedule(const Step& step) {
  return schedule(step, Lowp::bf16);
}

std::shared_ptr<const void> int8_gemm_schedule(const Step& step) {
  return schedule(step, Lowp::int8);
}

const LowpSchedule& scheduled_lowp(const Step& step) {
  return schedule_of<LowpSchedule>(step);
}

}  // namespace cuvil::runtime::cpu
