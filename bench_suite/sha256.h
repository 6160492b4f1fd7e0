// SHA-256 (FIPS 180-4) of a file, for recording which model file a run measured.
#pragma once

#include <string>

namespace cuvil::bench {

// Lower-case hex digest of the file's bytes; UserError if it cannot be read.
std::string sha256_file(const std::string& path);
// Of a byte string (tests check the FIPS examples).
std::string sha256_hex(const std::string& bytes);

}  // namespace cuvil::bench
