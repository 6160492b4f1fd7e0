// Built only with the CUDA toolkit (the generators link NVRTC).
#if CUVIL_HAVE_CUDA
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda/codegen/gemm.h"
#include "tests/cuda/codegen_test_util.h"

namespace cuvil::runtime::cuda::codegen {
namespace {

using testing::compile_verbose;
using testing::count_of;
using testing::count_substr;

GemmProblem problem(int64_t m, int64_t n, int64_t k, ElemType type = ElemType::bf16) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = p.b = type;
  p.c = type;
  return p;
}

TEST(CodegenGemm, GeometryCoversOddSizes) {
  const GemmTiles tiles;  // 128 x 128, 4 warps
  GemmProblem p = problem(17, 3, 7);
  p.batch = 5;
  const LaunchGeometry g = gemm_geometry(p, tiles);
  EXPECT_EQ(g.grid[0], 1u);
  EXPECT_EQ(g.grid[1], 1u);
  EXPECT_EQ(g.grid[2], 5u);
  EXPECT_EQ(g.block[0], 128u);
  const LaunchGeometry big = gemm_geometry(problem(129, 257, 1), tiles);
  EXPECT_EQ(big.grid[0], 3u);  // ceil(257 / 128)
  EXPECT_EQ(big.grid[1], 2u);  // ceil(129 / 128)
}

TEST(CodegenGemm, SharedMemoryIsPipelineOrEpilogueTile) {
  GemmTiles tiles;  // 3 stages x (128 + 128) rows x (32 + 8) bf16 = 61440; epilogue 128x132x4
  EXPECT_EQ(gemm_shared_bytes(problem(512, 512, 512), tiles), 128 * 132 * 4);
  tiles.stages = 4;
  EXPECT_EQ(gemm_shared_bytes(problem(512, 512, 512), tiles), 4 * 256 * 40 * 2);
  EXPECT_EQ(gemm_geometry(problem(512, 512, 512), tiles).shared_bytes, 4u * 256 * 40 * 2);
}

TEST(CodegenGemm, VectorWidthFallsBackForOddLeadingDimensions) {
  const GemmTiles tiles;  // vector_width 8
  EXPECT_EQ(gemm_vector_width_a(problem(64, 64, 4096), tiles), 8);
  EXPECT_EQ(gemm_vector_width_a(problem(64, 64, 12), tiles), 4);
  EXPECT_EQ(gemm_vector_width_a(problem(64, 64, 7), tiles), 1);
  GemmProblem nn = problem(64, 6, 64);
  nn.b_transposed = false;  // B is [K, N]: N is B's leading dimension
  EXPECT_EQ(gemm_vector_width_b(nn, tiles), 2);
  GemmTiles f32_tiles;
  f32_tiles.vector_width = 4;
  EXPECT_EQ(gemm_vector_width_a(problem(64, 64, 4096, ElemType::f32), f32_tiles), 4);
}

TEST(CodegenGemm, DenseParamsAreRowMajor) {
  GemmProblem p = problem(3, 5, 7);
  p.b_transposed = false;
  const GemmKernelParams params = gemm_dense_params(p, nullptr, nullptr, nullptr);
  EXPECT_EQ(params.lda, 7);
  EXPECT_EQ(params.ldb, 5);
  EXPECT_EQ(params.ldc, 5);
  EXPECT_EQ(params.batch_stride_a, 21);
  EXPECT_EQ(params.batch_stride_b, 35);
  EXPECT_EQ(params.batch_stride_c, 15);
  EXPECT_EQ(sizeof(GemmKernelParams), 13 * 8 + 4 * 32u);  // 8-byte fields, no padding
}

TEST(CodegenGemm, DefaultTilesAreLegalAndFollowTheShape) {
  for (ElemType type : {ElemType::bf16, ElemType::f32}) {
    for (int64_t m : {1, 3, 16, 17, 64, 512, 4096}) {
      for (int64_t n : {1, 7, 4096, 14336}) {
        GemmProblem p = problem(m, n, 4096, type);
        p.c = ElemType::f32;
        const GemmTiles t = default_gemm_tiles(p);
        EXPECT_NO_THROW(validate_gemm(p, t)) << m << "x" << n;
      }
    }
  }
  GemmProblem decode = problem(1, 4096, 4096);
  decode.c = ElemType::f32;
  const GemmTiles d = default_gemm_tiles(decode);
  EXPECT_EQ(d.block_m, 16);
  EXPECT_EQ(d.split_k, 4);    // 64 column blocks: 2 splits = 128 < 132 SMs, 4 = 256
  decode.c = ElemType::bf16;  // a 16-bit output cannot be accumulated atomically
  EXPECT_EQ(default_gemm_tiles(decode).split_k, 1);
  EXPECT_EQ(default_gemm_tiles(problem(4096, 4096, 4096)).block_m, 128);
  EXPECT_EQ(default_gemm_tiles(problem(256, 256, 4096)).block_m, 64);  // 4 big blocks: too few
}

TEST(CodegenGemm, LaunchArgumentsMustKeepVectorAlignment) {
  const GemmProblem p = problem(64, 64, 64);  // bf16, 8-element (16-byte) vectors
  alignas(16) static char buffer[64];
  GemmKernelParams params = gemm_dense_params(p, buffer, buffer, buffer);
  EXPECT_NO_THROW(check_gemm_params(p, GemmTiles{}, params));
  params.a = buffer + 2;  // one bf16 element off
  EXPECT_THROW(check_gemm_params(p, GemmTiles{}, params), UserError);
  params = gemm_dense_params(p, buffer, buffer, buffer);
  params.batch_stride_b = 12;
  EXPECT_THROW(check_gemm_params(p, GemmTiles{}, params), UserError);
  params = gemm_dense_params(p, buffer, buffer, buffer);
  params.k = 60;  // a kernel generated for k = 64 loads 8 elements at a time
  EXPECT_THROW(check_gemm_params(p, GemmTiles{}, params), UserError);
}

void expect_user_error(GemmTiles tiles, const std::string& parameter,
                       ElemType type = ElemType::bf16) {
  try {
    gemm_source(problem(64, 64, 64, type), tiles);
    ADD_FAILURE() << "no error for " << parameter;
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find(parameter), std::string::npos) << error.what();
  }
}

