// Constants known while importing an ONNX model: initializers, Constant nodes and every value
// folded from them (shape arithmetic, weight transposes). Floats are held as fp32 (float16,
// bfloat16 and double are converted), integers and booleans as int64.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "passes/ir/types.h"

namespace onnx {
class TensorProto;
}

namespace cuvil::bench::onnx_import {

// `v` as an int64, saturating at the type's range (NaN gives 0): a malformed model may hold any
// float where an integer is read, and an out-of-range cast is undefined behaviour.
int64_t saturating_int64(double v);

struct HostTensor {
  enum class Kind : uint8_t { f32, i64, boolean };
  Kind kind = Kind::f32;
  ir::Shape shape;
  std::vector<float> f;    // kind f32
  std::vector<int64_t> i;  // kind i64 and boolean (0/1)
  // The ONNX element type it was decoded from (onnx::TensorProto::DataType), 0 once computed:
  // a quantization zero point's type sets the quantized range.
  int32_t source_type = 0;

  static HostTensor floats(ir::Shape shape, std::vector<float> values);
  static HostTensor ints(ir::Shape shape, std::vector<int64_t> values, Kind kind = Kind::i64);

  int64_t numel() const { return ir::num_elements(shape); }
  bool is_float() const { return kind == Kind::f32; }
  // Element k as a double / an integer (floats truncated toward zero).
  double number(int64_t k) const;
  int64_t integer(int64_t k) const;
  std::vector<int64_t> to_ints() const;
  std::vector<float> to_floats() const;
};

// Where an initializer's external data file is looked up, and the names errors carry.
struct TensorSource {
  std::string model_path;  // for messages
  std::string model_dir;   // external data paths are relative to it
};

// Decodes a TensorProto: raw_data (little-endian) or the typed fields, float16/bfloat16 held in
// int32_data, external data (location, offset, length) read from a file beside the model. Types
// it cannot hold (strings, complex, unsigned 64-bit above 2^63) are a UserError naming `what`.
HostTensor decode_tensor(const onnx::TensorProto& tensor, const TensorSource& source,
                         const std::string& what);

// ONNX's name for an element type code ("FLOAT", "INT64", ...).
std::string onnx_type_name(int32_t data_type);
// Whether an element type code is a floating-point type (float, double, float16, bfloat16).
bool is_float_type(int64_t data_type);

}  // namespace cuvil::bench::onnx_import
