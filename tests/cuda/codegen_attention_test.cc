// Built only with the CUDA toolkit (the generators link NVRTC).
#if CUVIL_HAVE_CUDA
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "base/error.h"
#include "runtime/cuda/codegen/attention.h"
#include "tests/cuda/codegen_test_util.h"

namespace cuvil::runtime::cuda::codegen {
namespace {

AttentionProblem attention(int64_t b, int64_t hq, int64_t hkv, int64_t sq, int64_t skv, int64_t d,
                           bool causal) {
  AttentionProblem p;
  p.batch = b;
  p.heads_q = hq;
  p.heads_kv = hkv;
  p.seq_q = sq;
  p.seq_kv = skv;
  p.head_dim = p.head_dim_v = d;
  p.causal = causal;
  return p;
}

TEST(CodegenAttention, GeometryIsQueryTilesByHeadsByBatch) {
  const AttentionTiles tiles;  // block_q 64, 4 warps
  const LaunchGeometry g = attention_geometry(attention(2, 32, 8, 513, 513, 128, true), tiles);
  EXPECT_EQ(g.grid[0], 9u);  // ceil(513 / 64)
  EXPECT_EQ(g.grid[1], 32u);
  EXPECT_EQ(g.grid[2], 2u);
  EXPECT_EQ(g.block[0], 128u);
  const LaunchGeometry decode = attention_geometry(attention(1, 32, 8, 1, 4096, 128, true), tiles);
  EXPECT_EQ(decode.grid[0], 1u);
}

TEST(CodegenAttention, DefaultScaleIsInverseSqrtHeadDim) {
  const AttentionProblem p = attention(1, 2, 1, 3, 5, 64, false);
  EXPECT_DOUBLE_EQ(attention_dense_params(p, nullptr, nullptr, nullptr, nullptr).scale, 0.125);
  AttentionProblem scaled = p;
  scaled.scale = 0.5;
  EXPECT_DOUBLE_EQ(attention_dense_params(scaled, nullptr, nullptr, nullptr, nullptr).scale, 0.5);
}

TEST(CodegenAttention, DenseParamsAreBhsdStrides) {
  AttentionProblem p = attention(2, 4, 2, 3, 5, 8, false);
  p.head_dim_v = 16;
  const AttentionKernelParams params =
      attention_dense_params(p, nullptr, nullptr, nullptr, nullptr);
  EXPECT_EQ(params.q_stride[0], 4 * 3 * 8);
  EXPECT_EQ(params.q_stride[1], 3 * 8);
  EXPECT_EQ(params.k_stride[0], 2 * 5 * 8);
  EXPECT_EQ(params.v_stride[1], 5 * 16);
  EXPECT_EQ(params.o_stride[2], 16);
}

TEST(CodegenAttention, RejectsHeadsNotGrouped) {
  try {
    attention_source(attention(1, 6, 4, 8, 8, 64, false), AttentionTiles{});
    ADD_FAILURE() << "no error";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("heads_kv"), std::string::npos) << error.what();
  }
}

TEST(CodegenAttention, RejectsIllegalTilesNamingTheParameter) {
  const AttentionProblem p = attention(1, 1, 1, 8, 8, 64, false);
  auto expect = [&](AttentionTiles t, const std::string& parameter) {
    try {
      attention_source(p, t);
      ADD_FAILURE() << "no error for " << parameter;
    } catch (const UserError& error) {
      EXPECT_NE(std::string(error.what()).find(parameter), std::string::npos) << error.what();
    }
  };
  expect(AttentionTiles{63, 64, 4}, "block_q");
  expect(AttentionTiles{64, 48, 4}, "block_kv");
  expect(AttentionTiles{64, 64, 33}, "warps");
  expect(AttentionTiles{512, 64, 1}, "accumulators");
  AttentionProblem wide = attention(1, 1, 1, 8, 8, 256, false);
  try {
    attention_source(wide, AttentionTiles{256, 256, 32});
    ADD_FAILURE() << "no error for shared memory";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("shared memory"), std::string::npos);
  }
  EXPECT_THROW(attention_source(attention(1, 1, 1, 8, 8, 300, false), AttentionTiles{}), UserError);
}

TEST(CodegenAttention, CausalEndAlignmentIsInTheSource) {
  const std::string source =
      attention_source(attention(1, 1, 1, 3, 7, 64, true), AttentionTiles{}).source;
  EXPECT_NE(source.find("const i64 offset = p.skv - p.sq;"), std::string::npos);
  EXPECT_NE(source.find("kj <= qi + offset"), std::string::npos);
  EXPECT_NE(source.find("CAUSAL = true"), std::string::npos);
}

