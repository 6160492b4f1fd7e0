#include "tools/cuvil_bench/openmp_wait_policy.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_suite/environment.h"
#include "tools/cuvil_bench/run_context.h"

namespace cuvil::bench::cli {

namespace {

// Short: it delays every measuring command once.
constexpr double kWaitPolicyProbeWindowS = 0.1;

bool measures(const char* command) {
  for (const char* name : {"run", "serve", "tune", "confirm", "infer"}) {
    if (std::strcmp(command, name) == 0) return true;
  }
  return false;
}

}  // namespace

void choose_openmp_wait_policy(int argc, char** argv) {
  if (argc < 2 || !measures(argv[1])) return;
  if (std::getenv(kOpenmpWaitPolicyReasonVariable) != nullptr) return;  // already re-executed
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) {
    return;
  }
  const double busy = other_processes_busy_cpus(kWaitPolicyProbeWindowS);
  if (busy <= kBusyOtherCpusWarning) return;
  char reason[96];
  std::snprintf(reason, sizeof reason, "other processes were using %.1f CPUs at the start", busy);
  setenv("OMP_WAIT_POLICY", "passive", 1);
  setenv(kOpenmpWaitPolicyReasonVariable, reason, 1);
  std::fflush(nullptr);
  execv("/proc/self/exe", argv);
  const int error = errno;
  unsetenv("OMP_WAIT_POLICY");
  unsetenv(kOpenmpWaitPolicyReasonVariable);
  print_warning(std::string("cannot re-execute with OMP_WAIT_POLICY=passive (") +
                std::strerror(error) + "): oneDNN's threads spin beside the other processes");
}

}  // namespace cuvil::bench::cli
