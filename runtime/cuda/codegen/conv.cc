#include "runtime/cuda/codegen/conv.h"

#include <algorithm>
#include <string>

#include "base/error.h"
#include "runtime/cuda/codegen/gemm_body.h"

namespace cuvil::runtime::cuda::codegen {

namespace {

// Same layout as ConvKernelParams (names differ: `c` is the output so the shared store code fits).
constexpr const char* kParamsStruct = R"CUDA(
struct Params {
  const void* x; const void* w; void* c; const void* bias;
  i64 n, h, wi, ch, o, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  EpilogueOperand operands[4];
};
)CUDA";

// A (implicit im2col) element (row = (image, oh, ow), kcol = (kh, kw, c)) of group z. 32-bit
// index math (each factor < 2^31); the final offset in 64 bits.
constexpr const char* kAddress = R"CUDA(
  if (row >= M || kcol >= K) return false;
  const int cg = (int)(p.ch / p.groups);
  const int r = (int)row, kc = (int)kcol;
  const int ow = r % (int)p.ow, oh = (r / (int)p.ow) % (int)p.oh, image = r / (int)(p.ow * p.oh);
  const int c = kc % cg, tap = kc / cg;
  const int kw = tap % (int)p.kw, kh = tap / (int)p.kw;
  const int ih = oh * (int)p.sh - (int)p.ph + kh * (int)p.dh;
  const int iw = ow * (int)p.sw - (int)p.pw + kw * (int)p.dw;
  if (ih < 0 || ih >= (int)p.h || iw < 0 || iw >= (int)p.wi) return false;
  *src = (const TIn*)p.x + (((i64)image * p.h + ih) * p.wi + iw) * p.ch + z * cg + c;
  return true;
)CUDA";

std::string name_for(const ConvProblem& p, const GemmTiles& t) {
  return "cuvil_conv_" + std::string(to_string(p.x)) + "_" + std::string(to_string(p.y)) + "_" +
         std::to_string(t.block_m) + "x" + std::to_string(t.block_n) + "x" +
         std::to_string(t.block_k) + "_w" + std::to_string(t.warp_m) + "x" +
         std::to_string(t.warp_n) + "_s" + std::to_string(t.stages) + (p.exact_f32 ? "_x3" : "");
}

}  // namespace

int64_t ConvProblem::out_h() const {
  return (h + 2 * pad_h - dilation_h * (kh - 1) - 1) / stride_h + 1;
}
int64_t ConvProblem::out_w() const {
  return (w + 2 * pad_w - dilation_w * (kw - 1) - 1) / stride_w + 1;
}

void validate_conv(const ConvProblem& p, const GemmTiles& t) {
  require(p.n > 0 && p.h > 0 && p.w > 0 && p.c > 0 && p.o > 0 && p.kh > 0 && p.kw > 0,
          "conv: sizes must be positive");
  require(p.stride_h > 0 && p.stride_w > 0, "conv: stride must be positive");
  require(p.dilation_h > 0 && p.dilation_w > 0, "conv: dilation must be positive");
  require(p.pad_h >= 0 && p.pad_w >= 0, "conv: pad must be non-negative");
  require(p.groups > 0 && p.c % p.groups == 0 && p.o % p.groups == 0,
          "conv: groups (" + std::to_string(p.groups) + ") must divide C (" + std::to_string(p.c) +
              ") and O (" + std::to_string(p.o) + ")");
  require(p.out_h() > 0 && p.out_w() > 0, "conv: empty output (kernel larger than padded input)");
  require(p.groups <= 65535, "conv: groups > 65535");
  require(p.x == p.weight, "conv: x and weight must have the same type, got " +
                               std::string(to_string(p.x)) + " and " +
                               std::string(to_string(p.weight)));
  require(!p.exact_f32 || p.x == ElemType::f32,
          "conv: exact_f32 (3xTF32) needs f32 inputs, got " + std::string(to_string(p.x)));
  const int64_t m = p.n * p.out_h() * p.out_w();
  require(m < (int64_t{1} << 31), "conv: N*OH*OW must be below 2^31");
  require((m + t.block_m - 1) / std::max(t.block_m, 1) <= 65535,
          "conv: N*OH*OW=" + std::to_string(m) + " needs more than 65535 row blocks");
  require(t.split_k == 1, "conv: split_k must be 1 (the implicit GEMM's z is the group)");
  detail::validate_gemm_tiles(p.x, /*b_transposed=*/true, t);
  validate_epilogue(p.epilogue);
}

