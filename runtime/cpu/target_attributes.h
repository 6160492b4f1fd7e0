// The target attributes of functions compiled for an instruction-set extension beyond the build's
// -march, one definition each; such a function runs only after its run-time check (cpu_isa.h,
// quantize.h).
//
// Every set starts from what target_avx512_begin.h compiles for (AVX-512 F/BW/VL/DQ with FMA and
// AVX2): an always_inline helper or intrinsic defined under that pragma can be inlined only into
// a function whose target includes all of it, and GCC's avx512f does not imply fma. A set without
// them builds with -march=native (which enables them for the whole file) and fails in the
// portable build (-DCUVIL_NATIVE=OFF).
#pragma once

#define CUVIL_TARGET_AVX512_BASE "avx512f,avx512bw,avx512vl,avx512dq,fma,avx2"

// VDPBF16PS and the bf16 conversions (cpu_has_avx512_bf16()).
#define CUVIL_BF16_TARGET __attribute__((target(CUVIL_TARGET_AVX512_BASE ",avx512bf16")))
// VPDPBUSD (cpu_has_avx512_vnni()).
#define CUVIL_VNNI_TARGET __attribute__((target(CUVIL_TARGET_AVX512_BASE ",avx512vnni")))
// AMX tiles with bf16 or int8 products (cpu_has_amx_bf16(), cpu_has_amx_int8()).
#define CUVIL_AMX_BF16_TARGET \
  __attribute__((target(CUVIL_TARGET_AVX512_BASE ",avx512bf16,amx-tile,amx-bf16")))
#define CUVIL_AMX_INT8_TARGET \
  __attribute__((target(CUVIL_TARGET_AVX512_BASE ",avx512vnni,amx-tile,amx-int8")))
