#include "bench_suite/python_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "bench_suite/heap_huge_pages.h"

namespace cuvil::bench {

namespace {

// Writes all of `text`; a dead reader becomes EPIPE rather than killing us.
bool write_all(int fd, const std::string& text) {
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  size_t done = 0;
  bool ok = true;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ok = false;
      break;
    }
    done += static_cast<size_t>(n);
  }
  sigaction(SIGPIPE, &old, nullptr);
  return ok;
}

}  // namespace

PythonChild::PythonChild(PythonChildOptions options) : options_(std::move(options)) {
  if (access(options_.python.c_str(), X_OK) != 0) {
    throw UserError("Python interpreter " + options_.python + " cannot be run (" +
                    std::strerror(errno) + ") for " + options_.what + "; pass --python");
  }
  if (access(options_.script.c_str(), R_OK) != 0) {
    throw UserError(options_.what + ": script " + options_.script + " is missing (" +
                    std::strerror(errno) + ")");
  }
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw UserError("cannot create pipes for " + options_.what + ": " + std::strerror(errno));
  }
  pid_ = fork();
  if (pid_ < 0) throw UserError("cannot fork " + options_.what + ": " + std::strerror(errno));
  if (pid_ == 0) {
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    restore_heap_tunables();  // Python starts as the user started cuvil-bench
    for (const auto& [key, value] : options_.env) setenv(key.c_str(), value.c_str(), 1);
    const char* argv[] = {options_.python.c_str(), "-u", options_.script.c_str(), nullptr};
    execv(options_.python.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
}

PythonChild::~PythonChild() {
  if (pid_ > 0) {
    if (to_child_ >= 0) {
      write_all(to_child_, "{\"op\":\"close\"}\n");
      close(to_child_);
    }
    // Give Python a moment to finish (a study's storage writes), then make sure it is gone.
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      usleep(10000);
    }
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (from_child_ >= 0) close(from_child_);
}

std::string PythonChild::read_line() {
  const auto deadline =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int64_t>(options_.reply_timeout_s * 1e3));
  for (;;) {
    const size_t eol = buffer_.find('\n');
    if (eol != std::string::npos) {
      std::string line = buffer_.substr(0, eol);
      buffer_.erase(0, eol + 1);
      return line;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) throw UserError("no reply from " + options_.what + " within the timeout");
    pollfd p{from_child_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(from_child_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      throw UserError(options_.what + " stopped answering (" + exit_reason() +
                      "; see its stderr above)");
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

std::string PythonChild::exit_reason() {
  int status = 0;
  std::string why = "it exited";
  if (pid_ <= 0) return why;
  // It closed its pipes: it is ending, or (a misbehaving script) went on without them.
  pid_t reaped = 0;
  for (int i = 0; i < 200 && reaped == 0; ++i) {
    reaped = waitpid(pid_, &status, WNOHANG);
    if (reaped == 0) usleep(10000);
  }
  if (reaped == 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return "it closed its pipes but kept running, and was killed";
  }
  if (reaped == pid_) {
    pid_ = -1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
      why = "the interpreter could not be executed";
    } else if (WIFEXITED(status)) {
      why = "it exited with status " + std::to_string(WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
      why = "it was killed by signal " + std::to_string(WTERMSIG(status));
      // The kernel's out-of-memory killer sends SIGKILL; nothing else here does.
      if (WTERMSIG(status) == SIGKILL) why += " (out of memory? see dmesg)";
    }
  }
  return why;
}

nlohmann::json PythonChild::call(const nlohmann::json& request) {
  if (pid_ <= 0) throw UserError(options_.what + " is not running");
  if (!write_all(to_child_, request.dump() + "\n")) {
    throw UserError(options_.what + " stopped reading requests (" + exit_reason() + ")");
  }
  const std::string reply = read_line();
  try {
    return nlohmann::json::parse(reply);
  } catch (const nlohmann::json::exception&) {
    throw UserError(options_.what + " answered something that is not JSON: " + reply);
  }
}

nlohmann::json PythonChild::call_ok(const nlohmann::json& request) {
  nlohmann::json reply = call(request);
  if (!reply.is_object() || !reply.value("ok", false)) {
    const std::string error =
        reply.is_object() && reply.contains("error") && reply["error"].is_string()
            ? reply["error"].get<std::string>()
            : std::string("unknown error");
    throw UserError(options_.what + " (" + request.value("op", std::string("?")) + "): " + error);
  }
  return reply;
}

}  // namespace cuvil::bench
