#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "passes/ir/tensor.h"
#include "runtime/cpu/gemm.h"
#include "runtime/thread_pool.h"
#include "tests/runtime/random_data.h"

namespace cuvil::runtime::cpu {
namespace {

struct Case {
  int64_t m, n, k;
  bool transposed;
};

// C = A op(B) (+ bias) by a naive triple loop with fp64 accumulation.
ir::Tensor naive(const Case& c, const std::vector<float>& a, const std::vector<float>& b,
                 const float* bias, bool bias_per_row) {
  ir::Tensor out({c.m, c.n});
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const float bv = c.transposed ? b[j * c.k + p] : b[p * c.n + j];
        acc += static_cast<double>(a[i * c.k + p]) * bv;
      }
      if (bias) acc += bias_per_row ? bias[i] : bias[j];
      out.data[i * c.n + j] = static_cast<float>(acc);
    }
  }
  return out;
}

double run_case(const Case& c, int threads, GemmBlocking blocking, bool with_bias,
                bool bias_per_row = false) {
  const auto a = testing::normal_vector(c.m * c.k, 1);
  const auto b = testing::normal_vector(c.k * c.n, 2);
  const auto bias = testing::normal_vector(bias_per_row ? c.m : c.n, 3);
  ir::Tensor out({c.m, c.n});
  ThreadPool pool(threads);
  GemmProblem p;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a = a.data(), p.lda = c.k;
  p.b = b.data(), p.ldb = c.transposed ? c.k : c.n, p.b_transposed = c.transposed;
  p.c = out.data.data(), p.ldc = c.n;
  p.bias = with_bias ? bias.data() : nullptr;
  p.bias_per_row = bias_per_row;
  p.blocking = blocking;
  gemm(p, pool);
  return ir::max_relative_error(out, naive(c, a, b, p.bias, bias_per_row));
}

TEST(Gemm, OddSizesMatchNaiveLoop) {
  const int64_t sizes[] = {1, 3, 7, 17, 33, 129};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        ASSERT_LT(run_case({m, n, k, false}, 1, {}, false), 1e-4) << m << "x" << n << "x" << k;
      }
    }
  }
}

TEST(Gemm, TransposedBMatchesNaiveLoop) {
  const int64_t sizes[] = {1, 3, 17, 129};
  for (int64_t m : sizes) {
    for (int64_t n : sizes) {
      for (int64_t k : sizes) {
        ASSERT_LT(run_case({m, n, k, true}, 1, {}, false), 1e-4) << m << "x" << n << "x" << k;
      }
    }
  }
}

TEST(Gemm, SmallBlocksExerciseEveryPanelEdge) {
  // Blocks smaller than the problem: several MC, KC and NC panels with ragged ends.
  const GemmBlocking tiny{24, 16, 64, false};
  EXPECT_LT(run_case({77, 131, 53, false}, 1, tiny, true), 1e-4);
  EXPECT_LT(run_case({77, 131, 53, true}, 1, tiny, true), 1e-4);
}

TEST(Gemm, PortableMicroKernelMatchesNaiveLoop) {
  GemmBlocking portable;
  portable.portable = true;
  EXPECT_LT(run_case({13, 35, 19, false}, 1, portable, true), 1e-4);
  EXPECT_LT(run_case({12, 32, 7, true}, 1, portable, false), 1e-4);
}

TEST(Gemm, MicroKernelEdgeTilesOfEveryShape) {
  // Every remainder of the 12 x 32 register tile.
  for (int64_t m = 1; m <= 13; ++m) {
    for (int64_t n : {1, 15, 16, 17, 31, 32, 33}) {
      ASSERT_LT(run_case({m, n, 5, false}, 1, {}, false), 1e-4) << m << "x" << n;
    }
  }
}

TEST(Gemm, NextSliverPrefetchOnAndOffAgreeAtOddSizes) {
  // Many slivers per panel and row tiles of every remainder, with and without the prefetch.
  for (bool prefetch : {true, false}) {
    GemmBlocking blocking{40, 29, 96, false};
    blocking.prefetch_b = prefetch;
    for (const Case& c : {Case{77, 131, 53, false}, Case{13, 97, 300, true}, Case{3, 200, 7, true},
                          Case{128, 65, 129, true}}) {
      ASSERT_LT(run_case(c, 2, blocking, true), 1e-4)
          << c.m << "x" << c.n << "x" << c.k << " prefetch=" << prefetch;
    }
  }
}

TEST(Gemm, PrefetchKnobIsAStepAttribute) {
  ir::Attrs attrs;
  EXPECT_TRUE(gemm_blocking(attrs).prefetch_b);
  attrs.set("gemm.prefetch_b", int64_t{0});
  EXPECT_FALSE(gemm_blocking(attrs).prefetch_b);
}

TEST(Gemm, BiasPerColumnAndPerRow) {
  EXPECT_LT(run_case({33, 65, 17, true}, 1, {}, true, false), 1e-4);
  EXPECT_LT(run_case({33, 65, 17, false}, 1, {}, true, true), 1e-4);
}

TEST(Gemm, FewRowsReadBInPlaceWithBiasOnTwoThreads) {
  for (int64_t m : {1, 2, 4}) {
    for (bool transposed : {false, true}) {
      for (bool per_row : {false, true}) {
        ASSERT_LT(run_case({m, 301, 67, transposed}, 2, {}, true, per_row), 1e-4) << m;
      }
    }
  }
}

TEST(Gemm, TwoThreadsSplitAlongEitherDimension) {
  EXPECT_LT(run_case({7, 515, 33, true}, 2, {}, true), 1e-4);         // split N
  EXPECT_LT(run_case({515, 7, 33, false}, 2, {}, true, true), 1e-4);  // split M
  EXPECT_LT(run_case({200, 300, 400, false}, 2, {}, false), 1e-4);
}

TEST(Gemm, EpilogueAppliedToEveryElement) {
  const Case c{37, 45, 29, true};
  const auto a = testing::normal_vector(c.m * c.k, 4);
  const auto b = testing::normal_vector(c.k * c.n, 5);
  const auto residual = testing::normal_vector(c.n, 6);
  // A step whose output is [m, n]: relu, then add input 0 (a per-column vector).
  Step step;
  step.inputs = {0};
  step.input_shapes = {{c.n}};
  step.output_shape = {c.m, c.n};
  step.epilogue = {{ir::OpKind::relu, -1}, {ir::OpKind::add, 0}};
  const float* ins[] = {residual.data()};
  ir::Tensor out({c.m, c.n});
  const Epilogue epi(step, ins, out.data.data());
  ThreadPool pool(2);
  GemmProblem p;
  p.m = c.m, p.n = c.n, p.k = c.k;
  p.a = a.data(), p.lda = c.k, p.b = b.data(), p.ldb = c.k, p.b_transposed = true;
  p.c = out.data.data(), p.ldc = c.n;
  p.epilogue = &epi;
  p.blocking = {12, 8, 32, false};
  gemm(p, pool);
  ir::Tensor want = naive(c, a, b, nullptr, false);
  for (int64_t i = 0; i < c.m * c.n; ++i) {
    want.data[i] = std::max(want.data[i], 0.0f) + residual[i % c.n];
  }
  EXPECT_LT(ir::max_relative_error(out, want), 1e-4);
}

}  // namespace
}  // namespace cuvil::runtime::cpu
