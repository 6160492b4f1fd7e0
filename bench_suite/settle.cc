#include "bench_suite/settle.h"

#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "probes/clock.h"

namespace cuvil::bench {

namespace {

// The state letter of /proc/.../stat: after the ")" that closes the command name (which may
// itself hold spaces and parentheses).
char thread_state(const std::string& stat_path) {
  FILE* f = std::fopen(stat_path.c_str(), "r");
  if (!f) return '?';
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close && close[1] == ' ' ? close[2] : '?';
}

int busy_threads_of(const std::string& proc_dir, pid_t skip_tid) {
  DIR* dir = opendir((proc_dir + "/task").c_str());
  if (!dir) return 0;
  int busy = 0;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    if (std::atoi(e->d_name) == skip_tid) continue;
    if (thread_state(proc_dir + "/task/" + e->d_name + "/stat") == 'R') ++busy;
  }
  closedir(dir);
  return busy;
}

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

}  // namespace

int busy_threads(const std::vector<pid_t>& helpers) {
  int busy = busy_threads_of("/proc/self", static_cast<pid_t>(gettid()));
  for (const pid_t pid : helpers) busy += busy_threads_of("/proc/" + std::to_string(pid), -1);
  return busy;
}

Settled settle(const SettleOptions& options) {
  const int64_t start = probes::now_ns();
  auto waited_s = [&] { return static_cast<double>(probes::now_ns() - start) * 1e-9; };
  if (options.min_s > 0) sleep_s(options.min_s);
  Settled result;
  if (options.max_s > 0) {
    while (busy_threads(options.helpers) > 0) {
      if (waited_s() >= options.max_s) {
        result.quiet = false;
        break;
      }
      sleep_s(kSettlePollS);
    }
  }
  result.waited_s = waited_s();
  return result;
}

}  // namespace cuvil::bench
