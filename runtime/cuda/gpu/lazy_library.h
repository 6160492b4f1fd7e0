// A shared library loaded with dlopen on the first lookup of one of its symbols, for the CUDA
// libraries whose start-up a program should pay only when it uses them (lazy_libraries.cc).
#pragma once

#include <mutex>
#include <string>
#include <utility>

namespace cuvil::runtime::cuda {

class LazyLibrary {
 public:
  explicit LazyLibrary(std::string soname) : soname_(std::move(soname)) {}
  LazyLibrary(const LazyLibrary&) = delete;
  LazyLibrary& operator=(const LazyLibrary&) = delete;

  // The symbol, or null when the library cannot be loaded or lacks it (error() then says why).
  // The first call loads the library; every call is thread-safe.
  void* symbol(const char* name);
  // Why the last lookup failed: the soname and dlerror()'s reason; empty while none has.
  std::string error();

 private:
  const std::string soname_;
  std::once_flag loaded_;
  void* handle_ = nullptr;
  std::mutex mutex_;
  std::string error_;
};

}  // namespace cuvil::runtime::cuda
