// cuvil's GEMM beside oneDNN at the Llama-3-8B linear shapes (M = 1, 128, 512 rows against
// 4096x4096, 4096x14336 and 14336x4096 weights stored [N, K] like PyTorch), same thread count
// for both. Counters: GFLOP/s and % of this machine's measured FMA peak (2 FLOPs per
// multiply-accumulate); for M = 1 also weight GB/s and % of measured memory read bandwidth.
//
//   build-gemm/bench_suite/micro/cuvil-micro-gemm            (threads: CUVIL_THREADS, else all)
//   CUVIL_ISA=avx2 build-gemm/bench_suite/micro/cuvil-micro-gemm --benchmark_filter=cuvil
//   CUVIL_GEMM=mc=96,kc=384,mr_nr=14x32,partition=m,prefetch_b=0 ...   (cuvil's blocking, as the
//   step attributes of gemm_blocking() without "gemm."); with CUVIL_GEMM_B=... as well, a second
//   cuvil configuration (BM_cuvil_b) runs in the same process, to compare them side by side.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstdlib>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench_suite/micro/bench_threads.h"
#include "bench_suite/micro/counters.h"
#include "probes/machine_peak.h"
#include "runtime/cpu/gemm.h"
#include "runtime/thread_pool.h"

namespace {

namespace micro = cuvil::bench::micro;
using micro::bench_pool;
using micro::bench_threads;

using cuvil::runtime::ThreadPool;
namespace cpu = cuvil::runtime::cpu;

// The blocking cuvil runs with: the defaults, overridden by CUVIL_GEMM ("key=value,..." with the
// keys of gemm_blocking(): mr_nr, mc, kc, nc, partition) to explore the knobs' effect.
cpu::GemmBlocking bench_blocking(const char* variable = "CUVIL_GEMM") {
  cuvil::ir::Attrs attrs;
  const char* env = std::getenv(variable);
  std::string spec = env ? env : "";
  while (!spec.empty()) {
    const size_t comma = spec.find(',');
    const std::string item = spec.substr(0, comma);
    spec = comma == std::string::npos ? "" : spec.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = "gemm." + item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "gemm.mr_nr" || key == "gemm.partition") {
      attrs.set(key, value);
    } else {
      attrs.set(key, static_cast<int64_t>(std::stoll(value)));
    }
  }
  return cpu::gemm_blocking(attrs);
}

const cuvil::probes::MachinePeak& peak() {
  static const cuvil::probes::MachinePeak p = cuvil::probes::machine_peak(bench_threads());
  return p;
}

// Decode reads weights that do not sit in any cache: a product at M = 1 cycles through enough
// copies to exceed this many bytes, as a model's successive layers do.
constexpr size_t kColdBytes = size_t{1} << 30;

struct Weights {
  std::vector<std::vector<float>> copies;  // each [n, k]
};

// Weights per (n, k, copies), made once for the whole program.
const Weights& weights(int64_t n, int64_t k, int copies) {
  static std::map<std::tuple<int64_t, int64_t, int>, std::unique_ptr<Weights>> cache;
  auto& slot = cache[{n, k, copies}];
  if (!slot) {
    slot = std::make_unique<Weights>();
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
    for (int c = 0; c < copies; ++c) {
      std::vector<float> w(static_cast<size_t>(n * k));
      for (float& x : w) x = dist(rng);
      slot->copies.push_back(std::move(w));
    }
  }
  return *slot;
}

int copies_for(int64_t m, int64_t n, int64_t k) {
  if (m > 4) return 1;
  const size_t bytes = static_cast<size_t>(n * k) * sizeof(float);
  return static_cast<int>(std::max<size_t>(1, (kColdBytes + bytes - 1) / bytes));
}

std::vector<float> activations(int64_t m, int64_t k) {
  std::mt19937 rng(3);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> a(static_cast<size_t>(m * k));
  for (float& x : a) x = dist(rng);
  return a;
}

// Counters from the measured loop's own wall time.
void set_counters(benchmark::State& state, int64_t m, int64_t n, int64_t k, double seconds) {
  const double iterations = static_cast<double>(state.iterations());
  const double flops = 2.0 * static_cast<double>(m * n * k) * iterations;
  const benchmark::Counter gflops = micro::per_second(flops * 1e-9, seconds);
  state.counters["GFLOP/s"] = gflops;
  state.counters["pct_peak_flops"] = micro::pct_of_peak(gflops, peak().fp32_gflops);
  if (m <= 4) {
    const double bytes = static_cast<double>(n * k) * sizeof(float) * iterations;
    const benchmark::Counter gbps = micro::per_second(bytes * 1e-9, seconds);
    state.counters["GB/s"] = gbps;
    state.counters["pct_peak_bw"] = micro::pct_of_peak(gbps, peak().mem_read_gbps);
  }
  state.counters["threads"] = bench_threads();
}

// Args: m, k, n, prepack (0/1).
void run_cuvil(benchmark::State& state, const cpu::GemmBlocking& blocking) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool prepack = state.range(3) != 0;
  const Weights& w = weights(n, k, copies_for(m, n, k));
  const std::vector<float> a = activations(m, k);
  std::vector<float> c(static_cast<size_t>(m * n));
  cpu::GemmProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a = a.data(), p.lda = k;
  p.ldb = k, p.b_transposed = true;
  p.c = c.data(), p.ldc = n;
  p.blocking = blocking;
  cpu::PackedB packed;
  if (prepack) {
    const cpu::MicroKernel& mk =
        cpu::pick_micro_kernel(cpu::active_gemm_isa(), p.blocking.mr, p.blocking.nr);
    packed =
        cpu::pack_b_ahead(w.copies[0].data(), k, true, k, n, p.blocking.kc, mk.nr, &bench_pool());
    p.packed_b = &packed;
  }
  size_t next = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    p.b = w.copies[next].data();
    next = (next + 1) % w.copies.size();
    cpu::gemm(p, bench_pool());
    benchmark::DoNotOptimize(c.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  set_counters(state, m, n, k, seconds);
  state.SetLabel(std::string(cpu::to_string(cpu::active_gemm_isa())) +
                 (prepack ? " prepacked" : ""));
}

