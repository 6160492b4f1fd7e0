// f32 vs bf16 vs int8 through the registered kernels (linear.gemm / linear.bf16 / linear.int8,
// conv2d.auto / conv2d.bf16 / conv2d.int8) at Llama-3-8B projection shapes (M = 1, 128, 512 rows)
// and ResNet-50 convolutions, side by side in one process. Weights are prepared (packed,
// converted, quantised) once before timing, as at lowering. FLOPs: 2 per multiply-accumulate.
// GB/s: weight bytes at the kernel's precision (4, 2, 1 per element) per call, the bound for
// M = 1. Run: cuvil-micro-precision [--benchmark_filter=llama] (threads: CUVIL_THREADS, default 2).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench_suite/micro/bench_threads.h"
#include "bench_suite/micro/counters.h"
#include "passes/ir/graph.h"
#include "runtime/cpu/cpu_isa.h"
#include "runtime/cpu/quantize.h"
#include "runtime/kernel_table.h"
#include "runtime/thread_pool.h"

namespace {

namespace micro = cuvil::bench::micro;
using micro::bench_pool;
using micro::bench_threads;

using cuvil::ir::OpKind;
using cuvil::runtime::KernelArgs;
using cuvil::runtime::KernelInfo;
using cuvil::runtime::Step;
using cuvil::runtime::ThreadPool;

std::vector<float> random_vector(int64_t n, uint64_t seed, float stddev) {
  std::vector<float> v(static_cast<size_t>(n));
  cuvil::ir::generate(cuvil::ir::ConstantInit::normal(0.0f, stddev, seed), 0, n, v.data());
  return v;
}

const char* kPrecisions[] = {"f32", "bf16", "int8"};

double weight_bytes_per_element(const std::string& precision) {
  return precision == "f32" ? 4.0 : precision == "bf16" ? 2.0 : 1.0;
}

bool available(const std::string& precision) {
  if (precision == "bf16") return cuvil::runtime::cpu::cpu_has_avx512();  // or widened
  if (precision == "int8") return cuvil::runtime::cpu::cpu_has_avx512_vnni();
  return true;
}

// Times one step of `kernel` with inputs x (activation) and w (weight), prepared once.
void run_step(benchmark::State& state, Step step, const std::string& kernel,
              const std::vector<float>& x, const std::vector<float>& w, double flops,
              double weight_bytes) {
  const KernelInfo* k = cuvil::runtime::find_kernel(step.op, kernel);
  if (!k || (k->supports && !k->supports(step))) {
    state.SkipWithError((kernel + " is not available on this CPU").c_str());
    return;
  }
  step.kernel = kernel;
  step.inputs = {0, 1};
  const float* constants[2] = {nullptr, w.data()};
  cuvil::runtime::schedule_step(step, *k);
  if (k->prepare) step.prepared = k->prepare(step, constants);
  std::vector<float> out(static_cast<size_t>(cuvil::ir::num_elements(step.output_shape)));
  const float* in[2] = {x.data(), w.data()};
  const KernelArgs args{step, in, out.data(), bench_pool()};
  const micro::LoopTimer timer;
  for (auto _ : state) {
    k->fn(args);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  const double seconds = timer.seconds();
  const double iterations = static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = micro::per_second(flops * 1e-9 * iterations, seconds);
  state.counters["weight_GB/s"] = micro::per_second(weight_bytes * 1e-9 * iterations, seconds);
}

void linear(benchmark::State& state, int64_t m, int64_t n, int64_t k, std::string precision) {
  Step step;
  step.op = OpKind::linear;
  step.input_shapes = {{m, k}, {n, k}};
  step.output_shape = {m, n};
  const auto x = random_vector(m * k, 1, 1.0f);
  const auto w = random_vector(n * k, 2, 0.02f);
  const std::string kernel = precision == "f32" ? "linear.gemm" : "linear." + precision;
  run_step(state, step, kernel, x, w, 2.0 * m * n * k,
           static_cast<double>(n * k) * weight_bytes_per_element(precision));
}

// NHWC convolution, groups = 1.
void conv(benchmark::State& state, int64_t batch, int64_t c, int64_t hw, int64_t o, int64_t ksize,
          int64_t stride, std::string precision) {
  const int64_t pad = ksize / 2;
  const int64_t ohw = (hw + 2 * pad - ksize) / stride + 1;
  Step step;
  step.op = OpKind::conv2d;
  step.input_shapes = {{batch, hw, hw, c}, {o, c, ksize, ksize}};
  step.output_shape = {batch, ohw, ohw, o};
  step.attrs.set("layout", std::string("nhwc"));
  step.attrs.set("stride", std::vector<int64_t>{stride, stride});
  step.attrs.set("pad", std::vector<int64_t>{pad, pad});
  // Post-ReLU activations are non-negative, as ResNet's conv inputs are.
  auto x = random_vector(batch * hw * hw * c, 3, 1.0f);
  for (float& v : x) v = v < 0 ? 0 : v;
  const auto w = random_vector(o * c * ksize * ksize, 4, 0.05f);
  const std::string kernel = precision == "f32" ? "conv2d.auto" : "conv2d." + precision;
  run_step(state, step, kernel, x, w, 2.0 * batch * ohw * ohw * o * c * ksize * ksize,
           static_cast<double>(o * c * ksize * ksize) * weight_bytes_per_element(precision));
}

struct LinearShape {
  const char* name;
  int64_t n, k;
};
const LinearShape kLinear[] = {{"llama_qo_4096x4096", 4096, 4096},
                               {"llama_up_14336x4096", 14336, 4096},
                               {"llama_down_4096x14336", 4096, 14336}};

struct ConvShape {
  const char* name;
  int64_t c, hw, o, k, stride;
};
const ConvShape kConv[] = {{"resnet_l2_3x3_128_28", 128, 28, 128, 3, 1},
                           {"resnet_l3_1x1_1024to256_14", 1024, 14, 256, 1, 1},
                           {"resnet_l4_3x3_512_7", 512, 7, 512, 3, 1}};

int register_all() {
  for (const char* p : kPrecisions) {
    if (!available(p)) continue;
    for (const LinearShape& s : kLinear) {
      for (int64_t m : {1, 128, 512}) {
        // The largest products are measured at one shape only, to keep the run short.
        if (m == 512 && s.n != 4096) continue;
        const std::string name = std::string(s.name) + "/M=" + std::to_string(m) + "/" + p;
        benchmark::RegisterBenchmark(name.c_str(), linear, m, s.n, s.k, std::string(p))
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(0.3);
      }
    }
    for (const ConvShape& s : kConv) {
      for (int64_t batch : {1, 16}) {
        const std::string name = std::string(s.name) + "/b" + std::to_string(batch) + "/" + p;
        benchmark::RegisterBenchmark(name.c_str(), conv, batch, s.c, s.hw, s.o, s.k, s.stride,
                                     std::string(p))
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(0.3);
      }
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
