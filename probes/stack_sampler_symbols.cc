// Symbolisation without addr2line: dladdr finds the object that maps an address, the object's
// own ELF symbol table (.symtab, else .dynsym) names the function (dladdr alone only sees
// exported symbols, and an executable exports almost none), abi::__cxa_demangle demangles it.
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "probes/stack_sampler.h"

namespace cuvil::probes {

namespace {

struct FunctionSymbol {
  uintptr_t start = 0, size = 0;
  std::string name;  // mangled
};

// One object's function symbols, sorted by address, and its load bias.
struct ObjectSymbols {
  std::vector<FunctionSymbol> functions;
  bool position_independent = true;
  uintptr_t lowest_load_address = 0;
};

ObjectSymbols read_elf_symbols(const std::string& path) {
  ObjectSymbols symbols;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return symbols;
  struct stat info;
  if (fstat(fd, &info) != 0 || info.st_size < static_cast<off_t>(sizeof(Elf64_Ehdr))) {
    ::close(fd);
    return symbols;
  }
  const size_t length = static_cast<size_t>(info.st_size);
  void* mapped = mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) return symbols;
  const auto* bytes = static_cast<const unsigned char*>(mapped);
  const auto* header = reinterpret_cast<const Elf64_Ehdr*>(bytes);
  const bool valid = std::memcmp(header->e_ident, ELFMAG, SELFMAG) == 0 &&
                     header->e_ident[EI_CLASS] == ELFCLASS64 &&
                     header->e_shoff + header->e_shnum * sizeof(Elf64_Shdr) <= length &&
                     header->e_phoff + header->e_phnum * sizeof(Elf64_Phdr) <= length;
  if (valid) {
    symbols.position_independent = header->e_type == ET_DYN;
    const auto* programs = reinterpret_cast<const Elf64_Phdr*>(bytes + header->e_phoff);
    uintptr_t lowest = UINTPTR_MAX;
    for (int i = 0; i < header->e_phnum; ++i) {
      if (programs[i].p_type == PT_LOAD) lowest = std::min<uintptr_t>(lowest, programs[i].p_vaddr);
    }
    symbols.lowest_load_address = lowest == UINTPTR_MAX ? 0 : lowest & ~uintptr_t{0xfff};
    const auto* sections = reinterpret_cast<const Elf64_Shdr*>(bytes + header->e_shoff);
    // Prefer the full symbol table; a stripped object still has its dynamic one.
    for (const Elf32_Word wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
      for (int i = 0; i < header->e_shnum && symbols.functions.empty(); ++i) {
        const Elf64_Shdr& table = sections[i];
        if (table.sh_type != wanted || table.sh_link >= header->e_shnum) continue;
        const Elf64_Shdr& strings = sections[table.sh_link];
        if (table.sh_offset + table.sh_size > length ||
            strings.sh_offset + strings.sh_size > length || table.sh_entsize == 0) {
          continue;
        }
        const auto* entries = reinterpret_cast<const Elf64_Sym*>(bytes + table.sh_offset);
        const size_t count = table.sh_size / table.sh_entsize;
        const char* names = reinterpret_cast<const char*>(bytes + strings.sh_offset);
        for (size_t k = 0; k < count; ++k) {
          const Elf64_Sym& symbol = entries[k];
          const int type = ELF64_ST_TYPE(symbol.st_info);
          if ((type != STT_FUNC && type != STT_GNU_IFUNC) || symbol.st_value == 0 ||
              symbol.st_name >= strings.sh_size) {
            continue;
          }
          symbols.functions.push_back({symbol.st_value, symbol.st_size, names + symbol.st_name});
        }
      }
      if (!symbols.functions.empty()) break;
    }
    std::sort(symbols.functions.begin(), symbols.functions.end(),
              [](const FunctionSymbol& a, const FunctionSymbol& b) { return a.start < b.start; });
  }
  munmap(mapped, length);
  return symbols;
}

std::string demangle(const std::string& name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || demangled == nullptr) return name;
  std::string result(demangled);
  std::free(demangled);
  return result;
}

std::string object_path(const Dl_info& info) {
  const std::string name = info.dli_fname != nullptr ? info.dli_fname : "";
  // The main program appears under its argv[0] (or empty): read it through /proc.
  if (name.empty() || name.find('/') == std::string::npos || name == program_invocation_name) {
    return "/proc/self/exe";
  }
  return name;
}

std::string base_name(const std::string& path) {
  if (path == "/proc/self/exe") return program_invocation_short_name;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class Symbolizer {
 public:
  std::string lookup(uintptr_t address) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto cached = cache_.find(address);
    if (cached != cache_.end()) return cached->second;
    std::string name = resolve(address);
    cache_.emplace(address, name);
    return name;
  }

 private:
  std::string resolve(uintptr_t address) {
    Dl_info info;
    if (dladdr(reinterpret_cast<void*>(address), &info) == 0 || info.dli_fbase == nullptr) {
      return "[unknown]";
    }
    const std::string path = object_path(info);
    auto found = objects_.find(path);
    if (found == objects_.end()) {
      found = objects_.emplace(path, read_elf_symbols(path)).first;
    }
    const ObjectSymbols& object = found->second;
    const uintptr_t base = reinterpret_cast<uintptr_t>(info.dli_fbase);
    const uintptr_t bias = object.position_independent ? base - object.lowest_load_address : 0;
    const uintptr_t file_address = address - bias;
    const auto after = std::upper_bound(
        object.functions.begin(), object.functions.end(), file_address,
        [](uintptr_t value, const FunctionSymbol& symbol) { return value < symbol.start; });
    if (after != object.functions.begin()) {
      const FunctionSymbol& symbol = *(after - 1);
      // Size 0 (hand-written assembly) counts as covering up to the next symbol.
      if (symbol.size == 0 || file_address < symbol.start + symbol.size) {
        return demangle(symbol.name);
      }
    }
    if (info.dli_sname != nullptr) return demangle(info.dli_sname);
    char offset[32];
    std::snprintf(offset, sizeof offset, "+0x%lx", static_cast<unsigned long>(address - base));
    return base_name(path) + offset;
  }

  std::mutex mutex_;
  std::map<uintptr_t, std::string> cache_;
  std::map<std::string, ObjectSymbols> objects_;
};

}  // namespace

std::string symbolize(uintptr_t address) {
  static Symbolizer* symbolizer = new Symbolizer();  // lives as long as the process
  return symbolizer->lookup(address);
}

}  // namespace cuvil::probes
