// The results store: every measured run in one SQLite file, so history, comparisons and the
// dashboard read from one place. WAL mode and one write transaction per run mean several
// writers at once, or a writer killed mid-run, leave a consistent database: a run is stored
// completely or not at all.
//
// Schema (version kSchemaVersion, in PRAGMA user_version; see results_store.cc):
//   machines(id, fingerprint, host, cpu_model, cores, details)   one row per machine seen
//   configs(id, hash, yaml)                                      one row per pipeline config
//   runs(id, started_at, stored_at, git_commit, machine_id, config_id, suite, target, threads,
//        command_line, document)                                 document = the full run.json
//   benchmarks(id, run_id, name, suite, rung, repetitions, median_ns, mean_ns, stddev_ns, cv,
//              min_ns, max_ns, gflops, gbps, noisy)
//   samples(benchmark_id, idx, real_ns, cpu_ns)
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/sqlite_db.h"

namespace cuvil::reports {

constexpr int kSchemaVersion = 1;
// How long a writer waits for another writer's transaction to finish.
constexpr int kBusyTimeoutMs = 60000;

// $XDG_DATA_HOME/cuvil/results.db, else $HOME/.local/share/cuvil/results.db, else
// ./cuvil-results.db when neither variable is set.
std::string default_database_path();

struct StoredRun {
  int64_t id = 0;
  std::string started_at;  // the run.json context's date
  std::string git_commit;
  std::string suite;
  std::string target;
  int threads = 0;
  std::string config_hash;
  std::string host;
  std::string machine_fingerprint;
  std::string command_line;
  std::vector<std::string> rungs;  // in measured order
};

struct StoreRunOptions {
  std::string command_line;
  // Called inside the transaction after each benchmark's rows are written (tests kill the
  // process here to check that a half-stored run leaves no trace).
  std::function<void(int64_t benchmarks_written)> after_benchmark;
};

class ResultsStore {
 public:
  // Opens or creates the database at `path` and brings its schema up to date. A database made
  // by a newer cuvil (higher schema version) is refused rather than misread.
  explicit ResultsStore(const std::string& path);
  // The same, but a missing file is a UserError (read-only commands should not create one).
  static ResultsStore open_existing(const std::string& path);
  // Opens an existing database for reading only (history, compare, the dashboard): nothing is
  // written, not even the journal mode, so read-only files, folders and file systems can be
  // read. A missing file, a newer schema, or an older one that needs upgrading by a writer is a
  // UserError; an empty database (a new, empty file) reads as one without runs. Writing through
  // the store fails ("attempt to write a readonly database").
  static ResultsStore open_read_only(const std::string& path);

  // Stores a run.json document in one transaction; returns the new run's id. The document is
  // validated first (benchmarks_of), so a malformed one stores nothing.
  int64_t store_run(const nlohmann::json& document, const StoreRunOptions& options = {});

  // Newest first; `suite` empty means every suite; limit <= 0 means no limit.
  std::vector<StoredRun> list_runs(const std::string& suite = "", int limit = 0);
  // The full run.json of a stored run; an unknown id, or a stored document that is not JSON,
  // is a UserError.
  nlohmann::json load_document(int64_t run_id);
  // How messages about a stored run's document name it: "PATH: run ID".
  std::string document_source(int64_t run_id) const;

  int schema_version();
  Database& database() { return *db_; }
  const std::string& path() const { return path_; }

 private:
  ResultsStore(const std::string& path, Access access);
  void configure_connection();
  void migrate();
  int64_t machine_id(const nlohmann::json& context);
  int64_t config_id(const nlohmann::json& context);

  std::string path_;
  std::unique_ptr<Database> db_;
};

}  // namespace cuvil::reports
