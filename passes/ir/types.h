// Element types, shapes and physical layouts of IR values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cuvil::ir {

// Logical element type. Storage in this pipeline is fp32 for every dtype (ids are exact in fp32
// below 2^24); the dtype says what the value means and how many bytes a real kernel moves.
enum class DType : uint8_t { f32, bf16, i32 };

// Physical order of a 4-D activation. Layout-aware ops carry a "layout" attribute and their
// shapes are physical: an nhwc value has shape [N, H, W, C]. nchw16c is blocked: channels in
// blocks of kChannelBlock, physical shape [N, ceil(C/16), H, W, 16], channel c in block c / 16,
// lane c % 16. Lanes past C (padding when C % 16 != 0) hold unspecified values that no op reads.
enum class Layout : uint8_t { any, nchw, nhwc, nchw16c };
inline constexpr int64_t kChannelBlock = 16;

using Shape = std::vector<int64_t>;

std::string_view to_string(DType dtype);
std::string_view to_string(Layout layout);
bool parse_layout(std::string_view text, Layout* out);
int64_t byte_size(DType dtype);
// Bytes each element occupies in memory today: storage is fp32 whatever the dtype.
inline constexpr int64_t kStorageBytesPerElement = 4;
int64_t num_elements(const Shape& shape);

// The largest value a graph may hold, and the largest dimension: shape inference refuses any
// result beyond it, so that element counts and index arithmetic on valid shapes fit in int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 40;
// The element count of `shape`, computed without overflow; -1 when a dimension is negative, a
// dimension is above `limit`, or the count is.
int64_t bounded_elements(const Shape& shape, int64_t limit = kMaxElements);
std::string to_string(const Shape& shape);

}  // namespace cuvil::ir
