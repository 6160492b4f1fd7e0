#include "base/error.h"

#include <cstdio>
#include <cstdlib>

namespace cuvil {

void internal_error(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "cuvil internal error at %s:%d: check '%s' failed: %s\n", file, line,
               condition, detail.c_str());
  std::abort();
}

}  // namespace cuvil
