// NVRTC compilation of generated kernels and the on-disk cubin cache. Compiling needs only
// libnvrtc (no GPU, no driver); loading the cubin is launch.h's job (CUDA runtime, GPU only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen {

struct CompiledKernel {
  std::string name;         // entry point (extern "C")
  int sm_arch = 0;          // e.g. 90
  std::vector<char> cubin;  // ELF for sm_<arch>
  std::string ptx;          // filled only by compile_kernel(..., want_ptx = true)
  std::string log;          // NVRTC's log (warnings) of the compile that produced it
  bool from_cache = false;
};

// "major.minor" of the linked NVRTC.
std::string nvrtc_version();

// Compiles with NVRTC for sm_<sm_arch>. A compile error aborts through CUVIL_CHECK with the NVRTC
// log and the offending source lines quoted (a generator bug, never the user's).
CompiledKernel compile_kernel(const KernelSource& kernel, int sm_arch, bool want_ptx = false);

// Compiled cubins on disk, keyed by a hash of source + options + arch + NVRTC version. Files are
// written atomically (temp file + rename) with a header carrying the key and a checksum; a file
// that fails the check is recompiled and overwritten, never trusted.
class KernelCache {
 public:
  // Default directory: $XDG_CACHE_HOME/cuvil/cuda-kernels, else $HOME/.cache/cuvil/cuda-kernels.
  KernelCache();
  explicit KernelCache(std::string directory);

  CompiledKernel get(const KernelSource& kernel, int sm_arch);
  std::string key(const KernelSource& kernel, int sm_arch) const;  // hex
  std::string path_for(const std::string& key) const;
  const std::string& directory() const { return directory_; }

  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }  // includes recompiles of corrupt files

 private:
  std::string directory_;
  int64_t hits_ = 0, misses_ = 0;
};

std::string default_kernel_cache_directory();

}  // namespace cuvil::runtime::cuda::codegen
