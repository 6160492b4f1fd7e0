// A Python helper process spoken to in JSON lines: one request object per line on its stdin, one
// reply per line on its stdout (its stderr is ours). Used by the Optuna bridge (tuner/) and the
// PyTorch baseline (torch_baseline.h). Every failure (interpreter or script missing, the child
// dying, a reply that does not come or is not JSON) is a UserError naming the helper.
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace cuvil::bench {

struct PythonChildOptions {
  std::string what;  // for messages, e.g. "the Optuna bridge"
  std::string python = "/usr/bin/python3";
  std::string script;
  double reply_timeout_s = 300;
  std::vector<std::pair<std::string, std::string>> env;  // set in the child only
};

class PythonChild {
 public:
  explicit PythonChild(PythonChildOptions options);
  ~PythonChild();  // sends {"op": "close"}, gives the child a moment, then kills it
  PythonChild(const PythonChild&) = delete;
  PythonChild& operator=(const PythonChild&) = delete;

  // One request and its reply (returned even when it says "ok": false).
  nlohmann::json call(const nlohmann::json& request);
  // The same, but a reply without "ok": true is a UserError carrying its "error".
  nlohmann::json call_ok(const nlohmann::json& request);
  void set_reply_timeout(double seconds) { options_.reply_timeout_s = seconds; }

  // The pipe ends, so a forked child of ours can close them.
  std::vector<int> fds() const { return {to_child_, from_child_}; }
  pid_t pid() const { return pid_; }
  const std::string& what() const { return options_.what; }

 private:
  std::string read_line();
  // Reaps the child that closed its pipes and says how it ended.
  std::string exit_reason();

  PythonChildOptions options_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string buffer_;
};

}  // namespace cuvil::bench
