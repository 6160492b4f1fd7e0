// Helpers for the CUDA codegen tests: NVRTC compiles (no GPU needed) and a minimal look into the
// cubin (ELF) to check the target architecture and count SASS opcodes without nvdisasm (which this
// toolkit install lacks).
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "runtime/cuda/codegen/kernel_cache.h"
#include "runtime/cuda/codegen/kernel_source.h"

namespace cuvil::runtime::cuda::codegen::testing {

// SASS opcodes (low 12 bits of an sm_80/sm_90 instruction), established on this toolkit: the HMMA
// count equals the PTX mma.sync count of a generated GEMM, LDSM the ldmatrix count, and LDGSTS
// replaces LDG exactly when the kernel uses cp.async.
inline constexpr unsigned kSassHmma = 0x23c;
inline constexpr unsigned kSassLdsm = 0x83b;
inline constexpr unsigned kSassLdgsts = 0xfae;

template <typename T>
T read_le(const std::vector<char>& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

// The SM architecture a CUDA ELF was built for (e_flags bits 8..15 hold e.g. 90).
inline int cubin_sm_arch(const std::vector<char>& cubin) {
  if (cubin.size() < 64 || std::memcmp(cubin.data(),
                                       "\x7f"
                                       "ELF",
                                       4) != 0)
    return -1;
  if (read_le<uint16_t>(cubin, 18) != 190) return -1;  // EM_CUDA
  return static_cast<int>((read_le<uint32_t>(cubin, 48) >> 8) & 0xff);
}

// Opcode -> count over every .text section of a 64-bit CUDA ELF (16-byte instructions).
inline std::map<unsigned, int> sass_opcode_counts(const std::vector<char>& cubin) {
  std::map<unsigned, int> counts;
  const uint64_t section_offset = read_le<uint64_t>(cubin, 0x28);
  const uint16_t entry_size = read_le<uint16_t>(cubin, 0x3a);
  const uint16_t sections = read_le<uint16_t>(cubin, 0x3c);
  const uint16_t names_index = read_le<uint16_t>(cubin, 0x3e);
  const uint64_t names_offset =
      read_le<uint64_t>(cubin, section_offset + names_index * entry_size + 0x18);
  for (uint16_t i = 0; i < sections; ++i) {
    const size_t header = section_offset + i * entry_size;
    const std::string name = cubin.data() + names_offset + read_le<uint32_t>(cubin, header);
    if (name.rfind(".text", 0) != 0) continue;
    const uint64_t offset = read_le<uint64_t>(cubin, header + 0x18);
    const uint64_t size = read_le<uint64_t>(cubin, header + 0x20);
    for (uint64_t at = offset; at + 16 <= offset + size; at += 16) {
      ++counts[static_cast<unsigned>(read_le<uint64_t>(cubin, at) & 0xfff)];
    }
  }
  return counts;
}

inline int count_of(const std::map<unsigned, int>& counts, unsigned opcode) {
  auto it = counts.find(opcode);
  return it == counts.end() ? 0 : it->second;
}

inline int count_substr(const std::string& text, const std::string& needle) {
  int count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

// ptxas's -v report for one kernel: registers and spill bytes.
inline CompiledKernel compile_verbose(KernelSource kernel, int sm_arch) {
  kernel.options.push_back("--ptxas-options=-v");
  return compile_kernel(kernel, sm_arch);
}

inline bool log_reports_no_spills(const std::string& log) {
  return log.find("0 bytes spill stores, 0 bytes spill loads") != std::string::npos;
}

}  // namespace cuvil::runtime::cuda::codegen::testing
