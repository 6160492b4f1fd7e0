// NumPy .npy files (format versions 1.0, 2.0 and 3.0): what numpy.save writes, read into cuvil's
// fp32 storage, and float32 C-order arrays written back.
#pragma once

#include <cstdint>
#include <string>

#include "passes/ir/tensor.h"

namespace cuvil::bench {

struct NpyArray {
  ir::Shape shape;
  std::string dtype;        // numpy's descr, e.g. "<f4", "<i8", "|b1"
  bool is_integer = false;  // integer or bool data (held as exact floats)
  std::vector<float> data;  // C order
};

// Reads float16/32/64, signed and unsigned integers up to 64 bits and bools, either byte order,
// C or Fortran order (Fortran arrays are transposed to C order). Integers must be exact in fp32
// (|v| <= 2^24). Problems are a UserError "PATH: message".
NpyArray read_npy(const std::string& path);

// Writes a float32 C-order array (version 1.0, or 2.0 when the header needs it).
void write_npy(const std::string& path, const ir::Shape& shape, const std::vector<float>& data);

}  // namespace cuvil::bench
