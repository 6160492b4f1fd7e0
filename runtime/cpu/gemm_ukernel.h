// GEMM micro-kernels: C[MR, NR] (+)= A_sliver * B_sliver over kc steps, where the A sliver is
// packed [kc][MR] and the B sliver [kc][NR] (64-byte aligned). One set per instruction set, each
// compiled in its own file with its own target flags, so that one binary holds all of them and
// picks at run time from CPUID (or CUVIL_ISA).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuvil::runtime::cpu {

enum class GemmIsa : uint8_t { ref = 0, avx2 = 1, avx512 = 2 };

const char* to_string(GemmIsa isa);

// C = A*B (accumulate = false) or C += A*B over a full MR x NR tile with row stride ldc.
using MicroKernelFn = void (*)(int64_t kc, const float* a, const float* b, float* c, int64_t ldc,
                               bool accumulate);

// The same over an edge tile: only rows [0, m) and columns [0, n) of C are read and written
// (1 <= m <= MR, 1 <= n <= NR); A and B slivers stay full width (zero padded by packing).
using MicroKernelEdgeFn = void (*)(int64_t kc, const float* a, const float* b, float* c,
                                   int64_t ldc, bool accumulate, int m, int n);

// The full-tile kernel that also prefetches `pf_lines` cache lines from `pf` into L2, spread
// over its kc loop: the blocked loops hand it the next B sliver, so that sliver's first use does
// not wait on L3 or memory.
using MicroKernelPrefetchFn = void (*)(int64_t kc, const float* a, const float* b, float* c,
                                       int64_t ldc, bool accumulate, const float* pf,
                                       int64_t pf_lines);

struct MicroKernel {
  GemmIsa isa;
  int mr, nr;
  MicroKernelFn fn;
  MicroKernelEdgeFn edge = nullptr;             // null: callers compute edge tiles aside and copy
  MicroKernelPrefetchFn prefetching = nullptr;  // null: fn, without the second stream
};

// The register tiles each instruction set implements, the first being its default. The
// reference set implements every tile of the others (it is their oracle).
const std::vector<MicroKernel>& micro_kernels(GemmIsa isa);

// Whether this CPU can run the instruction set (CPUID).
bool cpu_supports(GemmIsa isa);
// The instruction set GEMM uses: the best the CPU supports, or CUVIL_ISA=ref|avx2|avx512 from
// the environment (read once; UserError if the CPU lacks it), or the test override.
GemmIsa active_gemm_isa();
// Forces an instruction set for this process (tests, benchmarks); UserError if unsupported.
void set_gemm_isa(GemmIsa isa);
// Parses "ref" | "avx2" | "avx512"; UserError otherwise.
GemmIsa parse_gemm_isa(const std::string& name);

// The micro-kernel of `isa` with tile mr x nr, or the isa's default tile when it has no such
// tile (mr = nr = 0 asks for the default).
const MicroKernel& pick_micro_kernel(GemmIsa isa, int mr, int nr);

// Per-instruction-set tables (one file each).
std::vector<MicroKernel> ref_micro_kernels();
std::vector<MicroKernel> avx2_micro_kernels();
std::vector<MicroKernel> avx512_micro_kernels();

}  // namespace cuvil::runtime::cpu
