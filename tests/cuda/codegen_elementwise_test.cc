// Built only with the CUDA toolkit (the generators link NVRTC).
#if CUVIL_HAVE_CUDA
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda/codegen/elementwise.h"
#include "tests/cuda/codegen_test_util.h"

namespace cuvil::runtime::cuda::codegen {
namespace {

TEST(CodegenElementwise, BroadcastStridesFollowNumpyRules) {
  const ElementwiseKernelParams params =
      elementwise_params({2, 3, 4}, nullptr, {nullptr, nullptr, nullptr}, {{2, 3, 4}, {4}, {3, 1}});
  EXPECT_EQ(params.total, 24);
  EXPECT_EQ(params.strides[0][0], 12);
  EXPECT_EQ(params.strides[0][2], 1);
  EXPECT_EQ(params.strides[1][0], 0);
  EXPECT_EQ(params.strides[1][1], 0);
  EXPECT_EQ(params.strides[1][2], 1);
  EXPECT_EQ(params.strides[2][0], 0);
  EXPECT_EQ(params.strides[2][1], 1);
  EXPECT_EQ(params.strides[2][2], 0);
}

TEST(CodegenElementwise, RejectsShapesThatDoNotBroadcast) {
  EXPECT_THROW(elementwise_params({2, 3}, nullptr, {nullptr, nullptr}, {{2, 3}, {2}}), UserError);
  EXPECT_THROW(elementwise_params({3}, nullptr, {nullptr}, {{1, 3}}), UserError);
}

TEST(CodegenElementwise, RejectsBadRankAndTiles) {
  ElementwiseProblem p;
  p.rank = 7;
  EXPECT_THROW(elementwise_source(p, ElementwiseTiles{}), UserError);
  p.rank = 2;
  EXPECT_THROW(elementwise_source(p, ElementwiseTiles{48, 4}), UserError);
  p.steps = {{ir::OpKind::concat, ElemType::f32}};
  EXPECT_THROW(elementwise_source(p, ElementwiseTiles{}), UserError);
}

TEST(CodegenElementwise, GeometryCoversOddTotals) {
  const LaunchGeometry g = elementwise_geometry(1001, ElementwiseTiles{256, 4});
  EXPECT_EQ(g.grid[0], 1u);
  EXPECT_EQ(elementwise_geometry(1025, ElementwiseTiles{256, 4}).grid[0], 2u);
  EXPECT_EQ(elementwise_geometry(int64_t{1} << 40, ElementwiseTiles{}).grid[0], 132u * 32);
}

TEST(CodegenElementwise, ChainsCompileForSm90) {
  ElementwiseProblem swiglu;  // silu(gate) * up, both bf16
  swiglu.rank = 2;
  swiglu.input = swiglu.output = ElemType::bf16;
  swiglu.steps = {{ir::OpKind::silu, ElemType::f32}, {ir::OpKind::mul, ElemType::bf16}};
  swiglu.all_contiguous = true;
  ElementwiseProblem broadcast;  // (x + bias[C]) / scale, gelu, in rank 4
  broadcast.rank = 4;
  broadcast.steps = {{ir::OpKind::add, ElemType::f32},
                     {ir::OpKind::div, ElemType::f16},
                     {ir::OpKind::gelu, ElemType::f32}};
  for (const ElementwiseProblem& p : {swiglu, broadcast}) {
    const KernelSource source = elementwise_source(p, ElementwiseTiles{256, 4});
    const CompiledKernel compiled = compile_kernel(source, 90);
    EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), 90) << source.name;
  }
}

TEST(CodegenElementwise, ContiguousChainsMoveWholeVectors) {
  ElementwiseProblem p;
  p.rank = 1;
  p.input = p.output = ElemType::bf16;
  p.steps = {{ir::OpKind::add, ElemType::bf16}, {ir::OpKind::relu, ElemType::f32}};
  p.all_contiguous = true;
  const KernelSource vector = elementwise_source(p, ElementwiseTiles{256, 8});  // 16-byte chunks
  EXPECT_NE(vector.source.find("ChunkOut out;"), std::string::npos);
  const CompiledKernel compiled = compile_kernel(vector, 90, /*want_ptx=*/true);
  EXPECT_GT(testing::count_substr(compiled.ptx, "ld.global.v4"), 0);
  EXPECT_GT(testing::count_substr(compiled.ptx, "st.global.v4"), 0);
  p.input = p.output = ElemType::f32;
  p.steps = {{ir::OpKind::add, ElemType::f32}};  // 8 x f32 = 32 bytes: element by element
  EXPECT_EQ(elementwise_source(p, ElementwiseTiles{256, 8}).source.find("ChunkOut"),
            std::string::npos);
  p.all_contiguous = false;  // broadcasting: never chunked
  EXPECT_EQ(elementwise_source(p, ElementwiseTiles{256, 4}).source.find("ChunkOut"),
            std::string::npos);
}

}  // namespace
}  // namespace cuvil::runtime::cuda::codegen
#endif  // CUVIL_HAVE_CUDA
