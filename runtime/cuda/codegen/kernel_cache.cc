#include "runtime/cuda/codegen/kernel_cache.h"

#include <nvrtc.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>

#include "base/error.h"

namespace cuvil::runtime::cuda::codegen {

namespace {

constexpr char kMagic[] = "CUVILKC1";

uint64_t fnv1a(std::string_view bytes, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string hex64(uint64_t value) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(value));
  return text;
}

void check_nvrtc(nvrtcResult result, const char* what) {
  CUVIL_CHECK(result == NVRTC_SUCCESS,
              std::string(what) + " failed: " + nvrtcGetErrorString(result));
}

// "name.cu(123): error: ..." -> the quoted source lines the log complains about.
std::string offending_lines(const std::string& log, const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::set<int> numbers;
  static const std::regex kLocation(R"(\.cu\((\d+)\): (error|catastrophic))");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), kLocation);
       it != std::sregex_iterator(); ++it) {
    numbers.insert(std::stoi((*it)[1].str()));
  }
  std::string quoted;
  for (int number : numbers) {
    if (number >= 1 && number <= static_cast<int>(lines.size())) {
      quoted += "  line " + std::to_string(number) + ": " + lines[number - 1] + "\n";
    }
  }
  return quoted.empty() ? "  (no line located)\n" : quoted;
}

void write_u64(std::string& out, uint64_t value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

}  // namespace

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check_nvrtc(nvrtcVersion(&major, &minor), "nvrtcVersion");
  return std::to_string(major) + "." + std::to_string(minor);
}

CompiledKernel compile_kernel(const KernelSource& kernel, int sm_arch, bool want_ptx) {
  nvrtcProgram program = nullptr;
  const std::string file = kernel.name + ".cu";
  check_nvrtc(
      nvrtcCreateProgram(&program, kernel.source.c_str(), file.c_str(), 0, nullptr, nullptr),
      "nvrtcCreateProgram");
  std::vector<std::string> options = kernel.options;
  options.push_back("--gpu-architecture=sm_" + std::to_string(sm_arch));
  std::vector<const char*> option_pointers;
  for (const std::string& option : options) option_pointers.push_back(option.c_str());
  const nvrtcResult compiled = nvrtcCompileProgram(
      program, static_cast<int>(option_pointers.size()), option_pointers.data());
  size_t log_size = 0;
  check_nvrtc(nvrtcGetProgramLogSize(program, &log_size), "nvrtcGetProgramLogSize");
  std::string log(log_size, '\0');
  if (log_size > 0) check_nvrtc(nvrtcGetProgramLog(program, log.data()), "nvrtcGetProgramLog");
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (compiled != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&program);
    CUVIL_CHECK(false, "NVRTC could not compile generated kernel " + kernel.name + " for sm_" +
                           std::to_string(sm_arch) + ":\n" + log + "\noffending source:\n" +
                           offending_lines(log, kernel.source));
  }
  CompiledKernel result;
  result.name = kernel.name;
  result.sm_arch = sm_arch;
  result.log = log;
  size_t cubin_size = 0;
  check_nvrtc(nvrtcGetCUBINSize(program, &cubin_size), "nvrtcGetCUBINSize");
  result.cubin.resize(cubin_size);
  check_nvrtc(nvrtcGetCUBIN(program, result.cubin.data()), "nvrtcGetCUBIN");
  nvrtcDestroyProgram(&program);
  if (want_ptx) {
    // A cubin compile does not keep the PTX: compile again for the virtual architecture.
    check_nvrtc(
        nvrtcCreateProgram(&program, kernel.source.c_str(), file.c_str(), 0, nullptr, nullptr),
        "nvrtcCreateProgram");
    options.back() = "--gpu-architecture=compute_" + std::to_string(sm_arch);
    option_pointers.clear();
    for (const std::string& option : options) option_pointers.push_back(option.c_str());
    check_nvrtc(nvrtcCompileProgram(program, static_cast<int>(option_pointers.size()),
                                    option_pointers.data()),
                "nvrtcCompileProgram (PTX)");
    size_t ptx_size = 0;
    check_nvrtc(nvrtcGetPTXSize(program, &ptx_size), "nvrtcGetPTXSize");
    result.ptx.resize(ptx_size);
    check_nvrtc(nvrtcGetPTX(program, result.ptx.data()), "nvrtcGetPTX");
    while (!result.ptx.empty() && result.ptx.back() == '\0') result.ptx.pop_back();
    nvrtcDestroyProgram(&program);
  }
  return result;
}

std::string default_kernel_cache_directory() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] != '\0') return std::string(xdg) + "/cuvil/cuda-kernels";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.cache/cuvil/cuda-kernels";
}

KernelCache::KernelCache() : KernelCache(default_kernel_cache_directory()) {}

KernelCache::KernelCache(std::string directory) : directory_(std::move(directory)) {}

std::string KernelCache::key(const KernelSource& kernel, int sm_arch) const {
  std::string material = kernel.name + '\0' + kernel.source + '\0';
  for (const std::string& option : kernel.options) material += option + '\0';
  material += "sm_" + std::to_string(sm_arch) + '\0' + "nvrtc " + nvrtc_version();
  return hex64(fnv1a(material)) + hex64(fnv1a(material, 0x84222325cbf29ce4ull));
}

std::string KernelCache::path_for(const std::string& key) const {
  return directory_ + "/" + key + ".cubin";
}

CompiledKernel KernelCache::get(const KernelSource& kernel, int sm_arch) {
  const std::string k = key(kernel, sm_arch);
  const std::string path = path_for(k);
  // File: magic, key, cubin size (u64), FNV-1a of the cubin (u64), cubin. Anything else: a miss.
  {
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      const size_t header = sizeof(kMagic) - 1 + k.size() + 16;
      if (bytes.size() >= header && bytes.compare(0, sizeof(kMagic) - 1, kMagic) == 0 &&
          bytes.compare(sizeof(kMagic) - 1, k.size(), k) == 0) {
        uint64_t size = 0, checksum = 0;
        std::memcpy(&size, bytes.data() + header - 16, 8);
        std::memcpy(&checksum, bytes.data() + header - 8, 8);
        std::string_view cubin(bytes.data() + header, bytes.size() - header);
        if (size == cubin.size() && fnv1a(cubin) == checksum) {
          ++hits_;
          CompiledKernel result;
          result.name = kernel.name;
          result.sm_arch = sm_arch;
          result.cubin.assign(cubin.begin(), cubin.end());
          result.from_cache = true;
          return result;
        }
      }
    }
  }
  ++misses_;
  CompiledKernel result = compile_kernel(kernel, sm_arch);
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  std::string bytes = kMagic + k;
  const std::string_view cubin(result.cubin.data(), result.cubin.size());
  write_u64(bytes, cubin.size());
  write_u64(bytes, fnv1a(cubin));
  bytes.append(cubin);
  // Temp file in the same directory, then rename: readers never see a partial file.
  static std::atomic<uint64_t> counter{0};
  const std::string temp =
      path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1));
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) {
      std::filesystem::remove(temp, error);
      return result;  // an unwritable cache only costs recompiles
    }
  }
  std::filesystem::rename(temp, path, error);
  if (error) std::filesystem::remove(temp, error);
  return result;
}

}  // namespace cuvil::runtime::cuda::codegen