KernelSource conv_source(const ConvProblem& p, const GemmTiles& t) {
  validate_conv(p, t);
  const int64_t cg = p.c / p.groups;
  detail::GemmBodySpec spec;
  spec.kernel_name = name_for(p, t);
  spec.in = p.x;
  spec.out = p.y;
  spec.b_transposed = true;
  spec.split_tf32 = p.exact_f32;
  // A vectors run along channels inside one (kh, kw) tap: the width must divide C/groups and C.
  spec.vector_a = detail::legal_vector_width(t.vector_width, p.x, {cg, p.c});
  spec.vector_b = detail::legal_vector_width(t.vector_width, p.x, {p.kh * p.kw * cg});
  spec.tiles = t;
  spec.params_struct = kParamsStruct;
  spec.setup =
      "  M = p.n * p.oh * p.ow; N = p.o / p.groups; K = p.kh * p.kw * (p.ch / p.groups);\n"
      "  ldb = K;\n"
      "  B = (const TIn*)p.w + z * N * K;\n";
  spec.a_address = kAddress;
  spec.store = detail::gemm_store_code(p.bias, p.bias_type, p.epilogue, p.y, "0", "(z * N + col)",
                                       "row * p.o + z * N + col");
  return KernelSource{spec.kernel_name, detail::gemm_body_source(spec), {"--std=c++17"}};
}

LaunchGeometry conv_geometry(const ConvProblem& p, const GemmTiles& t) {
  validate_conv(p, t);
  LaunchGeometry g;
  g.grid[0] = detail::ceil_div(p.o / p.groups, t.block_n);
  g.grid[1] = detail::ceil_div(p.n * p.out_h() * p.out_w(), t.block_m);
  g.grid[2] = static_cast<unsigned>(p.groups);
  g.block[0] = (t.block_m / t.warp_m) * (t.block_n / t.warp_n) * 32;
  g.shared_bytes = static_cast<unsigned>(detail::gemm_body_shared_bytes(p.x, true, t));
  return g;
}

ConvKernelParams conv_params(const ConvProblem& p, const void* x, const void* repacked_w, void* y,
                             const void* bias) {
  ConvKernelParams params;
  params.x = x;
  params.w = repacked_w;
  params.y = y;
  params.bias = bias;
  params.n = p.n;
  params.h = p.h;
  params.w_in = p.w;
  params.c = p.c;
  params.o = p.o;
  params.out_h = p.out_h();
  params.out_w = p.out_w();
  params.kh = p.kh;
  params.kw = p.kw;
  params.stride_h = p.stride_h;
  params.stride_w = p.stride_w;
  params.pad_h = p.pad_h;
  params.pad_w = p.pad_w;
  params.dilation_h = p.dilation_h;
  params.dilation_w = p.dilation_w;
  params.groups = p.groups;
  return params;
}

KernelSource conv_weight_repack_source(ElemType from, ElemType to) {
  const std::string name =
      "cuvil_conv_repack_" + std::string(to_string(from)) + "_" + std::string(to_string(to));
  std::string source(device_prelude());
  // Thread i writes destination element i of [O, KH, KW, Cg], reading [O, Cg, KH, KW].
  source += R"CUDA(
struct Params { const void* src; void* dst; i64 o, cg, kh, kw; };
extern "C" __global__ void )CUDA" +
            name + R"CUDA((const Params p) {
  const i64 total = p.o * p.kh * p.kw * p.cg;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (i64)gridDim.x * blockDim.x) {
    const i64 c = i % p.cg, kw = (i / p.cg) % p.kw, kh = (i / (p.cg * p.kw)) % p.kh;
    const i64 o = i / (p.cg * p.kw * p.kh);
    const i64 from = ((o * p.cg + c) * p.kh + kh) * p.kw + kw;
    const float v = )CUDA" +
            load_expr(from, "p.src", "from") + ";\n    " + store_stmt(to, "p.dst", "i", "v") +
            "\n  }\n}\n";
  return KernelSource{name, source, {"--std=c++17"}};
}

LaunchGeometry conv_weight_repack_geometry(const ConvProblem& p) {
  const int64_t total = p.o * (p.c / std::max<int64_t>(p.groups, 1)) * p.kh * p.kw;
  LaunchGeometry g;
  g.block[0] = 256;
  g.grid[0] = static_cast<unsigned>(std::min<int64_t>((total + 255) / 256, 65535));
  return g;
}

}  // namespace cuvil::runtime::cuda::codegen
