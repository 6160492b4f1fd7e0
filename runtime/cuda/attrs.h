// Node attributes through which the CUDA passes (passes/cuda_*.h) reach the CUDA runtime. Written
// once here: passes set them on nodes (or, plan-wide, on the graph's settings), lowering copies
// them into Step::attrs (Plan::settings), the runtime reads them. Plain constants, no CUDA
// headers.
#pragma once

namespace cuvil::runtime::cuda::attrs {

// "<op>.<implementation>", e.g. "linear.cublaslt", "conv2d.generated" (see kernel_choice.h).
inline constexpr const char* kKernel = "cuda.kernel";
// "f32" | "tf32" | "bf16" | "f16": the operand type of a GEMM-class node (accumulation is fp32).
inline constexpr const char* kPrecision = "cuda.precision";
// Tensor-core GEMM / implicit-GEMM conv tiles compiled into generated kernels.
inline constexpr const char* kGemmBlockM = "cuda_gemm.block_m";
inline constexpr const char* kGemmBlockN = "cuda_gemm.block_n";
inline constexpr const char* kGemmBlockK = "cuda_gemm.block_k";
inline constexpr const char* kGemmWarpM = "cuda_gemm.warp_m";
inline constexpr const char* kGemmWarpN = "cuda_gemm.warp_n";
inline constexpr const char* kGemmStages = "cuda_gemm.stages";
inline constexpr const char* kGemmVectorWidth = "cuda_gemm.vector_width";
// Flash attention tiles.
inline constexpr const char* kAttentionBlockQ = "cuda_attention.block_q";
inline constexpr const char* kAttentionBlockKv = "cuda_attention.block_kv";
inline constexpr const char* kAttentionWarps = "cuda_attention.warps";
// CUDA Graph capture: "whole" | "segments" | "off", and the steps per segment. Plan-wide
// settings (ir::Graph::settings, runtime::Plan::settings), not node attributes.
inline constexpr const char* kCapture = "cuda_graph.capture";
inline constexpr const char* kSegmentSteps = "cuda_graph.segment_steps";

}  // namespace cuvil::runtime::cuda::attrs
