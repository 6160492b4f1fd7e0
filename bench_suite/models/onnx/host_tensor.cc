#include "bench_suite/models/onnx/host_tensor.h"

#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace cuvil::bench::onnx_import {

namespace {

using onnx::TensorProto;

float half_to_float(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);  // zero or subnormal
  } else if (exponent == 31) {
    value = mantissa ? std::nanf("") : INFINITY;
  } else {
    value = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  }
  return sign ? -value : value;
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// Bytes per element of the types cuvil can hold; 0 for the others.
size_t element_bytes(int32_t type) {
  switch (type) {
    case TensorProto::FLOAT:
    case TensorProto::INT32:
    case TensorProto::UINT32:
      return 4;
    case TensorProto::DOUBLE:
    case TensorProto::INT64:
    case TensorProto::UINT64:
      return 8;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
    case TensorProto::INT16:
    case TensorProto::UINT16:
      return 2;
    case TensorProto::INT8:
    case TensorProto::UINT8:
    case TensorProto::BOOL:
      return 1;
    default:
      return 0;
  }
}

bool is_float_type(int32_t type) {
  return type == TensorProto::FLOAT || type == TensorProto::DOUBLE ||
         type == TensorProto::FLOAT16 || type == TensorProto::BFLOAT16;
}

template <class T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Element k of little-endian bytes of `type`, as a double (exact for every integer below 2^53)
// and, for integers, as an int64.
double raw_number(int32_t type, const char* p) {
  switch (type) {
    case TensorProto::FLOAT:
      return load<float>(p);
    case TensorProto::DOUBLE:
      return load<double>(p);
    case TensorProto::FLOAT16:
      return half_to_float(load<uint16_t>(p));
    case TensorProto::BFLOAT16:
      return bf16_to_float(load<uint16_t>(p));
    default:
      return 0;
  }
}
int64_t raw_integer(int32_t type, const char* p, bool* overflow) {
  switch (type) {
    case TensorProto::INT32:
      return load<int32_t>(p);
    case TensorProto::UINT32:
      return load<uint32_t>(p);
    case TensorProto::INT64:
      return load<int64_t>(p);
    case TensorProto::UINT64: {
      const uint64_t v = load<uint64_t>(p);
      if (v > static_cast<uint64_t>(INT64_MAX)) *overflow = true;
      return static_cast<int64_t>(v);
    }
    case TensorProto::INT16:
      return load<int16_t>(p);
    case TensorProto::UINT16:
      return load<uint16_t>(p);
    case TensorProto::INT8:
      return load<int8_t>(p);
    case TensorProto::UINT8:
      return load<uint8_t>(p);
    case TensorProto::BOOL:
      return load<uint8_t>(p) != 0;
    default:
      return 0;
  }
}

// The external data file's bytes [offset, offset + length) for `tensor`.
std::string read_external(const TensorProto& t, const TensorSource& src, const std::string& what,
                          size_t expected) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location") {
        location = kv.value();
      } else if (kv.key() == "offset") {
        offset = std::stoll(kv.value());
      } else if (kv.key() == "length") {
        length = std::stoll(kv.value());
      }
    } catch (const std::exception&) {
      throw UserError(src.model_path + ": " + what + ": external_data " + kv.key() + " '" +
                      kv.value() + "' is not an integer");
    }
  }
  if (location.empty())
    throw UserError(src.model_path + ": " + what + ": external data without a location");
  const std::filesystem::path rel(location);
  bool escapes = rel.is_absolute();
  for (const auto& part : rel) escapes = escapes || part == "..";
  if (escapes) {
    throw UserError(src.model_path + ": " + what + ": external data location '" + location +
                    "' must be a relative path inside the model's directory");
  }
  const std::string path = (std::filesystem::path(src.model_dir) / rel).string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UserError(src.model_path + ": " + what + ": external data file '" + path +
                    "' cannot be opened (it must sit beside the model)");
  }
  in.seekg(0, std::ios::end);
  const int64_t size = static_cast<int64_t>(in.tellg());
  if (length < 0) length = static_cast<int64_t>(expected);
  if (offset < 0 || length < 0 || offset + length > size) {
    throw UserError(src.model_path + ": " + what + ": external data [" + std::to_string(offset) +
                    ", " + std::to_string(offset + length) + ") lies outside '" + path + "' (" +
                    std::to_string(size) + " bytes)");
  }
  if (static_cast<size_t>(length) != expected) {
    throw UserError(src.model_path + ": " + what + ": external data holds " +
                    std::to_string(length) + " bytes, the shape needs " + std::to_string(expected));
  }
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) throw UserError(src.model_path + ": " + what + ": cannot read '" + path + "'");
  return bytes;
}

}  // namespace

