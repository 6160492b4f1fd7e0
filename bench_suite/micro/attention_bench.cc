// Attention kernels at the workloads' shapes, side by side: sdpa.blocked (query blocks x all keys,
// two GEMMs), sdpa.flash (tiled, online softmax), sdpa.auto (what the default pipeline runs) and
// sdpa.flash_bf16 (flash with bf16 products, what O3 runs; skipped on CPUs without AVX512_BF16).
// FLOPs: 2 per multiply-accumulate of Q K^T and P V; causal counts only the visible pairs. %peak
// is against probes::machine_peak at the same thread count: the fp32 FMA peak, or for
// sdpa.flash_bf16 the bf16 dot-product peak where measured.
// The tiles/ family sweeps flash tile sizes (--benchmark_filter=-tiles/ skips it, about a minute).
// Run: cuvil-micro-attention [--benchmark_filter=sdxl] (threads: CUVIL_THREADS, else all).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_suite/micro/bench_threads.h"
#include "bench_suite/micro/counters.h"
#include "passes/ir/graph.h"
#include "probes/machine_peak.h"
#include "runtime/cpu/attrs.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace {

namespace micro = cuvil::bench::micro;
using micro::bench_pool;
using micro::bench_threads;

using cuvil::runtime::KernelArgs;
using cuvil::runtime::Step;
using cuvil::runtime::ThreadPool;

struct Shape {
  const char* name;
  int64_t hq, hkv, sq, skv, d;
  bool causal;
};

const Shape kShapes[] = {
    {"sdxl_self_64x64", 10, 10, 4096, 4096, 64, false},
    {"sdxl_self_32x32", 20, 20, 1024, 1024, 64, false},
    {"sdxl_cross_64x64", 10, 10, 4096, 77, 64, false},
    {"sdxl_cross_32x32", 20, 20, 1024, 77, 64, false},
    {"llama_prefill512_gqa", 32, 8, 512, 512, 128, true},
    {"llama_decode_ctx2048", 32, 8, 1, 2048, 128, true},
};

// This machine's measured peaks at the pool's thread count (cached per machine).
const cuvil::probes::MachinePeak& machine_peak() {
  static const cuvil::probes::MachinePeak peak = cuvil::probes::machine_peak(bench_threads());
  return peak;
}

double flops(const Shape& s) {
  double pairs = 0;
  for (int64_t i = 0; i < s.sq; ++i) {
    pairs += static_cast<double>(s.causal ? std::min(s.skv, i + s.skv - s.sq + 1) : s.skv);
  }
  return 2.0 * static_cast<double>(s.hq) * pairs * static_cast<double>(2 * s.d);
}

std::vector<float> random_vector(int64_t n, uint64_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  cuvil::ir::generate(cuvil::ir::ConstantInit::normal(0.0f, 1.0f, seed), 0, n, v.data());
  return v;
}

void run_attention(benchmark::State& state, const Shape& s, const std::string& kernel,
                   int64_t block_q = 0, int64_t block_kv = 0) {
  const cuvil::runtime::KernelInfo* k =
      cuvil::runtime::find_kernel(cuvil::ir::OpKind::sdpa, kernel);
  if (!k) {
    state.SkipWithError("kernel not registered");
    return;
  }
  const std::vector<float> q = random_vector(s.hq * s.sq * s.d, 1);
  const std::vector<float> kk = random_vector(s.hkv * s.skv * s.d, 2);
  const std::vector<float> v = random_vector(s.hkv * s.skv * s.d, 3);
  std::vector<float> out(static_cast<size_t>(s.hq * s.sq * s.d));
  Step step;
  step.op = cuvil::ir::OpKind::sdpa;
  step.kernel = kernel;
  step.fn = k->fn;
  step.attrs.set("causal", int64_t{s.causal ? 1 : 0});
  if (block_q > 0) step.attrs.set(cuvil::runtime::cpu::attrs::kAttentionBlockQ, block_q);
  if (block_kv > 0) step.attrs.set(cuvil::runtime::cpu::attrs::kAttentionBlockKv, block_kv);
  step.inputs = {0, 1, 2};
  step.input_shapes = {{1, s.hq, s.sq, s.d}, {1, s.hkv, s.skv, s.d}, {1, s.hkv, s.skv, s.d}};
  step.output_shape = {1, s.hq, s.sq, s.d};
  if (k->supports && !k->supports(step)) {
    state.SkipWithError("the kernel does not run here (sdpa.flash_bf16: no avx512_bf16)");
    return;
  }
  cuvil::runtime::schedule_step(step, *k);
  const float* in[] = {q.data(), kk.data(), v.data()};
  const KernelArgs args{step, in, out.data(), bench_pool()};
  const double peak = machine_peak().of(cuvil::runtime::kernel_arithmetic(kernel));
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    k->fn(args);
    benchmark::DoNotOptimize(out.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double gflops = flops(s) * 1e-9 * static_cast<double>(state.iterations()) / seconds;
  state.counters["GFLOP/s"] = gflops;
  if (peak > 0) state.counters["pct_peak_flops"] = micro::pct_of_peak(gflops, peak);
  state.counters["threads"] = bench_pool().threads();
}

const int kRegistered = [] {
  for (const Shape& s : kShapes) {
    for (const char* kernel : {"sdpa.blocked", "sdpa.flash", "sdpa.auto", "sdpa.flash_bf16"}) {
      const std::string name = std::string(s.name) + "/" + kernel;
      benchmark::RegisterBenchmark(
          name.c_str(), [s, kernel](benchmark::State& st) { run_attention(st, s, kernel); })
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond)
          ->MinTime(0.3);
    }
  }
  // Tile sizes of sdpa.flash (the attention-tiling pass's knobs) on two shapes.
  for (const Shape& s : {kShapes[1], kShapes[4]}) {
    for (int64_t bq : {16, 32, 64, 128, 256}) {
      for (int64_t bkv : {64, 128, 256, 512, 1024}) {
        const std::string name = std::string("tiles/") + s.name + "/q" + std::to_string(bq) +
                                 "_kv" + std::to_string(bkv);
        benchmark::RegisterBenchmark(
            name.c_str(),
            [s, bq, bkv](benchmark::State& st) { run_attention(st, s, "sdpa.flash", bq, bkv); })
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond)
            ->MinTime(0.3);
      }
    }
  }
  return 0;
}();

}  // namespace

BENCHMARK_MAIN();
