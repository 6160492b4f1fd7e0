#include "passes/gemm_tiling.h"

#include "runtime/cpu/attrs.h"

namespace cuvil::passes {

namespace {

bool runs_on_gemm(ir::OpKind op) {
  return op == ir::OpKind::linear || op == ir::OpKind::matmul || op == ir::OpKind::conv2d;
}

}  // namespace

std::vector<ParamSpec> GemmTilingPass::params() const {
  return {
      choice_param("mr_nr", {"12x32", "14x32", "8x32", "6x64", "4x64"}, "12x32",
                   "register tile MRxNR of the AVX-512 micro-kernel (rows of A x columns of B "
                   "held in zmm accumulators); the AVX2 micro-kernel always uses 6x16, "
                   "CUVIL_ISA=ref honours it"),
      int_param("mc", 8, 2048, 192,
                "rows of A per packed panel (kept in L2); rounded up to a multiple of MR",
                Scale::log),
      int_param("kc", 16, 2048, 768,
                "depth of a packed panel (longer panels amortise C tile updates; KC x NR B "
                "slivers)",
                Scale::log),
      int_param("nc", 32, 16384, 3072,
                "columns of B per packed panel (kept in L2/L3); rounded up to a multiple of NR",
                Scale::log),
      bool_param("prepack_weights", true,
                 "pack constant linear weights into the GEMM's KC x NR panel format once at "
                 "lowering (more memory; few-row products always read weights in place)"),
      bool_param("prefetch_b", true,
                 "AVX-512 micro-kernels prefetch the next B sliver into L2, spread over the row "
                 "tiles that share the current one"),
      // The bf16 and int8 GEMMs (reduced-precision) have their own tiles and element sizes.
      int_param("bf16_mc", 8, 2048, 192,
                "bf16 GEMM: rows of A per packed panel; rounded up to 12 (VDPBF16PS) or 32 (AMX "
                "tiles)",
                Scale::log),
      int_param("bf16_kc", 16, 4096, 512,
                "bf16 GEMM: depth of a packed panel (KC x 32 bf16 B slivers; rounded up to 32 on "
                "AMX)",
                Scale::log),
      int_param("bf16_nc", 32, 16384, 1024,
                "bf16 GEMM: columns of C finished together; rounded up to a multiple of 32",
                Scale::log),
      int_param("int8_mc", 8, 2048, 96,
                "int8 GEMM: rows of A per packed panel (the whole depth of a row is packed); "
                "rounded up to 12 (VPDPBUSD) or 32 (AMX tiles)",
                Scale::log),
  };
}

void GemmTilingPass::run(ir::Graph& graph, const ParamMap& params) const {
  const std::string& tile = param_choice(params, "mr_nr");
  const int64_t mc = param_int(params, "mc"), kc = param_int(params, "kc"),
                nc = param_int(params, "nc");
  const bool prepack = param_bool(params, "prepack_weights");
  const bool prefetch_b = param_bool(params, "prefetch_b");
  const int64_t bf16_mc = param_int(params, "bf16_mc"), bf16_kc = param_int(params, "bf16_kc"),
                bf16_nc = param_int(params, "bf16_nc"), int8_mc = param_int(params, "int8_mc");
  for (ir::Node& n : graph.mutable_nodes()) {
    if (!runs_on_gemm(n.op)) continue;
    n.attrs.set(runtime::cpu::attrs::kGemmTile, tile, "gemm-tiling.mr_nr");
    n.attrs.set(runtime::cpu::attrs::kGemmMc, mc, "gemm-tiling.mc");
    n.attrs.set(runtime::cpu::attrs::kGemmKc, kc, "gemm-tiling.kc");
    n.attrs.set(runtime::cpu::attrs::kGemmNc, nc, "gemm-tiling.nc");
    n.attrs.set(runtime::cpu::attrs::kGemmPrepack, int64_t{prepack ? 1 : 0},
                "gemm-tiling.prepack_weights");
    n.attrs.set(runtime::cpu::attrs::kGemmPrefetchB, int64_t{prefetch_b ? 1 : 0},
                "gemm-tiling.prefetch_b");
    n.attrs.set(runtime::cpu::attrs::kGemmBf16Mc, bf16_mc, "gemm-tiling.bf16_mc");
    n.attrs.set(runtime::cpu::attrs::kGemmBf16Kc, bf16_kc, "gemm-tiling.bf16_kc");
    n.attrs.set(runtime::cpu::attrs::kGemmBf16Nc, bf16_nc, "gemm-tiling.bf16_nc");
    n.attrs.set(runtime::cpu::attrs::kGemmInt8Mc, int8_mc, "gemm-tiling.int8_mc");
  }
}

}  // namespace cuvil::passes
