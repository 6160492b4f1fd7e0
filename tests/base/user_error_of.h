// For the tests of bad input: the message of the UserError that `f` throws, "" when it throws
// none (any other exception propagates, and fails the test).
#pragma once

#include <string>
#include <utility>

#include "base/error.h"

namespace cuvil {

template <typename F>
std::string user_error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace cuvil