TEST(CodegenGemm, RejectsBlockNotMultipleOfWarp) {
  GemmTiles t;
  t.block_m = 96;
  expect_user_error(t, "block_m");
  t = GemmTiles{};
  t.block_n = 80;
  expect_user_error(t, "block_n");
}

TEST(CodegenGemm, RejectsWarpTileNotMultipleOf16) {
  GemmTiles t;
  t.warp_m = 24;
  t.block_m = 48;
  expect_user_error(t, "warp_m");
  t = GemmTiles{};
  t.warp_n = 8;
  expect_user_error(t, "warp_n");
}

TEST(CodegenGemm, RejectsBlockKNotMultipleOfMmaK) {
  GemmTiles t;
  t.block_k = 8;  // bf16 needs 16; tf32 would accept 8
  expect_user_error(t, "block_k");
  t.vector_width = 4;
  EXPECT_NO_THROW(gemm_source(problem(64, 64, 64, ElemType::f32), t));
}

TEST(CodegenGemm, RejectsTooManyThreads) {
  GemmTiles t;
  t.block_m = 256;
  t.block_n = 256;
  t.warp_m = 16;
  t.warp_n = 16;  // 16 x 16 warps = 8192 threads
  t.stages = 2;
  expect_user_error(t, "threads");
}

TEST(CodegenGemm, RejectsSharedMemoryBeyondSm90Limit) {
  GemmTiles t;
  t.block_m = 256;
  t.block_n = 256;
  t.block_k = 64;
  t.stages = 4;  // 4 x 512 x 72 x 2 = 294912 bytes
  expect_user_error(t, "shared memory");
}

TEST(CodegenGemm, RejectsStagesOutsideRange) {
  GemmTiles t;
  t.stages = 1;
  expect_user_error(t, "stages");
}

TEST(CodegenGemm, RejectsVectorWiderThan16Bytes) {
  GemmTiles t;
  t.vector_width = 8;  // 32 bytes of f32
  expect_user_error(t, "vector_width", ElemType::f32);
  t.vector_width = 3;
  expect_user_error(t, "vector_width");
}

TEST(CodegenGemm, RejectsMixedInputTypesAndBadSizes) {
  GemmProblem p = problem(4, 4, 4);
  p.b = ElemType::f16;
  EXPECT_THROW(gemm_source(p, GemmTiles{}), UserError);
  EXPECT_THROW(gemm_source(problem(0, 4, 4), GemmTiles{}), UserError);
}

TEST(CodegenGemm, RejectsNonElementwiseEpilogue) {
  GemmProblem p = problem(4, 4, 4);
  p.epilogue = {{ir::OpKind::softmax, ElemType::f32}};
  EXPECT_THROW(gemm_source(p, GemmTiles{}), UserError);
  p.epilogue.assign(kMaxEpilogueOperands + 1, {ir::OpKind::add, ElemType::f32});
  EXPECT_THROW(gemm_source(p, GemmTiles{}), UserError);
}

