// Built only with the CUDA toolkit (the generators link NVRTC).
#if CUVIL_HAVE_CUDA
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda/codegen/norm.h"
#include "tests/cuda/codegen_test_util.h"

namespace cuvil::runtime::cuda::codegen {
namespace {

NormProblem rows(NormKind kind, int64_t r, int64_t dim, ElemType io = ElemType::bf16) {
  NormProblem p;
  p.kind = kind;
  p.rows = r;
  p.dim = dim;
  p.io = io;
  return p;
}

NormProblem group_norm(int64_t n, int64_t c, int64_t spatial, int64_t groups, bool nhwc) {
  NormProblem p;
  p.kind = NormKind::group_norm;
  p.n = n;
  p.c = c;
  p.spatial = spatial;
  p.groups = groups;
  p.nhwc = nhwc;
  return p;
}

TEST(CodegenNorm, OneBlockPerRowOrPerImageGroup) {
  const NormTiles tiles;
  EXPECT_EQ(norm_geometry(rows(NormKind::layer_norm, 17, 4096), tiles).grid[0], 17u);
  EXPECT_EQ(norm_geometry(group_norm(2, 320, 4096, 32, true), tiles).grid[0], 64u);
  EXPECT_EQ(norm_geometry(rows(NormKind::softmax, 3, 7), tiles).block[0], 256u);
}

TEST(CodegenNorm, VectorWidthDividesTheRow) {
  // The kernel name records the width really used.
  EXPECT_NE(norm_source(rows(NormKind::rms_norm, 1, 4096), NormTiles{256, 8}).name.find("_v8"),
            std::string::npos);
  EXPECT_NE(norm_source(rows(NormKind::rms_norm, 1, 4097), NormTiles{256, 8}).name.find("_v1"),
            std::string::npos);
  // NHWC group norm: chunks stay inside one group's channels (C/groups = 10 -> width 2).
  EXPECT_NE(norm_source(group_norm(1, 320, 64, 32, true), NormTiles{256, 8}).name.find("_v2"),
            std::string::npos);
}

TEST(CodegenNorm, RejectsBadGroupsAndTiles) {
  EXPECT_THROW(norm_source(group_norm(1, 30, 4, 4, false), NormTiles{}), UserError);
  try {
    norm_source(rows(NormKind::layer_norm, 1, 8), NormTiles{100, 4});
    ADD_FAILURE() << "no error";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("threads"), std::string::npos);
  }
  EXPECT_THROW(norm_source(rows(NormKind::layer_norm, 1, 8, ElemType::f32), NormTiles{256, 8}),
               UserError);  // 32-byte vectors
  EXPECT_THROW(norm_source(rows(NormKind::softmax, 0, 8), NormTiles{}), UserError);
}

TEST(CodegenNorm, EveryKindCompilesForSm90) {
  const std::vector<NormProblem> problems = {
      rows(NormKind::layer_norm, 3, 7, ElemType::f32),
      rows(NormKind::rms_norm, 512, 4096),
      rows(NormKind::softmax, 17, 77, ElemType::f16),
      group_norm(1, 320, 16384, 32, true),
      group_norm(1, 6, 17, 3, false),
  };
  for (const NormProblem& p : problems) {
    const CompiledKernel compiled = compile_kernel(norm_source(p, NormTiles{128, 4}), 90);
    EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), 90) << compiled.name;
  }
}

}  // namespace
}  // namespace cuvil::runtime::cuda::codegen
#endif  // CUVIL_HAVE_CUDA