struct AttentionCase {
  std::string label;
  AttentionProblem problem;
  AttentionTiles tiles;
};

// gtest prints the label instead of the struct's bytes.
void PrintTo(const AttentionCase& c, std::ostream* out) {
  *out << c.label;
}

std::vector<AttentionCase> attention_cases() {
  std::vector<AttentionCase> cases;
  AttentionProblem llama = attention(1, 32, 8, 512, 512, 128, true);
  cases.push_back({"llama_prefill_gqa_causal", llama, AttentionTiles{}});
  cases.push_back(
      {"llama_decode", attention(1, 32, 8, 1, 4097, 128, true), AttentionTiles{16, 64, 1}});
  AttentionProblem cross = attention(2, 10, 10, 4096, 77, 64, false);
  cross.type = ElemType::f16;
  cases.push_back({"sdxl_cross_f16", cross, AttentionTiles{64, 32, 4}});
  AttentionProblem odd = attention(1, 3, 1, 7, 17, 17, true);
  odd.head_dim_v = 3;
  odd.type = ElemType::f32;
  cases.push_back({"odd_f32", odd, AttentionTiles{8, 32, 2}});
  return cases;
}

class AttentionCompiles : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionCompiles, ForSm90WithoutSpills) {
  const AttentionCase& c = GetParam();
  const CompiledKernel compiled =
      testing::compile_verbose(attention_source(c.problem, c.tiles), 90);
  EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), 90);
  EXPECT_TRUE(testing::log_reports_no_spills(compiled.log)) << compiled.log;
}

INSTANTIATE_TEST_SUITE_P(Matrix, AttentionCompiles, ::testing::ValuesIn(attention_cases()),
                         [](const auto& info) { return info.param.label; });

TEST(CodegenAttention, TensorCoreVariantUsesHmmaForBothProducts) {
  AttentionProblem p = attention(1, 32, 8, 512, 512, 128, true);
  const AttentionTiles tiles{64, 64, 4, /*tensor_cores=*/true};
  const KernelSource source = attention_source(p, tiles);
  EXPECT_NE(source.name.find("_tc"), std::string::npos);
  const CompiledKernel compiled = testing::compile_verbose(source, 90);
  EXPECT_TRUE(testing::log_reports_no_spills(compiled.log)) << compiled.log;
  // QK^T: (D/16) x (block_kv/8) = 64 mma; PV: (block_kv/16) x (Dv/8) = 64 mma.
  EXPECT_EQ(testing::count_of(testing::sass_opcode_counts(compiled.cubin), testing::kSassHmma),
            128);
  EXPECT_EQ(attention_geometry(p, tiles).shared_bytes, (64u * 136 + 64 * 136 + 64 * 136) * 2);
}

TEST(CodegenAttention, TensorCoreVariantCompilesForOddSequencesAndF16Cross) {
  AttentionProblem odd = attention(2, 3, 1, 7, 17, 64, true);
  odd.head_dim_v = 32;
  AttentionProblem cross = attention(2, 10, 10, 4096, 77, 64, false);
  cross.type = ElemType::f16;
  for (const AttentionProblem& p : {odd, cross}) {
    const CompiledKernel compiled =
        compile_kernel(attention_source(p, AttentionTiles{32, 32, 2, true}), 90);
    EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), 90);
  }
}

TEST(CodegenAttention, TensorCoreVariantRejectsWhatItCannotDo) {
  AttentionProblem p = attention(1, 1, 1, 8, 8, 64, false);
  p.type = ElemType::f32;
  EXPECT_THROW(attention_source(p, AttentionTiles{64, 64, 4, true}), UserError);
  p.type = ElemType::bf16;
  p.head_dim = 72;  // not a multiple of 16
  EXPECT_THROW(attention_source(p, AttentionTiles{64, 64, 4, true}), UserError);
  p.head_dim = 64;
  try {
    attention_source(p, AttentionTiles{32, 64, 4, true});
    ADD_FAILURE() << "no error";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find("block_q"), std::string::npos) << error.what();
  }
}

TEST(CodegenAttention, CompilesForSm80) {
  const CompiledKernel compiled =
      compile_kernel(attention_source(attention(1, 8, 8, 64, 64, 64, false), AttentionTiles{}), 80);
  EXPECT_EQ(testing::cubin_sm_arch(compiled.cubin), 80);
}

}  // namespace
}  // namespace cuvil::runtime::cuda::codegen
#endif  // CUVIL_HAVE_CUDA
