// This machine's measured peaks, the denominators of every "% of peak": fp32 FMA throughput,
// bf16 and int8 dot-product throughput where the CPU has them, and memory read bandwidth. Measured
// once and cached per machine (CPU model, core count, thread count) in $XDG_CACHE_HOME/cuvil/ (else
// ~/.cache/cuvil/); re-measurable on demand.
#pragma once

#include <functional>
#include <string>

namespace cuvil::probes {

struct MachinePeak {
  int threads = 1;
  double fp32_gflops = 0;  // all `threads` together, FMA = 2 FLOPs
  // AVX512_BF16's VDPBF16PS (two bf16 products and their sum per fp32 lane = 4 FLOPs), all
  // `threads` together: what bounds the bf16 kernels. 0: not measured, because the CPU lacks
  // AVX512_BF16 or has AMX-BF16 (the bf16 kernels then run on AMX tiles, which this loop does
  // not bound).
  double bf16_gflops = 0;
  // The bf16 kernels run on fp32 FMAs, their bf16 weights widened in registers (an AVX-512 CPU
  // without AVX512_BF16, runtime/cpu/gemm_bf16.h): fp32_gflops bounds them.
  bool bf16_widened = false;
  // AVX512_VNNI's VPDPBUSD (four u8 x s8 products and their sum per int32 lane = 8 operations,
  // counted as FLOPs are), all `threads` together: what bounds the int8 kernels. 0: not
  // measured, because the CPU lacks AVX512_VNNI or has AMX-INT8.
  double int8_gflops = 0;
  double mem_read_gbps = 0;  // streaming reads of a buffer far larger than the caches
  std::string cpu_model;
  std::string isa;          // the FMA width measured: "avx512", "avx2" or "scalar"
  std::string measured_at;  // ISO date
  bool from_cache = false;
  // Measured while other processes kept CPUs busy (or with the load unknown): a lower bound of
  // the true peak, which inflates every %peak. Kept until a quiet run measures again.
  bool provisional = false;
  double busy_other_cpus = -1;  // at the measurement that produced these figures; -1 unknown

  // The peak that bounds products of `arithmetic` ("fp32", "bf16", "int8"); 0: not measured.
  double of(const std::string& arithmetic) const {
    return arithmetic == "fp32"   ? fp32_gflops
           : arithmetic == "bf16" ? (bf16_widened ? fp32_gflops : bf16_gflops)
           : arithmetic == "int8" ? int8_gflops
                                  : 0.0;
  }
};

// A peak is measured only on a quiet machine: other processes keeping fewer CPUs busy than this.
inline constexpr double kQuietBusyCpus = 0.25;

// Whether this CPU's bf16 peak is measured: it has AVX512_BF16 and no AMX-BF16.
bool bf16_peak_measurable();
// Whether the bf16 kernels of a CPU whose widest FMA is `isa` run widened (MachinePeak).
bool bf16_runs_widened(const std::string& isa);
// Whether its int8 peak is: it has AVX512_VNNI and no AMX-INT8.
bool int8_peak_measurable();

// Runs the measurement now (about a second, half a second more for each of the bf16 and int8
// peaks).
MachinePeak measure_machine_peak(int threads);
// The cached figures for this machine and thread count, measured (and cached) when missing, when
// `remeasure` is set, or when the cached ones are provisional and the machine is now quiet.
// `busy_other_cpus` is what other processes kept busy just before (negative: unknown); measured
// at kQuietBusyCpus or more (or unknown), the figures are stored provisional. A re-measurement
// keeps the higher of the old and new figures, since a busy machine can only make a peak look
// lower. A cache that cannot be written is not an error: it is measured again next time.
// When it measures, `busy_other_cpus_after` (if given) is asked again right after: a machine
// that became busy during the measurement (one quiet moment before it is no proof) stores the
// figures provisional too.
MachinePeak machine_peak(int threads, bool remeasure = false, double busy_other_cpus = -1,
                         const std::function<double()>& busy_other_cpus_after = nullptr);

}  // namespace cuvil::probes
