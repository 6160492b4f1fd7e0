// What every fuzz target shares: bad input may only ever be answered with a cuvil::UserError.
// Any other exception escapes LLVMFuzzerTestOneInput, std::terminate aborts, and libFuzzer keeps
// the input as a crash; so do a CUVIL_CHECK that bad input reached and every sanitizer report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"

namespace cuvil::fuzz {

inline std::string text_of(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Runs `read`; true when it returned, false when it refused the input with a UserError.
template <class Read>
bool accepted(Read&& read) {
  try {
    read();
    return true;
  } catch (const UserError&) {
    return false;
  }
}

// A property the reader promises was broken: a finding, like a crash.
[[noreturn]] inline void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz: broken property: %s\n", what.c_str());
  std::abort();
}

}  // namespace cuvil::fuzz
