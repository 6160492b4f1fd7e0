#include "bench_suite/heap_huge_pages.h"

#include <cstdlib>

#include "base/error.h"
#include "base/text_file.h"

namespace cuvil::bench {

namespace {

constexpr const char* kTunables = "GLIBC_TUNABLES";
constexpr const char* kHugetlb = "glibc.malloc.hugetlb";

// The value of glibc.malloc.hugetlb in a tunables string, or "" when it is not there.
std::string hugetlb_value(const std::string& tunables) {
  const std::string prefix = std::string(kHugetlb) + "=";
  size_t start = 0;
  while (start <= tunables.size()) {
    size_t end = tunables.find(':', start);
    if (end == std::string::npos) end = tunables.size();
    const std::string item = tunables.substr(start, end - start);
    if (item.compare(0, prefix.size(), prefix) == 0) return item.substr(prefix.size());
    start = end + 1;
  }
  return "";
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// CUVIL_HEAP_HUGE_PAGES: unset or "1" on, "0" off; anything else is a UserError (a typo such
// as "off" must not leave the setting silently on).
bool switched_off() {
  const std::string v = env_or_empty(kHeapHugePagesSwitchVariable);
  if (v.empty() || v == "1") return false;
  if (v == "0") return true;
  throw UserError(std::string(kHeapHugePagesSwitchVariable) +
                  ": expected 0 (off) or 1 (on), got '" + v + "'");
}

std::string kernel_thp_mode() {
  return thp_mode(read_file_or_empty("/sys/kernel/mm/transparent_hugepage/enabled"));
}

}  // namespace

std::string thp_mode(const std::string& enabled_file_text) {
  const size_t open = enabled_file_text.find('[');
  const size_t close = enabled_file_text.find(']', open);
  if (open == std::string::npos || close == std::string::npos) return "";
  return enabled_file_text.substr(open + 1, close - open - 1);
}

std::string with_heap_hugetlb(const std::string& tunables) {
  const std::string item = std::string(kHugetlb) + "=1";
  return tunables.empty() ? item : tunables + ":" + item;
}

bool request_heap_huge_pages() {
  if (switched_off() || std::getenv(kHeapHugePagesPreviousVariable) != nullptr) return false;
  const std::string tunables = env_or_empty(kTunables);
  if (!hugetlb_value(tunables).empty()) return false;  // the user's own choice
  const std::string mode = kernel_thp_mode();
  if (mode.empty() || mode == "never") return false;
  setenv(kHeapHugePagesPreviousVariable, tunables.c_str(), 1);
  setenv(kTunables, with_heap_hugetlb(tunables).c_str(), 1);
  return true;
}

void restore_heap_tunables() {
  const char* previous = std::getenv(kHeapHugePagesPreviousVariable);
  if (previous == nullptr) return;
  if (previous[0] == '\0') {
    unsetenv(kTunables);
  } else {
    setenv(kTunables, previous, 1);
  }
  unsetenv(kHeapHugePagesPreviousVariable);
}

std::string heap_huge_pages() {
  if (switched_off()) return std::string("off (") + kHeapHugePagesSwitchVariable + "=0)";
  const std::string value = hugetlb_value(env_or_empty(kTunables));
  if (!value.empty()) {
    if (std::getenv(kHeapHugePagesPreviousVariable) != nullptr) {
      return std::string(kHugetlb) + "=" + value + " (cuvil-bench)";
    }
    return std::string(kHugetlb) + "=" + value + " (set by the user)";
  }
  if (kernel_thp_mode() == "never") return "off (transparent_hugepage: never)";
  return "off";
}

}  // namespace cuvil::bench
