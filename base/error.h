// The two error kinds (Halide style): a user's mistake is a UserError with a clear message that
// front ends print and turn into exit status 2; a broken internal invariant aborts with file:line.
#pragma once

#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace cuvil {

// A mistake in the user's input (a config file, a flag, a graph handed to the verifier).
class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& message) : std::runtime_error(message) {}
};

// Out of memory where the program knows what it was doing: still a std::bad_alloc (front ends
// exit 3), with a message naming the work (e.g. the rung, its size and the stage).
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

[[noreturn]] void internal_error(const char* file, int line, const char* condition,
                                 const std::string& detail);

}  // namespace cuvil

// An internal invariant: if it fails the program is wrong, not the input.
#define CUVIL_CHECK(cond, detail)                                              \
  do {                                                                         \
    if (!(cond)) ::cuvil::internal_error(__FILE__, __LINE__, #cond, (detail)); \
  } while (0)