TEST(CodegenGemm, EpilogueStepsAppearInOrder) {
  GemmProblem p = problem(64, 64, 64);
  p.bias = true;
  p.epilogue = {{ir::OpKind::add, ElemType::bf16},
                {ir::OpKind::gelu, ElemType::f32},
                {ir::OpKind::mul, ElemType::f32}};
  const std::string source = gemm_source(p, GemmTiles{}).source;
  const size_t bias = source.find("p.bias");
  const size_t add =
      source.find("v = v + cuvil_bf16_to_f32(((const unsigned short*)(p.operands[0].data))");
  const size_t gelu = source.find("v = cuvil_gelu(v)");
  const size_t mul = source.find("v = v * ((const float*)(p.operands[1].data))");
  ASSERT_NE(bias, std::string::npos);
  ASSERT_NE(add, std::string::npos);
  ASSERT_NE(gelu, std::string::npos);
  ASSERT_NE(mul, std::string::npos);
  EXPECT_LT(bias, add);
  EXPECT_LT(add, gelu);
  EXPECT_LT(gelu, mul);
}

// One compile case of the matrix below.
struct GemmCase {
  std::string label;
  GemmProblem problem;
  GemmTiles tiles;
  int sm_arch;
};

// gtest prints the label instead of the struct's bytes.
void PrintTo(const GemmCase& c, std::ostream* out) {
  *out << c.label;
}

GemmCase make_case(std::string label, int64_t m, int64_t n, int64_t k, ElemType in, ElemType out,
                   bool b_transposed, GemmTiles tiles, int sm_arch = 90) {
  GemmProblem p = problem(m, n, k, in);
  p.c = out;
  p.b_transposed = b_transposed;
  return {std::move(label), p, tiles, sm_arch};
}

GemmTiles tiles(int bm, int bn, int bk, int wm, int wn, int stages, int vw) {
  return GemmTiles{bm, bn, bk, wm, wn, stages, vw};
}

std::vector<GemmCase> gemm_cases() {
  std::vector<GemmCase> cases;
  cases.push_back(make_case("bf16_llama_nt", 512, 4096, 4096, ElemType::bf16, ElemType::bf16, true,
                            GemmTiles{}));
  cases.push_back(make_case("f16_nn_4stage", 1024, 1024, 1024, ElemType::f16, ElemType::f32, false,
                            tiles(128, 128, 32, 64, 64, 4, 8)));
  cases.push_back(make_case("bf16_odd_1_3_7", 1, 3, 7, ElemType::bf16, ElemType::bf16, true,
                            tiles(64, 64, 32, 32, 32, 3, 8)));
  cases.push_back(make_case("bf16_odd_17_nn", 17, 17, 17, ElemType::bf16, ElemType::f32, false,
                            tiles(32, 32, 16, 16, 16, 2, 8)));
  cases.push_back(make_case("bf16_wide_256x128x64", 4096, 4096, 4096, ElemType::bf16,
                            ElemType::bf16, true, tiles(256, 128, 64, 64, 64, 3, 8)));
  cases.push_back(make_case("tf32_nt", 256, 256, 256, ElemType::f32, ElemType::f32, true,
                            tiles(128, 128, 32, 64, 64, 3, 4)));
  cases.push_back(make_case("tf32_nn_odd", 3, 7, 17, ElemType::f32, ElemType::f32, false,
                            tiles(64, 64, 16, 32, 32, 2, 4)));
  // Decode (M = 1): a 16-row tile, deep pipeline and split-K to spread the weight stream.
  GemmTiles decode = tiles(16, 64, 64, 16, 32, 4, 8);
  decode.split_k = 4;
  cases.push_back(
      make_case("bf16_decode_split_k", 1, 4096, 4096, ElemType::bf16, ElemType::f32, true, decode));
  cases.push_back(
      make_case("bf16_sm80", 512, 512, 512, ElemType::bf16, ElemType::bf16, true, GemmTiles{}, 80));
  cases.push_back(make_case("tf32_sm80_vw2", 100, 100, 100, ElemType::f32, ElemType::bf16, false,
                            tiles(64, 128, 32, 32, 64, 3, 2), 80));
  return cases;
}

class GemmCompiles : public ::testing::TestWithParam<GemmCase> {};

