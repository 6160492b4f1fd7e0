// Trial isolation: a trial runs in a forked child process (no exec: the child already has the
// compiled-in pipeline and suites) under a wall-clock limit and an address-space limit
// (RLIMIT_AS). The parent never compiles or runs a configuration itself, so a crash, a hang or
// an out-of-memory only fails that one trial.
//
// Child and parent talk over two pipes: the child sends JSON lines (a progress message it wants
// an answer to, a final result, or a failure reason); the parent answers a progress message with
// go-on or stop (rung-wise pruning).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace cuvil::tuner {

struct ChildLimits {
  double timeout_s = 600;  // wall clock for the whole trial; the child is killed after it
  int64_t memory_mb = 0;   // RLIMIT_AS in MiB; 0: no limit
};

// The child's end.
class ChildChannel {
 public:
  ChildChannel(int to_parent, int from_parent) : to_parent_(to_parent), from_parent_(from_parent) {}
  // Sends a progress message and waits for the parent's verdict: true to go on.
  bool progress(const nlohmann::json& message);
  void result(const nlohmann::json& message);

 private:
  void send(const std::string& kind, const nlohmann::json& data);
  int to_parent_, from_parent_;
};

struct ChildOutcome {
  bool ok = false;        // the body returned and sent its result
  bool stopped = false;   // the parent said stop after a progress message
  std::string reason;     // why it failed: "crashed (signal 11, SIGSEGV)", "timed out ..."
  nlohmann::json result;  // the body's result message
  std::vector<nlohmann::json> progress;  // every progress message, in order
};

using ChildBody = std::function<void(ChildChannel&)>;
// Parent side: sees each progress message, returns true to let the child go on.
using ProgressHandler = std::function<bool(const nlohmann::json&)>;

// Forks, runs `body` in the child, and waits for it under the limits. `close_in_child` lists the
// parent's descriptors the child must not hold (e.g. the Optuna bridge's pipes). A body that
// throws fails with the exception's message; std::bad_alloc fails as out of memory.
ChildOutcome run_isolated(const ChildBody& body, const ProgressHandler& on_progress,
                          const ChildLimits& limits, const std::vector<int>& close_in_child = {});

}  // namespace cuvil::tuner
