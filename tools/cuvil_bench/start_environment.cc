#include "tools/cuvil_bench/start_environment.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>

#include "bench_suite/environment.h"
#include "bench_suite/heap_huge_pages.h"
#include "tools/cuvil_bench/run_context.h"

namespace cuvil::bench::cli {

namespace {

// Short: it delays every measuring command once.
constexpr double kWaitPolicyProbeWindowS = 0.1;

bool is_one_of(const char* command, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::strcmp(command, name) == 0) return true;
  }
  return false;
}

// Commands that measure beside whatever else runs (not infer: one call, where the 0.1 s probe
// cost more than the spin it could save).
bool measures(const char* command) {
  return is_one_of(command, {"run", "serve", "tune", "confirm"});
}

// Commands that build weights and plans (list does too, for --reach).
bool builds_plans(const char* command) {
  return measures(command) || is_one_of(command, {"verify", "list"});
}

// Sets OMP_WAIT_POLICY=passive (and the reason) when neither variable is set and other
// processes use more than kBusyOtherCpusWarning CPUs; true when it did.
bool choose_openmp_wait_policy() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) {
    return false;
  }
  const double busy = other_processes_busy_cpus(kWaitPolicyProbeWindowS);
  if (busy <= kBusyOtherCpusWarning) return false;
  char reason[96];
  std::snprintf(reason, sizeof reason, "other processes were using %.1f CPUs at the start", busy);
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv(kOpenmpWaitPolicyReasonVariable, reason, 1);
  return true;
}

// Set in the re-executed process: the choices are made.
constexpr const char* kChosenVariable = "CUVIL_START_ENVIRONMENT_CHOSEN";

}  // namespace

void choose_start_environment(int argc, char** argv) {
  if (argc < 2 || std::getenv(kChosenVariable) != nullptr) return;
  const bool wait_policy = measures(argv[1]) && choose_openmp_wait_policy();
  const bool huge_pages = builds_plans(argv[1]) && request_heap_huge_pages();
  if (!wait_policy && !huge_pages) return;
  setenv(kChosenVariable, "1", 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  const int error = errno;
  unsetenv(kChosenVariable);
  std::string what;
  if (wait_policy) {
    unsetenv("OMP_WAIT_POLICY");
    unsetenv(kOpenmpWaitPolicyReasonVariable);
    what = "OMP_WAIT_POLICY=passive (oneDNN's threads spin beside the other processes)";
  }
  if (huge_pages) {
    restore_heap_tunables();
    what += std::string(what.empty() ? "" : " and ") +
            "glibc.malloc.hugetlb=1 (the heap stays on 4 KiB pages)";
  }
  print_warning(std::string("cannot re-execute with ") + what + ": " + std::strerror(error));
}

}  // namespace cuvil::bench::cli
