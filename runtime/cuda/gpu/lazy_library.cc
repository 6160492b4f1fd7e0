#include "runtime/cuda/gpu/lazy_library.h"

#include <dlfcn.h>

namespace cuvil::runtime::cuda {

void* LazyLibrary::symbol(const char* name) {
  std::call_once(loaded_, [this] {
    handle_ = dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_) return;
    const char* why = dlerror();
    std::string reason = why ? why : "dlopen failed";
    if (!fallback_dir_.empty()) {
      const std::string path = fallback_dir_ + "/" + soname_;
      handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle_) return;
      why = dlerror();
      reason += "; " + std::string(why ? why : "dlopen of " + path + " failed");
    }
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = soname_ + " could not be loaded (" + reason +
             "): the CUDA toolkit's libraries must be on the loader's path";
  });
  if (!handle_) return nullptr;
  void* fn = dlsym(handle_, name);
  if (!fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    error_ = soname_ + " has no symbol " + name;
  }
  return fn;
}

std::string LazyLibrary::error() {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

}  // namespace cuvil::runtime::cuda