HostTensor HostTensor::floats(ir::Shape shape, std::vector<float> values) {
  HostTensor t;
  t.kind = Kind::f32;
  t.shape = std::move(shape);
  t.f = std::move(values);
  return t;
}

HostTensor HostTensor::ints(ir::Shape shape, std::vector<int64_t> values, Kind kind) {
  HostTensor t;
  t.kind = kind;
  t.shape = std::move(shape);
  t.i = std::move(values);
  return t;
}

int64_t saturating_int64(double v) {
  if (std::isnan(v)) return 0;
  constexpr double kTwo63 = 9223372036854775808.0;  // 2^63, exact in double
  if (v >= kTwo63) return INT64_MAX;
  if (v < -kTwo63) return INT64_MIN;
  return static_cast<int64_t>(v);
}

double HostTensor::number(int64_t k) const {
  return is_float() ? static_cast<double>(f[static_cast<size_t>(k)])
                    : static_cast<double>(i[static_cast<size_t>(k)]);
}

int64_t HostTensor::integer(int64_t k) const {
  return is_float() ? saturating_int64(f[static_cast<size_t>(k)]) : i[static_cast<size_t>(k)];
}

std::vector<int64_t> HostTensor::to_ints() const {
  if (!is_float()) return i;
  std::vector<int64_t> out(f.size());
  for (size_t k = 0; k < f.size(); ++k) out[k] = saturating_int64(f[k]);
  return out;
}

std::vector<float> HostTensor::to_floats() const {
  if (is_float()) return f;
  std::vector<float> out(i.size());
  for (size_t k = 0; k < i.size(); ++k) out[k] = static_cast<float>(i[k]);
  return out;
}

bool is_float_type(int64_t data_type) {
  return data_type == onnx::TensorProto::FLOAT || data_type == onnx::TensorProto::DOUBLE ||
         data_type == onnx::TensorProto::FLOAT16 || data_type == onnx::TensorProto::BFLOAT16;
}

std::string onnx_type_name(int32_t data_type) {
  if (!TensorProto::DataType_IsValid(data_type)) return "type " + std::to_string(data_type);
  return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(data_type));
}

