#include "probes/perf_counters_internal.h"

#include <dirent.h>
#include <perfmon/pfmlib_perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "base/error.h"
#include "probes/perf_counters.h"

namespace cuvil::probes::detail {

int perf_event_open(perf_event_attr* attr, pid_t tid, int cpu, int group_fd, unsigned long flags) {
  return static_cast<int>(syscall(SYS_perf_event_open, attr, tid, cpu, group_fd, flags));
}

std::vector<pid_t> thread_ids() {
  std::vector<pid_t> ids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return {current_thread_id()};
  while (dirent* entry = readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    ids.push_back(static_cast<pid_t>(std::atoi(entry->d_name)));
  }
  closedir(dir);
  std::sort(ids.begin(), ids.end());
  return ids;
}

pid_t current_thread_id() {
  return static_cast<pid_t>(syscall(SYS_gettid));
}

std::string errno_text(int error_number) {
  const char* name = strerrorname_np(error_number);
  return std::string(name != nullptr ? name : "errno " + std::to_string(error_number)) + " (" +
         std::strerror(error_number) + ")";
}

void ensure_libpfm() {
  static std::once_flag once;
  static int status = PFM_SUCCESS;
  std::call_once(once, [] { status = pfm_initialize(); });
  if (status != PFM_SUCCESS) {
    throw UserError(std::string("libpfm4 could not initialise: ") + pfm_strerror(status));
  }
}

namespace {

int encode_with(const std::string& name, int privilege_levels, perf_event_attr* attr) {
  pfm_perf_encode_arg_t arg;
  std::memset(&arg, 0, sizeof arg);
  std::memset(attr, 0, sizeof *attr);
  arg.attr = attr;
  arg.size = sizeof arg;
  return pfm_get_os_event_encoding(name.c_str(), privilege_levels, PFM_OS_PERF_EVENT_EXT, &arg);
}

}  // namespace

perf_event_attr encode_event(const std::string& name) {
  ensure_libpfm();
  if (name.empty()) throw UserError("an empty event name");
  // Below paranoid level 2, or with CAP_PERFMON, the kernel lets us count kernel time too;
  // otherwise only user space (perf:context-switches then reads 0: switches happen in the kernel).
  const int levels = kernel_counting_permitted() ? (PFM_PLM0 | PFM_PLM3) : PFM_PLM3;
  perf_event_attr attr;
  int status = encode_with(name, levels, &attr);
  // perf (and Intel's tables) write PMU events as EVENT.UMASK; libpfm4 writes EVENT:UMASK.
  if (status == PFM_ERR_NOTFOUND && name.find(':') == std::string::npos &&
      name.find('.') != std::string::npos) {
    std::string colon = name;
    std::replace(colon.begin(), colon.end(), '.', ':');
    status = encode_with(colon, levels, &attr);
  }
  if (status != PFM_SUCCESS) {
    throw UserError("unknown event '" + name + "' (libpfm4: " + pfm_strerror(status) +
                    "); `cuvil-bench probes` lists the events this machine knows");
  }
  attr.size = sizeof attr;
  return attr;
}

bool is_hardware(const perf_event_attr& attr) {
  return attr.type != PERF_TYPE_SOFTWARE && attr.type != PERF_TYPE_TRACEPOINT;
}

bool kernel_has_core_pmu() {
  std::error_code error;
  for (const auto& entry :
       std::filesystem::directory_iterator("/sys/bus/event_source/devices", error)) {
    const std::string name = entry.path().filename().string();
    // "cpu" on most machines, "cpu_core"/"cpu_atom" on hybrid Intel, "armv8_*" on Arm.
    if (name == "cpu" || name.rfind("cpu_", 0) == 0 || name.rfind("armv", 0) == 0) return true;
  }
  return false;
}

}  // namespace cuvil::probes::detail
