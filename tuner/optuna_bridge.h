// The C++ end of the Optuna bridge: runs tuner/python/cuvil_optuna.py under the configured
// interpreter (default /usr/bin/python3, where Debian's python3-optuna lives) and speaks its
// line-based JSON protocol over the child's stdin/stdout. Every failure (Python or Optuna
// missing, an unreachable storage URL, a reply that does not come) is a UserError.
#pragma once

#include <sys/types.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_suite/python_child.h"

namespace cuvil::tuner {

struct BridgeOptions {
  std::string python = "/usr/bin/python3";
  std::string script;            // empty: bridge_script_path()
  double reply_timeout_s = 300;  // a study's first open may create its tables
};

struct StudyRequest {
  std::string storage;  // an Optuna RDB URL (sqlite:///..., postgresql://...)
  std::string study_name;
  std::string sampler = "tpe";    // tpe | cmaes | random | qmc
  std::string pruner = "median";  // median | successive-halving | none
  int seed = 0;
  nlohmann::json space;  // space_to_json
  nlohmann::json attrs;  // tie the study to a suite and space
  bool allow_mismatch = false;
  std::vector<nlohmann::json> enqueue;  // values to try first when the study is new
  bool readonly = false;  // load an existing study only; leave its running trials alone
};

struct AskedTrial {
  int number = -1;
  nlohmann::json values;  // every dimension, resolved
  bool baseline = false;
  int retry_of = -1;
  // Trials of the study found interrupted before this ask (their tuner died): now failed and
  // enqueued again. Each has "number" and "values".
  nlohmann::json requeued = nlohmann::json::array();
  // Trials left RUNNING by a killed process after their record was stored: now finished as the
  // record says. Each is the record (trial_log.h's JSON).
  nlohmann::json recovered = nlohmann::json::array();
};

class OptunaBridge {
 public:
  explicit OptunaBridge(const BridgeOptions& options);
  ~OptunaBridge();  // closes the protocol and reaps the child
  OptunaBridge(const OptunaBridge&) = delete;
  OptunaBridge& operator=(const OptunaBridge&) = delete;

  const std::string& optuna_version() const { return optuna_version_; }

  nlohmann::json open(const StudyRequest& request);  // the "open" reply
  AskedTrial ask();
  bool report(int number, int step, double value);  // true: prune now
  // `record` (trial_log.h's JSON, or null) is stored with the trial as its user attribute
  // "cuvil_record" before its state is told: the study holds everything cuvil-tune-gen reads.
  void tell_complete(int number, double value, const nlohmann::json& record = nullptr);
  void tell_failed(int number, const std::string& reason, const nlohmann::json& record = nullptr);
  void tell_pruned(int number, const std::string& reason, const nlohmann::json& record = nullptr);
  nlohmann::json best();
  nlohmann::json trials();
  nlohmann::json fanova(int seed);

  // A raw request; the reply is returned even when not ok (tests use it for the protocol).
  nlohmann::json call(const nlohmann::json& request);
  // The bridge's pipe ends, so a forked trial can close them.
  std::vector<int> fds() const { return child_->fds(); }
  pid_t pid() const { return child_->pid(); }

 private:
  nlohmann::json call_ok(const nlohmann::json& request);

  BridgeOptions options_;
  std::unique_ptr<bench::PythonChild> child_;
  std::string optuna_version_;
};

// tuner/python/cuvil_optuna.py: $CUVIL_TUNER_PYTHON_DIR, else the source tree's copy.
std::string bridge_script_path();
// "study.db" -> "sqlite:////abs/study.db"; URLs ("scheme://...") pass through.
std::string storage_url(const std::string& study);

}  // namespace cuvil::tuner