HostTensor decode_tensor(const TensorProto& t, const TensorSource& src, const std::string& what) {
  const int32_t type = t.data_type();
  const size_t width = element_bytes(type);
  if (width == 0) {
    throw UserError(src.model_path + ": " + what + ": unsupported element type " +
                    onnx_type_name(type) +
                    " (cuvil reads float, float16, bfloat16, double, integer and bool tensors)");
  }
  if (t.segment().begin() != 0 || t.segment().end() != 0 || t.has_segment()) {
    throw UserError(src.model_path + ": " + what + ": segmented tensors are not supported");
  }
  const ir::Shape shape(t.dims().begin(), t.dims().end());
  for (int64_t d : shape) {
    if (d < 0) {
      throw UserError(src.model_path + ": " + what + ": negative dimension " + std::to_string(d));
    }
  }
  const int64_t count = ir::bounded_elements(shape);
  if (count < 0) {
    throw UserError(src.model_path + ": " + what + ": shape " + ir::to_string(shape) +
                    " has more than 2^40 elements or a dimension above it");
  }
  const bool as_float = is_float_type(type);
  HostTensor out;
  out.kind = as_float                    ? HostTensor::Kind::f32
             : type == TensorProto::BOOL ? HostTensor::Kind::boolean
                                         : HostTensor::Kind::i64;
  out.shape = shape;
  out.source_type = type;
  const size_t n = static_cast<size_t>(count);
  // Storage once the data is known to hold n values: a shape a malformed file declares
  // allocates nothing by itself.
  auto allocate = [&] {
    if (as_float) {
      out.f.resize(n);
    } else {
      out.i.resize(n);
    }
  };

  auto from_bytes = [&](const std::string& bytes) {
    if (bytes.size() != n * width) {
      throw UserError(src.model_path + ": " + what + ": raw_data holds " +
                      std::to_string(bytes.size()) + " bytes, the shape " + ir::to_string(shape) +
                      " of " + onnx_type_name(type) + " needs " + std::to_string(n * width));
    }
    allocate();
    bool overflow = false;
    for (size_t k = 0; k < n; ++k) {
      const char* p = bytes.data() + k * width;
      if (as_float) {
        out.f[k] = static_cast<float>(raw_number(type, p));
      } else {
        out.i[k] = raw_integer(type, p, &overflow);
      }
    }
    if (overflow) throw UserError(src.model_path + ": " + what + ": UINT64 value above 2^63");
  };

  if (t.data_location() == TensorProto::EXTERNAL) {
    from_bytes(read_external(t, src, what, n * width));
    return out;
  }
  if (t.has_raw_data()) {
    from_bytes(t.raw_data());
    return out;
  }
  auto check_count = [&](int64_t have) {
    if (static_cast<size_t>(have) != n) {
      throw UserError(src.model_path + ": " + what + ": holds " + std::to_string(have) +
                      " values, the shape " + ir::to_string(shape) + " needs " + std::to_string(n));
    }
    allocate();
  };
  switch (type) {
    case TensorProto::FLOAT:
      check_count(t.float_data_size());
      for (size_t k = 0; k < n; ++k) out.f[k] = t.float_data(static_cast<int>(k));
      break;
    case TensorProto::DOUBLE:
      check_count(t.double_data_size());
      for (size_t k = 0; k < n; ++k)
        out.f[k] = static_cast<float>(t.double_data(static_cast<int>(k)));
      break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      // 16-bit floats travel as the low bits of int32_data.
      check_count(t.int32_data_size());
      for (size_t k = 0; k < n; ++k) {
        const uint16_t bits = static_cast<uint16_t>(t.int32_data(static_cast<int>(k)) & 0xffff);
        out.f[k] = type == TensorProto::FLOAT16 ? half_to_float(bits) : bf16_to_float(bits);
      }
      break;
    case TensorProto::INT64:
      check_count(t.int64_data_size());
      for (size_t k = 0; k < n; ++k) out.i[k] = t.int64_data(static_cast<int>(k));
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      check_count(t.uint64_data_size());
      for (size_t k = 0; k < n; ++k) {
        const uint64_t v = t.uint64_data(static_cast<int>(k));
        if (v > static_cast<uint64_t>(INT64_MAX))
          throw UserError(src.model_path + ": " + what + ": UINT64 value above 2^63");
        out.i[k] = static_cast<int64_t>(v);
      }
      break;
    default:  // INT32, INT16, INT8, UINT16, UINT8, BOOL
      check_count(t.int32_data_size());
      for (size_t k = 0; k < n; ++k) {
        const int64_t v = t.int32_data(static_cast<int>(k));
        out.i[k] = type == TensorProto::BOOL ? (v != 0) : v;
      }
      break;
  }
  return out;
}

}  // namespace cuvil::bench::onnx_import