void BM_cuvil(benchmark::State& state) {
  run_cuvil(state, bench_blocking());
}
void BM_cuvil_b(benchmark::State& state) {
  run_cuvil(state, bench_blocking("CUVIL_GEMM_B"));
}

// Args: m, k, n, prepack (0: weights used in place as [N, K]; 1: reordered to oneDNN's choice).
void BM_onednn(benchmark::State& state) {
  using dnnl::memory;
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool prepack = state.range(3) != 0;
  omp_set_num_threads(bench_threads());
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const Weights& w = weights(n, k, copies_for(m, n, k));
  std::vector<float> a = activations(m, k);
  std::vector<float> c(static_cast<size_t>(m * n));
  const memory::desc src_md({m, k}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc plain_w_md({k, n}, memory::data_type::f32, memory::format_tag::ba);
  const memory::desc w_md =
      prepack ? memory::desc({k, n}, memory::data_type::f32, memory::format_tag::any) : plain_w_md;
  const memory::desc dst_md({m, n}, memory::data_type::f32, memory::format_tag::ab);
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, w_md, dst_md), engine);
  const dnnl::matmul mm(pd);
  memory src(src_md, engine, a.data()), dst(dst_md, engine, c.data());
  std::vector<memory> wm;
  for (const auto& copy : w.copies) {
    memory plain(plain_w_md, engine, const_cast<float*>(copy.data()));
    if (prepack) {
      memory packed(pd.weights_desc(), engine);
      dnnl::reorder(plain, packed).execute(stream, plain, packed);
      stream.wait();
      wm.push_back(packed);
    } else {
      wm.push_back(plain);
    }
  }
  size_t next = 0;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    mm.execute(stream, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wm[next]}, {DNNL_ARG_DST, dst}});
    stream.wait();
    next = (next + 1) % wm.size();
    benchmark::DoNotOptimize(c.data());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  set_counters(state, m, n, k, seconds);
  state.SetLabel(prepack ? "onednn reordered weights" : "onednn");
}

// Memory read bandwidth as this program sees it (the denominator's sanity check).
void BM_stream_read(benchmark::State& state) {
  static std::vector<float> buffer(kColdBytes / sizeof(float), 1.0f);
  const int threads = bench_threads();
  double total = 0;
  const micro::LoopTimer timer;
  for (auto _ : state) {
    std::vector<double> sums(static_cast<size_t>(threads));
    bench_pool().parallel_for_tid(threads, [&](int tid, int64_t, int64_t) {
      const size_t n = buffer.size(), b = n * tid / threads, e = n * (tid + 1) / threads;
      float acc[16] = {};
      for (size_t i = b; i + 16 <= e; i += 16) {
        for (int l = 0; l < 16; ++l) acc[l] += buffer[i + l];
      }
      double s = 0;
      for (float x : acc) s += x;
      sums[static_cast<size_t>(tid)] = s;
    });
    for (double s : sums) total += s;
  }
  benchmark::DoNotOptimize(total);
  state.counters["GB/s"] = micro::per_second(
      static_cast<double>(kColdBytes) * 1e-9 * static_cast<double>(state.iterations()),
      timer.seconds());
  state.counters["probe GB/s"] = peak().mem_read_gbps;
  state.counters["probe GFLOP/s"] = peak().fp32_gflops;
}

void shapes(benchmark::internal::Benchmark* b, bool with_prepack) {
  const std::pair<int64_t, int64_t> kn[] = {{4096, 4096}, {4096, 14336}, {14336, 4096}};
  for (int64_t m : {1, 128, 512}) {
    for (const auto& [k, n] : kn) {
      b->Args({m, k, n, 0});
      if (with_prepack && m > 4) b->Args({m, k, n, 1});
    }
  }
  b->ArgNames({"M", "K", "N", "prepack"})->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_stream_read)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(5);
BENCHMARK(BM_cuvil)->Apply([](benchmark::internal::Benchmark* b) { shapes(b, true); });

BENCHMARK(BM_onednn)->Apply([](benchmark::internal::Benchmark* b) { shapes(b, true); });

}  // namespace

int main(int argc, char** argv) {
  // A short default minimum time keeps the whole program within a few minutes here.
  std::vector<char*> args(argv, argv + argc);
  std::string min_time = "--benchmark_min_time=0.3";
  bool has_min_time = false;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]).rfind("--benchmark_min_time", 0) == 0) has_min_time = true;
  }
  if (!has_min_time) args.push_back(min_time.data());
  if (std::getenv("CUVIL_GEMM_B")) {
    benchmark::RegisterBenchmark("BM_cuvil_b", BM_cuvil_b)
        ->Apply([](benchmark::internal::Benchmark* b) { shapes(b, true); });
  }
  int count = static_cast<int>(args.size());
  benchmark::Initialize(&count, args.data());
  if (benchmark::ReportUnrecognizedArguments(count, args.data())) return 1;
  benchmark::AddCustomContext("threads", std::to_string(bench_threads()));
  benchmark::AddCustomContext("gemm_isa", cpu::to_string(cpu::active_gemm_isa()));
  benchmark::AddCustomContext("fp32_peak_gflops", std::to_string(peak().fp32_gflops));
  benchmark::AddCustomContext("mem_read_peak_gbps", std::to_string(peak().mem_read_gbps));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
