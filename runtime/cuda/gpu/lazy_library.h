// A shared library loaded with dlopen on the first lookup of one of its symbols, for the CUDA
// libraries whose start-up a program should pay only when it uses them (lazy_libraries.cc).
// The loader's search path comes first; where the library is not on it, the directory the build
// found the toolkit in (nothing links the CUDA libraries, so no program carries a run path to it).
#pragma once

#include <mutex>
#include <string>
#include <utility>

namespace cuvil::runtime::cuda {

class LazyLibrary {
 public:
  explicit LazyLibrary(std::string soname, std::string fallback_dir = "")
      : soname_(std::move(soname)), fallback_dir_(std::move(fallback_dir)) {}
  LazyLibrary(const LazyLibrary&) = delete;
  LazyLibrary& operator=(const LazyLibrary&) = delete;

  // The symbol, or null when the library cannot be loaded or lacks it (error() then says why).
  // The first call loads the library; every call is thread-safe.
  void* symbol(const char* name);
  // Why the last lookup failed: the soname and dlerror()'s reason (the search path's; the
  // fallback directory's where it was tried too); empty while none has.
  std::string error();

 private:
  const std::string soname_;
  const std::string fallback_dir_;
  std::once_flag loaded_;
  void* handle_ = nullptr;
  std::mutex mutex_;
  std::string error_;
};

}  // namespace cuvil::runtime::cuda
