// The run-time check of an index read from a tensor (gather, scatter): both the CPU kernels and
// the reference interpreter name the node and the offending position the same way.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>

#include "base/error.h"

namespace cuvil::runtime {

// The position the ONNX importer writes where an index it checked at run time was out of range
// (GatherElements, GatherND, the scatters, ReverseSequence's lengths, MaxUnpool): exact in fp32
// and past any data those ops index (at most 2^24 elements), so the kernel's check reports it.
inline constexpr int64_t kOutsidePosition = int64_t{1} << 24;

// The element `id` names along an axis of `size` elements (negative counts from the end).
// UserError naming the node, the op and the position when it is not an integer in [-size, size).
inline int64_t checked_index(float id, int64_t size, int64_t position, const std::string& node,
                             const char* op) {
  const float at = id < 0 ? id + static_cast<float>(size) : id;
  if (id == static_cast<float>(kOutsidePosition) && size <= kOutsidePosition) {
    throw UserError("node '" + node + "' (" + op + "): the index at position " +
                    std::to_string(position) + " is out of range");
  }
  if (!(at >= 0.0f && at < static_cast<float>(size)) || at != std::floor(at)) {
    throw UserError("node '" + node + "' (" + op + "): index " + std::to_string(id) +
                    " at position " + std::to_string(position) + " is not an integer in [-" +
                    std::to_string(size) + ", " + std::to_string(size) + ")");
  }
  return static_cast<int64_t>(at);
}

}  // namespace cuvil::runtime
