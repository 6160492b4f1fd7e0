#include "tuner/optuna_bridge.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "passes/ir/error.h"

#ifndef CUVIL_TUNER_PYTHON_DIR
#define CUVIL_TUNER_PYTHON_DIR "tuner/python"
#endif

namespace cuvil::tuner {

std::string bridge_script_path() {
  const char* dir = std::getenv("CUVIL_TUNER_PYTHON_DIR");
  return std::string(dir && *dir ? dir : CUVIL_TUNER_PYTHON_DIR) + "/cuvil_optuna.py";
}

std::string storage_url(const std::string& study) {
  if (study.find("://") != std::string::npos) return study;
  return "sqlite:///" + std::filesystem::absolute(study).lexically_normal().string();
}

OptunaBridge::OptunaBridge(const BridgeOptions& options) : options_(options) {
  if (options_.script.empty()) options_.script = bridge_script_path();
  if (access(options_.python.c_str(), X_OK) != 0) {
    throw UserError("Python interpreter " + options_.python + " cannot be run (" +
                    std::strerror(errno) +
                    "); install python3 and python3-optuna or pass --python");
  }
  if (access(options_.script.c_str(), R_OK) != 0) {
    throw UserError("the Optuna bridge script " + options_.script + " is missing (" +
                    std::strerror(errno) + "); set CUVIL_TUNER_PYTHON_DIR");
  }
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw UserError(std::string("cannot create pipes for the Optuna bridge: ") +
                    std::strerror(errno));
  }
  pid_ = fork();
  if (pid_ < 0)
    throw UserError(std::string("cannot fork the Optuna bridge: ") + std::strerror(errno));
  if (pid_ == 0) {
    dup2(in_pipe[0], STDIN_FILENO);
    dup2(out_pipe[1], STDOUT_FILENO);
    const char* argv[] = {options_.python.c_str(), "-u", options_.script.c_str(), nullptr};
    execv(options_.python.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  to_child_ = in_pipe[1];
  from_child_ = out_pipe[0];
  nlohmann::json hello;
  try {
    hello = call({{"op", "hello"}});
  } catch (const UserError& e) {
    throw UserError(std::string("the Optuna bridge (") + options_.python + " " + options_.script +
                    ") did not start: " + e.what());
  }
  if (!hello.value("ok", false)) throw UserError(hello.value("error", std::string("?")));
  optuna_version_ = hello.value("optuna", std::string());
  has_sklearn_ = hello.value("sklearn", false);
}

OptunaBridge::~OptunaBridge() {
  if (pid_ > 0) {
    if (to_child_ >= 0) {
      const std::string bye = "{\"op\":\"close\"}\n";
      struct sigaction ignore {
      }, old{};
      ignore.sa_handler = SIG_IGN;
      sigaction(SIGPIPE, &ignore, &old);  // the child may already be gone
      [[maybe_unused]] ssize_t n = write(to_child_, bye.data(), bye.size());
      sigaction(SIGPIPE, &old, nullptr);
      close(to_child_);
    }
    // Give Python a moment to finish its storage writes, then make sure it is gone.
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

std::string OptunaBridge::read_line() {
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
    if (left <= 0) throw UserError("no reply from the Optuna bridge within the timeout");
    pollfd p{from_child_, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char chunk[65536];
    const ssize_t n = read(from_child_, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int status = 0;
      std::string why = "it exited";
      if (waitpid(pid_, &status, 0) == pid_) {
        pid_ = -1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
          why = "the interpreter could not be executed";
        } else if (WIFEXITED(status)) {
          why = "it exited with status " + std::to_string(WEXITSTATUS(status));
        } else if (WIFSIGNALED(status)) {
          why = "it was killed by signal " + std::to_string(WTERMSIG(status));
        }
      }
      throw UserError("the Optuna bridge stopped answering (" + why + "; see its stderr above)");
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

nlohmann::json OptunaBridge::call(const nlohmann::json& request) {
  if (pid_ <= 0) throw UserError("the Optuna bridge is not running");
  const std::string line = request.dump() + "\n";
  size_t done = 0;
  // A dead reader turns into EPIPE rather than killing us.
  struct sigaction ignore {
  }, old{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old);
  while (done < line.size()) {
    const ssize_t n = write(to_child_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      sigaction(SIGPIPE, &old, nullptr);
      throw UserError("the Optuna bridge stopped reading requests");
    }
    done += static_cast<size_t>(n);
  }
  sigaction(SIGPIPE, &old, nullptr);
  const std::string reply = read_line();
  try {
    return nlohmann::json::parse(reply);
  } catch (const nlohmann::json::exception&) {
    throw UserError("the Optuna bridge answered something that is not JSON: " + reply);
  }
}

nlohmann::json OptunaBridge::call_ok(const nlohmann::json& request) {
  nlohmann::json reply = call(request);
  if (!reply.value("ok", false)) {
    throw UserError("Optuna (" + request.value("op", std::string("?")) +
                    "): " + reply.value("error", std::string("unknown error")));
  }
  return reply;
}

nlohmann::json OptunaBridge::open(const StudyRequest& r) {
  nlohmann::json req = {{"op", "open"},
                        {"storage", r.storage},
                        {"study_name", r.study_name},
                        {"sampler", r.sampler},
                        {"pruner", r.pruner},
                        {"seed", r.seed},
                        {"space", r.space},
                        {"attrs", r.attrs.is_null() ? nlohmann::json::object() : r.attrs},
                        {"allow_mismatch", r.allow_mismatch},
                        {"enqueue", r.enqueue},
                        {"readonly", r.readonly}};
  return call_ok(req);
}

AskedTrial OptunaBridge::ask() {
  const nlohmann::json reply = call_ok({{"op", "ask"}});
  AskedTrial t;
  t.number = reply.at("number").get<int>();
  t.values = reply.at("values");
  t.baseline = reply.value("baseline", false);
  if (reply.contains("retry_of") && reply["retry_of"].is_number_integer()) {
    t.retry_of = reply["retry_of"].get<int>();
  }
  t.requeued = reply.value("requeued", nlohmann::json::array());
  return t;
}

bool OptunaBridge::report(int number, int step, double value) {
  return call_ok({{"op", "report"}, {"number", number}, {"step", step}, {"value", value}})
      .value("prune", false);
}

void OptunaBridge::tell_complete(int number, double value) {
  call_ok({{"op", "tell"}, {"number", number}, {"state", "complete"}, {"value", value}});
}

void OptunaBridge::tell_failed(int number, const std::string& reason) {
  call_ok({{"op", "tell"}, {"number", number}, {"state", "fail"}, {"reason", reason}});
}

void OptunaBridge::tell_pruned(int number, const std::string& reason) {
  call_ok({{"op", "tell"}, {"number", number}, {"state", "pruned"}, {"reason", reason}});
}

nlohmann::json OptunaBridge::best() {
  return call_ok({{"op", "best"}});
}
nlohmann::json OptunaBridge::trials() {
  return call_ok({{"op", "trials"}}).at("trials");
}
nlohmann::json OptunaBridge::fanova(int seed) {
  return call_ok({{"op", "fanova"}, {"seed", seed}}).at("importances");
}

}  // namespace cuvil::tuner
