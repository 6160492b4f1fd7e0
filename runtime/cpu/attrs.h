// Node attributes through which the CPU tiling passes (passes/gemm_tiling.h, conv_tiling.h,
// attention_tiling.h, threading.h) reach the CPU kernels. Written once here: passes set them on
// nodes, lowering copies them into Step::attrs, the kernels' schedule hooks read them once.
// Plain constants (the CUDA backend's are runtime/cuda/attrs.h).
#pragma once

namespace cuvil::runtime::cpu::attrs {

// Packed GEMM (linear, matmul and the convolutions lowered to it).
inline constexpr const char* kGemmTile = "gemm.mr_nr";  // "MRxNR", e.g. "12x32"
inline constexpr const char* kGemmMc = "gemm.mc";
inline constexpr const char* kGemmKc = "gemm.kc";
inline constexpr const char* kGemmNc = "gemm.nc";
inline constexpr const char* kGemmPrepack = "gemm.prepack";       // 0 | 1
inline constexpr const char* kGemmPrefetchB = "gemm.prefetch_b";  // 0 | 1
inline constexpr const char* kGemmPartition = "gemm.partition";   // auto | m | n | 2d
// The reduced-precision GEMMs' own panels (gemm_bf16.h, gemm_int8.h): other element sizes,
// other register tiles, so other good sizes than the fp32 GEMM's.
inline constexpr const char* kGemmBf16Mc = "gemm.bf16_mc";
inline constexpr const char* kGemmBf16Kc = "gemm.bf16_kc";
inline constexpr const char* kGemmBf16Nc = "gemm.bf16_nc";
inline constexpr const char* kGemmInt8Mc = "gemm.int8_mc";
// Direct and Winograd convolutions.
inline constexpr const char* kConvVectors = "conv.vectors";      // 0 = auto
inline constexpr const char* kConvPartition = "conv.partition";  // auto | rows | channels
inline constexpr const char* kConvChannelsPerPass = "conv.channels_per_pass";
inline constexpr const char* kConvPrefetchWeights = "conv.prefetch_weights";  // 0 | 1
inline constexpr const char* kConvWinogradTile = "conv.winograd_tile";        // 0 = auto, 2, 4
inline constexpr const char* kConvWinogradBlockKib = "conv.winograd_block_kib";
// Flash attention tiles.
inline constexpr const char* kAttentionBlockQ = "attention.block_q";
inline constexpr const char* kAttentionBlockKv = "attention.block_kv";

}  // namespace cuvil::runtime::cpu::attrs
