#include "passes/ir/types.h"

#include "base/error.h"

namespace cuvil::ir {

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::i32:
      return "i32";
  }
  return "?";
}

std::string_view to_string(Layout layout) {
  switch (layout) {
    case Layout::any:
      return "any";
    case Layout::nchw:
      return "nchw";
    case Layout::nhwc:
      return "nhwc";
    case Layout::nchw16c:
      return "nchw16c";
  }
  return "?";
}

bool parse_layout(std::string_view text, Layout* out) {
  for (Layout l : {Layout::any, Layout::nchw, Layout::nhwc, Layout::nchw16c}) {
    if (to_string(l) == text) {
      *out = l;
      return true;
    }
  }
  return false;
}

int64_t byte_size(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::i32:
      return 4;
  }
  return 4;
}

int64_t num_elements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t bounded_elements(const Shape& shape, int64_t limit) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0 || d > limit) return -1;
    if (d == 0) n = 0;
  }
  if (n == 0) return 0;
  for (int64_t d : shape) {
    if (n > limit / d) return -1;
    n *= d;
  }
  return n;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace cuvil::ir
