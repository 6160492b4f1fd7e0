#include "tuner/isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <new>

#include "base/error.h"

namespace cuvil::tuner {

namespace {

int g_oom_fd = -1;  // the child's pipe to the parent, for the new-handler

void write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Runs when operator new cannot allocate: tells the parent before anything else can go wrong
// (a worker thread that cannot allocate terminates the process), then fails the allocation.
void note_out_of_memory() {
  static const char kMessage[] = "{\"kind\":\"oom\"}\n";
  if (g_oom_fd >= 0) write_all(g_oom_fd, kMessage, sizeof(kMessage) - 1);
  std::set_new_handler(nullptr);
  throw std::bad_alloc();
}

std::string signal_reason(int sig) {
  const char* name = sigabbrev_np(sig);
  return "crashed (signal " + std::to_string(sig) + ", SIG" + (name ? name : "?") + ")";
}

[[noreturn]] void child_main(const ChildBody& body, int to_parent, int from_parent,
                             const ChildLimits& limits) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);  // a killed tuner takes its trial with it
  if (limits.memory_mb > 0) {
    const rlim_t bytes = static_cast<rlim_t>(limits.memory_mb) << 20;
    rlimit lim{bytes, bytes};
    setrlimit(RLIMIT_AS, &lim);
  }
  g_oom_fd = to_parent;
  std::set_new_handler(note_out_of_memory);
  ChildChannel channel(to_parent, from_parent);
  int status = 0;
  auto fail = [&](const std::string& reason) {
    const std::string line = nlohmann::json{{"kind", "fail"}, {"reason", reason}}.dump() + "\n";
    write_all(to_parent, line.data(), line.size());
    status = 1;
  };
  try {
    body(channel);
  } catch (const std::bad_alloc&) {
    fail("out of memory");
  } catch (const std::exception& e) {
    fail(e.what());
  }
  std::fflush(nullptr);
  _exit(status);
}

}  // namespace

void ChildChannel::send(const std::string& kind, const nlohmann::json& data) {
  const std::string line = nlohmann::json{{"kind", kind}, {"data", data}}.dump() + "\n";
  write_all(to_parent_, line.data(), line.size());
}

bool ChildChannel::progress(const nlohmann::json& message) {
  send("progress", message);
  char verdict = 's';
  for (;;) {
    const ssize_t n = read(from_parent_, &verdict, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) verdict = 's';
    break;
  }
  return verdict == 'g';
}

void ChildChannel::result(const nlohmann::json& message) {
  send("result", message);
}

ChildOutcome run_isolated(const ChildBody& body, const ProgressHandler& on_progress,
                          const ChildLimits& limits, const std::vector<int>& close_in_child) {
  int up[2], down[2];
  if (pipe2(up, O_CLOEXEC) != 0 || pipe2(down, O_CLOEXEC) != 0) {
    throw UserError(std::string("cannot create trial pipes: ") + std::strerror(errno));
  }
  std::fflush(nullptr);  // the child must not flush the parent's buffered output again
  const pid_t pid = fork();
  if (pid < 0) throw UserError(std::string("cannot fork a trial: ") + std::strerror(errno));
  if (pid == 0) {
    for (int fd : close_in_child) close(fd);
    close(up[0]);
    close(down[1]);
    child_main(body, up[1], down[0], limits);
  }
  close(up[1]);
  close(down[0]);

  ChildOutcome outcome;
  bool out_of_memory = false, timed_out = false, got_result = false;
  std::string fail_reason;
  std::string buffer;
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(limits.timeout_s * 1e3));
  // After an allocation failed, a child gets this long to report and exit: one stuck after
  // std::bad_alloc (a worker thread that cannot go on) ran out of memory, it did not time out.
  constexpr std::chrono::seconds kOutOfMemoryGrace{5};
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);  // a child that died must not kill the parent
  for (bool open = true; open;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = !out_of_memory;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p{up[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 1000)));
    if (r <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(up[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its end: it exited
    buffer.append(chunk, static_cast<size_t>(n));
    size_t eol;
    while ((eol = buffer.find('\n')) != std::string::npos) {
      const std::string line = buffer.substr(0, eol);
      buffer.erase(0, eol + 1);
      nlohmann::json message;
      try {
        message = nlohmann::json::parse(line);
      } catch (const nlohmann::json::exception&) {
        continue;  // a torn line from a dying child
      }
      const std::string kind = message.value("kind", std::string());
      if (kind == "oom") {
        if (!out_of_memory) {
          deadline = std::min(deadline, std::chrono::steady_clock::now() + kOutOfMemoryGrace);
        }
        out_of_memory = true;
      } else if (kind == "fail") {
        fail_reason = message.value("reason", std::string("failed"));
      } else if (kind == "result") {
        got_result = true;
        outcome.result = message["data"];
      } else if (kind == "progress") {
        outcome.progress.push_back(message["data"]);
        const bool go = on_progress ? on_progress(message["data"]) : true;
        if (!go) outcome.stopped = true;
        const char verdict = go ? 'g' : 's';
        write_all(down[1], &verdict, 1);
      }
    }
  }
  sigaction(SIGPIPE, &old, nullptr);
  close(up[0]);
  close(down[1]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }

  const std::string limit_text =
      limits.memory_mb > 0 ? " (limit " + std::to_string(limits.memory_mb) + " MiB)" : "";
  if (out_of_memory) {  // before the timeout: a child stuck after running out is killed
    outcome.reason = "out of memory" + limit_text;
  } else if (timed_out) {
    char text[64];
    std::snprintf(text, sizeof(text), "%g", limits.timeout_s);
    outcome.reason = std::string("timed out after ") + text + " s (killed)";
  } else if (WIFSIGNALED(status)) {
    outcome.reason = signal_reason(WTERMSIG(status));
  } else if (!fail_reason.empty()) {
    outcome.reason = fail_reason == "out of memory" ? fail_reason + limit_text : fail_reason;
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    outcome.reason = "exited with status " + std::to_string(WEXITSTATUS(status));
  } else if (!got_result && !outcome.stopped) {
    outcome.reason = "ended without a result";
  } else {
    outcome.ok = true;
  }
  return outcome;
}

}  // namespace cuvil::tuner
