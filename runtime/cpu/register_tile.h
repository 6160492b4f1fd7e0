// Register tiles of the AVX-512 convolution kernels (conv2d.direct_nhwc, conv2d.winograd_nhwc):
// MR rows (pixels or tiles) x NV vectors of 16 output channels, one kernel instantiation per
// shape that fits the register file, looked up at run time by (mr, nv).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <utility>

namespace cuvil::runtime::cpu {

constexpr int kLanes = 16;
// Of the 32 vector registers, MR * NV hold accumulators, NV the weights and one the broadcast
// input: 7 x 4 would need 33 and spill an accumulator on every channel step.
constexpr int kVectorRegisters = 32;
constexpr int kMaxAccumulators = 28;
constexpr int kMaxMR = 14;
constexpr int kMaxNV = 4;

constexpr bool fits_registers(int mr, int nv) {
  return mr * nv <= kMaxAccumulators && mr * nv + nv < kVectorRegisters;
}

// The most rows a tile of nv vectors can have.
inline int max_mr(int nv) {
  return std::min({kMaxMR, kMaxAccumulators / nv, (kVectorRegisters - 1 - nv) / nv});
}

// table[(mr - 1) * kMaxNV + (nv - 1)] = Kernels::fn<mr, nv>(): the kernel of that shape, or null
// where the shape does not fit (it is then never instantiated). Kernels is a type with
// `template <int MR, int NV> static constexpr Fn fn()`.
template <class Fn, class Kernels, int MR, int NV>
constexpr Fn register_tile_entry() {
  if constexpr (fits_registers(MR, NV)) {
    return Kernels::template fn<MR, NV>();
  } else {
    return nullptr;
  }
}

template <class Fn, class Kernels, size_t... I>
constexpr std::array<Fn, sizeof...(I)> make_register_tile_table(std::index_sequence<I...>) {
  return {register_tile_entry<Fn, Kernels, static_cast<int>(I / kMaxNV) + 1,
                              static_cast<int>(I % kMaxNV) + 1>()...};
}

template <class Fn, class Kernels>
constexpr auto register_tile_table() {
  return make_register_tile_table<Fn, Kernels>(std::make_index_sequence<kMaxMR * kMaxNV>{});
}

inline size_t register_tile_index(int mr, int nv) {
  return static_cast<size_t>((mr - 1) * kMaxNV + (nv - 1));
}

}  // namespace cuvil::runtime::cpu
