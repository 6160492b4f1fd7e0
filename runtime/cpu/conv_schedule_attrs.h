// The conv-tiling attributes the generated NHWC convolutions (conv2d.direct_nhwc,
// conv2d.winograd_nhwc / _bf16) share: conv.vectors and conv.partition, read once at lowering.
// A bad value is the user's mistake: the error names the attribute, the kernel and the node.
#pragma once

#include <cstdint>
#include <string>

#include "base/error.h"
#include "runtime/cpu/attrs.h"
#include "runtime/cpu/register_tile.h"
#include "runtime/plan.h"

namespace cuvil::runtime::cpu {

constexpr int kAutoVectors = 0;

// conv.partition: how threads split a convolution. rows: output rows (Winograd: tiles).
enum class ConvSplit : uint8_t { automatic, rows, channels };

// " (KERNEL, node NAME)", the suffix of the kernels' attribute errors.
inline std::string conv_attr_where(const Step& s, const char* kernel) {
  return " (" + std::string(kernel) + ", node " + s.node_name + ")";
}

// conv.vectors: output-channel vectors of 16 per register tile, 0 = auto.
inline int conv_vectors_attr(const Step& s, const std::string& where) {
  const int64_t vectors = s.attrs.get_int(attrs::kConvVectors, kAutoVectors);
  if (vectors < kAutoVectors || vectors > kMaxNV) {
    throw UserError("conv.vectors: expected 0 (auto) .." + std::to_string(kMaxNV) + ", got " +
                    std::to_string(vectors) + where);
  }
  return static_cast<int>(vectors);
}

inline ConvSplit conv_partition_attr(const Step& s, const std::string& where) {
  const std::string partition = s.attrs.get_string(attrs::kConvPartition, "auto");
  if (partition == "rows") return ConvSplit::rows;
  if (partition == "channels") return ConvSplit::channels;
  if (partition != "auto") {
    throw UserError("conv.partition: expected auto, rows or channels, got '" + partition + "'" +
                    where);
  }
  return ConvSplit::automatic;
}

}  // namespace cuvil::runtime::cpu
