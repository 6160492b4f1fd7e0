// Built only with the CUDA toolkit (the generators link NVRTC).
#if CUVIL_HAVE_CUDA
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda/codegen/conv.h"
#include "tests/cuda/codegen_test_util.h"

namespace cuvil::runtime::cuda::codegen {
namespace {

ConvProblem conv(int64_t n, int64_t hw, int64_t c, int64_t o, int64_t k, int64_t stride,
                 int64_t pad, int64_t groups = 1, int64_t dilation = 1) {
  ConvProblem p;
  p.n = n;
  p.h = p.w = hw;
  p.c = c;
  p.o = o;
  p.kh = p.kw = k;
  p.stride_h = p.stride_w = stride;
  p.pad_h = p.pad_w = pad;
  p.dilation_h = p.dilation_w = dilation;
  p.groups = groups;
  return p;
}

TEST(CodegenConv, OutputSizeFollowsStridePadDilation) {
  EXPECT_EQ(conv(1, 224, 3, 64, 7, 2, 3).out_h(), 112);
  EXPECT_EQ(conv(1, 7, 3, 5, 3, 1, 1).out_w(), 7);
  EXPECT_EQ(conv(1, 17, 3, 5, 3, 2, 0).out_h(), 8);
  EXPECT_EQ(conv(1, 17, 3, 5, 3, 1, 2, 1, 2).out_h(), 17);  // dilation 2: effective kernel 5
}

TEST(CodegenConv, GeometryIsGemmOverPixelsPerGroup) {
  const GemmTiles tiles;  // 128 x 128
  // ResNet-50 layer1 3x3: M = 56*56 = 3136 pixels, N = 64 output channels.
  const LaunchGeometry g = conv_geometry(conv(1, 56, 64, 64, 3, 1, 1), tiles);
  EXPECT_EQ(g.grid[0], 1u);
  EXPECT_EQ(g.grid[1], 25u);  // ceil(3136 / 128)
  EXPECT_EQ(g.grid[2], 1u);
  const LaunchGeometry grouped = conv_geometry(conv(2, 7, 6, 9, 3, 1, 1, 3), tiles);
  EXPECT_EQ(grouped.grid[1], 1u);  // 2 * 49 = 98 pixels
  EXPECT_EQ(grouped.grid[2], 3u);  // one GEMM per group
}

TEST(CodegenConv, ParamsMatchTheProblem) {
  const ConvProblem p = conv(2, 9, 6, 4, 3, 2, 1, 2);
  const ConvKernelParams params = conv_params(p, nullptr, nullptr, nullptr);
  EXPECT_EQ(params.out_h, 5);
  EXPECT_EQ(params.out_w, 5);
  EXPECT_EQ(params.groups, 2);
  EXPECT_EQ(params.w_in, 9);
  EXPECT_EQ(sizeof(ConvKernelParams), 20 * 8 + 4 * 32u);
}

TEST(CodegenConv, RejectsGroupsNotDividingChannels) {
  try {
    conv_source(conv(1, 8, 6, 4, 3, 1, 1, 4), GemmTiles{});
    ADD_FAILURE() << "no error";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("groups"), std::string::npos) << error.what();
  }
}

TEST(CodegenConv, RejectsSplitK) {
  GemmTiles t;
  t.split_k = 2;
  EXPECT_THROW(conv_source(conv(1, 8, 8, 8, 3, 1, 1), t), UserError);
}

TEST(CodegenConv, RejectsEmptyOutputAndBadStride) {
  EXPECT_THROW(conv_source(conv(1, 2, 3, 4, 5, 1, 0), GemmTiles{}), UserError);
  EXPECT_THROW(conv_source(conv(1, 8, 3, 4, 3, 0, 0), GemmTiles{}), UserError);
}

TEST(CodegenConv, RejectsIllegalTilesNamingTheParameter) {
  GemmTiles t;
  t.warp_n = 48;
  try {
    conv_source(conv(1, 8, 8, 8, 3, 1, 1), t);
    ADD_FAILURE() << "no error";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("warp_n"), std::string::npos) << error.what();
  }
}

struct ConvCase {
  std::string label;
  ConvProblem problem;
  GemmTiles tiles;
  bool expect_async;
};

// gtest prints the label instead of the struct's bytes.
void PrintTo(const ConvCase& c, std::ostream* out) {
  *out << c.label;
}

std::vector<ConvCase> conv_cases() {
  std::vector<ConvCase> cases;
  cases.push_back({"resnet_3x3_bf16", conv(1, 56, 64, 64, 3, 1, 1), GemmTiles{}, true});
  // ResNet's stem: C = 3 and K = 7*7*3 = 147 force 2-byte loads: no cp.async at all.
  cases.push_back(
      {"stem_7x7_c3", conv(1, 224, 3, 64, 7, 2, 3), GemmTiles{64, 64, 32, 32, 32, 3, 8}, false});
  cases.push_back({"grouped_odd", conv(2, 7, 6, 9, 3, 2, 1, 3), GemmTiles{32, 32, 16, 16, 16, 2, 8},
                   true});  // C/groups = 2: 4-byte cp.async
  ConvProblem tf32 = conv(1, 17, 17, 7, 3, 1, 2, 1, 2);
  tf32.x = tf32.weight = tf32.y = ElemType::f32;
  cases.push_back({"tf32_dilated_odd", tf32, GemmTiles{64, 64, 16, 32, 32, 3, 4}, true});
  ConvProblem sdxl = conv(1, 128, 320, 320, 3, 1, 1);
  sdxl.bias = true;
  sdxl.epilogue = {{ir::OpKind::add, ElemType::bf16}, {ir::OpKind::silu, ElemType::f32}};
  cases.push_back({"sdxl_3x3_bias_residual", sdxl, GemmTiles{128, 128, 32, 64, 64, 4, 8}, true});
  return cases;
}

class ConvCompiles : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvCompiles, ForSm90WithTensorCores) {
  const ConvCase& c = GetParam();
  const CompiledKernel compiled = testing::compile_verbose(conv_source(c.problem, c.tiles), 90);
  EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), 90);
  EXPECT_TRUE(testing::log_reports_no_spills(compiled.log)) << compiled.log;
  const auto sass = testing::sass_opcode_counts(compiled.cubin);
  EXPECT_GT(testing::count_of(sass, testing::kSassHmma), 0);
  EXPECT_EQ(testing::count_of(sass, testing::kSassLdgsts) > 0, c.expect_async);
}

INSTANTIATE_TEST_SUITE_P(Matrix, ConvCompiles, ::testing::ValuesIn(conv_cases()),
                         [](const auto& info) { return info.param.label; });

TEST(CodegenConv, WeightRepackCompilesForEveryTypePair) {
  for (ElemType from : {ElemType::f32, ElemType::bf16}) {
    for (ElemType to : {ElemType::f32, ElemType::bf16, ElemType::f16}) {
      const CompiledKernel compiled = compile_kernel(conv_weight_repack_source(from, to), 90);
      EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), 90);
    }
  }
  const LaunchGeometry g = conv_weight_repack_geometry(conv(1, 8, 6, 9, 3, 1, 1, 3));
  EXPECT_EQ(g.grid[0], 1u);  // 9 * 2 * 3 * 3 = 162 elements
  EXPECT_EQ(g.block[0], 256u);
}

}  // namespace
}  // namespace cuvil::runtime::cuda::codegen
#endif  // CUVIL_HAVE_CUDA