TEST_P(GemmCompiles, ForTargetArchWithTensorCoresAndNoSpills) {
  const GemmCase& c = GetParam();
  GemmProblem p = c.problem;
  p.bias = true;
  if (c.tiles.split_k == 1) {  // split-K takes a bias but no epilogue steps
    p.epilogue = {{ir::OpKind::add, c.problem.c}, {ir::OpKind::silu, ElemType::f32}};
  }
  const KernelSource source = gemm_source(p, c.tiles);
  const CompiledKernel compiled = compile_verbose(source, c.sm_arch);
  EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), c.sm_arch);
  EXPECT_TRUE(testing::log_reports_no_spills(compiled.log)) << compiled.log;
  const auto sass = testing::sass_opcode_counts(compiled.cubin);
  const int mma_k = p.a == ElemType::f32 ? 8 : 16;
  // Every mma.sync of one k step of the block tile, unrolled: (wm/16) * (wn/8) * (bk/mma_k).
  EXPECT_EQ(count_of(sass, testing::kSassHmma),
            (c.tiles.warp_m / 16) * (c.tiles.warp_n / 8) * (c.tiles.block_k / mma_k));
  const bool async = gemm_vector_width_a(p, c.tiles) * elem_bytes(p.a) >= 4;
  EXPECT_EQ(count_of(sass, testing::kSassLdgsts) > 0, async);
}

INSTANTIATE_TEST_SUITE_P(Matrix, GemmCompiles, ::testing::ValuesIn(gemm_cases()),
                         [](const auto& info) { return info.param.label; });

TEST(CodegenGemm, PtxUsesMmaLdmatrixAndCpAsync) {
  const CompiledKernel compiled =
      compile_kernel(gemm_source(problem(512, 512, 512), GemmTiles{}), 90, /*want_ptx=*/true);
  EXPECT_EQ(count_substr(compiled.ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"), 64);
  EXPECT_GT(count_substr(compiled.ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 0);
  EXPECT_GT(count_substr(compiled.ptx, "cp.async.cg.shared.global"), 0);
  EXPECT_GT(count_substr(compiled.ptx, "cp.async.wait_group"), 0);
}

TEST(CodegenGemm, ExactF32TriplesTheTensorCoreProducts) {
  GemmTiles t{64, 64, 16, 32, 32, 3, 4};
  GemmProblem p = problem(17, 33, 65, ElemType::f32);
  p.exact_f32 = true;
  const CompiledKernel compiled = testing::compile_verbose(gemm_source(p, t), 90);
  EXPECT_TRUE(testing::log_reports_no_spills(compiled.log)) << compiled.log;
  // 3xTF32: three m16n8k8 products per fragment pair: 3 * (32/16) * (32/8) * (16/8).
  EXPECT_EQ(count_of(testing::sass_opcode_counts(compiled.cubin), testing::kSassHmma), 48);
}

TEST(CodegenGemm, SplitKMultipliesTheGridAlongZ) {
  GemmTiles t;
  t.split_k = 4;
  GemmProblem p = problem(1, 4096, 4096);
  p.c = ElemType::f32;
  p.batch = 3;
  EXPECT_EQ(gemm_geometry(p, t).grid[2], 12u);
  p.bias = true;
  const KernelSource source = gemm_source(p, t);
  EXPECT_NE(source.source.find("atomicAdd"), std::string::npos);
  EXPECT_NE(source.source.find("if (split == 0) v +="), std::string::npos);
  EXPECT_NE(source.name.find("_k4"), std::string::npos);
  const CompiledKernel compiled = testing::compile_verbose(source, 90);
  EXPECT_TRUE(testing::log_reports_no_spills(compiled.log)) << compiled.log;
}

TEST(CodegenGemm, RejectsSplitKWithEpilogueOr16BitOutput) {
  GemmTiles t;
  t.split_k = 2;
  GemmProblem p = problem(16, 16, 16);  // bf16 output
  EXPECT_THROW(gemm_source(p, t), UserError);
  p.c = ElemType::f32;
  p.epilogue = {{ir::OpKind::relu, ElemType::f32}};
  EXPECT_THROW(gemm_source(p, t), UserError);
  t.split_k = 0;
  p.epilogue.clear();
  expect_user_error(t, "split_k");
}

TEST(CodegenGemm, RejectsExactF32For16BitInputs) {
  GemmProblem p = problem(4, 4, 4);
  p.exact_f32 = true;
  EXPECT_THROW(gemm_source(p, GemmTiles{}), UserError);
}

TEST(CodegenGemm, Tf32PtxRoundsInputsAndUsesTf32Mma) {
  GemmTiles t;
  t.vector_width = 4;
  const CompiledKernel compiled =
      compile_kernel(gemm_source(problem(64, 64, 64, ElemType::f32), t), 90, /*want_ptx=*/true);
  EXPECT_GT(count_substr(compiled.ptx, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), 0);
  EXPECT_GT(count_substr(compiled.ptx, "cvt.rna.tf32.f32"), 0);
}

}  // namespace
}  // namespace cuvil::runtime::cuda::codegen
#endif  // CUVIL_HAVE_CUDA
