#include "reports/results_store.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "base/text_file.h"
#include "reports/json_input.h"
#include "reports/run_document.h"
#include "stats/summary.h"

namespace cuvil::reports {

namespace {

using nlohmann::json;

// Migration i takes the schema from version i to i + 1. Append new ones; never edit old ones
// (databases in the field have already run them).
const char* const kMigrations[] = {
    R"sql(
CREATE TABLE machines (
  id INTEGER PRIMARY KEY,
  fingerprint TEXT NOT NULL UNIQUE,
  host TEXT NOT NULL,
  cpu_model TEXT NOT NULL,
  cores INTEGER NOT NULL,
  details TEXT NOT NULL
);
CREATE TABLE configs (
  id INTEGER PRIMARY KEY,
  hash TEXT NOT NULL UNIQUE,
  yaml TEXT NOT NULL
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at TEXT NOT NULL,
  stored_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
  git_commit TEXT NOT NULL,
  machine_id INTEGER NOT NULL REFERENCES machines(id),
  config_id INTEGER REFERENCES configs(id),
  suite TEXT NOT NULL,
  target TEXT NOT NULL,
  threads INTEGER NOT NULL,
  command_line TEXT NOT NULL,
  document TEXT NOT NULL
);
CREATE INDEX runs_by_suite ON runs(suite, id);
CREATE TABLE benchmarks (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  suite TEXT NOT NULL,
  rung TEXT NOT NULL,
  repetitions INTEGER NOT NULL,
  median_ns REAL NOT NULL,
  mean_ns REAL NOT NULL,
  stddev_ns REAL NOT NULL,
  cv REAL NOT NULL,
  min_ns REAL NOT NULL,
  max_ns REAL NOT NULL,
  gflops REAL NOT NULL,
  gbps REAL NOT NULL,
  noisy INTEGER NOT NULL,
  UNIQUE (run_id, name)
);
CREATE INDEX benchmarks_by_name ON benchmarks(name, run_id);
CREATE TABLE samples (
  benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  real_ns REAL NOT NULL,
  cpu_ns REAL,
  PRIMARY KEY (benchmark_id, idx)
) WITHOUT ROWID;
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

std::string fnv1a_hex(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

int64_t int_at(const json& j, const char* pointer, int64_t fallback) {
  const json::json_pointer p(pointer);
  return j.contains(p) && j.at(p).is_number_integer() ? j.at(p).get<int64_t>() : fallback;
}

std::string join(const std::vector<std::string>& parts, const std::string& separator) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? separator : "") + parts[i];
  return out;
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == separator) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace

std::string default_database_path() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg && *xdg) return std::string(xdg) + "/cuvil/results.db";
  const char* home = std::getenv("HOME");
  if (home && *home) return std::string(home) + "/.local/share/cuvil/results.db";
  return "cuvil-results.db";
}

ResultsStore::ResultsStore(const std::string& path) : ResultsStore(path, Access::kReadWrite) {}

ResultsStore::ResultsStore(const std::string& path, Access access) : path_(path) {
  if (access == Access::kReadWrite) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    db_ = std::make_unique<Database>(path, kBusyTimeoutMs);
    configure_connection();
    migrate();
    return;
  }
  db_ = std::make_unique<Database>(path, kBusyTimeoutMs, Access::kReadOnly);
  const int version = schema_version();
  if (version > kSchemaVersion) migrate();  // refuses it
  if (version == kSchemaVersion) return;
  if (version == 0 && db_->query_int("SELECT count(*) FROM sqlite_master").value_or(0) == 0) {
    // A new, empty file: read it as an empty store, from the schema in memory.
    db_ = std::make_unique<Database>(":memory:", kBusyTimeoutMs);
    migrate();
    return;
  }
  throw UserError(path + ": results database has schema version " + std::to_string(version) +
                  ", older than this cuvil's (" + std::to_string(kSchemaVersion) +
                  "); a writing command (cuvil-bench run) upgrades it");
}

namespace {

void require_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw UserError(path +
                    ": no results database here (cuvil-bench run stores runs; --db "
                    "chooses the file)");
  }
}

}  // namespace

ResultsStore ResultsStore::open_existing(const std::string& path) {
  require_file(path);
  return ResultsStore(path);
}

ResultsStore ResultsStore::open_read_only(const std::string& path) {
  require_file(path);
  return ResultsStore(path, Access::kReadOnly);
}

void ResultsStore::configure_connection() {
  // Switching to WAL needs a moment of exclusive access; a first-time switch racing another
  // process's can report busy without consulting the busy timeout, so retry briefly.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kBusyTimeoutMs);
  for (;;) {
    if (sqlite3_exec(db_->handle(), "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) ==
        SQLITE_OK) {
      break;
    }
    const int code = sqlite3_errcode(db_->handle()) & 0xff;
    if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) ||
        std::chrono::steady_clock::now() > deadline) {
      db_->fail("cannot switch to WAL mode");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // NORMAL is durable against a killed process in WAL mode (only power loss may drop the last
  // commits, never corrupt); foreign keys make orphans impossible.
  db_->exec("PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
}

int ResultsStore::schema_version() {
  return static_cast<int>(db_->query_int("PRAGMA user_version").value_or(0));
}

void ResultsStore::migrate() {
  auto refuse_newer = [&](int version) {
    if (version > kSchemaVersion) {
      throw UserError(path() + ": results database has schema version " + std::to_string(version) +
                      ", newer than this cuvil understands (" + std::to_string(kSchemaVersion) +
                      ")");
    }
  };
  int version = schema_version();
  refuse_newer(version);
  if (version == kSchemaVersion) return;
  // Another process may be migrating at the same moment: re-read the version under the write
  // lock so each migration runs exactly once.
  WriteTransaction transaction(*db_);
  version = schema_version();
  refuse_newer(version);
  for (int v = version; v < kSchemaVersion; ++v) db_->exec(kMigrations[v]);
  db_->exec("PRAGMA user_version=" + std::to_string(kSchemaVersion));
  transaction.commit();
}

int64_t ResultsStore::machine_id(const json& context) {
  const std::string host = first_string(context, {"/host_name", "/cuvil/host_name"});
  const std::string cpu_model =
      first_string(context, {"/cuvil/cpu_model", "/cuvil/cpu/model", "/cuvil/machine/cpu_model",
                             "/cuvil/environment/cpu_model", "/cuvil/env/cpu_model", "/cpu_model"});
  const int64_t cores = int_at(context, "/num_cpus", 0);
  // Frequency and load change between runs on one machine; only what identifies it counts.
  const std::string fingerprint = fnv1a_hex(host + "\n" + cpu_model + "\n" + std::to_string(cores));
  json details = context;
  details.erase("date");
  db_->prepare(
         "INSERT INTO machines(fingerprint, host, cpu_model, cores, details) "
         "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(fingerprint) DO NOTHING")
      .bind(1, fingerprint)
      .bind(2, host)
      .bind(3, cpu_model)
      .bind(4, cores)
      .bind(5, details.dump(-1, ' ', false, json::error_handler_t::replace))
      .run();
  Statement select = db_->prepare("SELECT id FROM machines WHERE fingerprint = ?1");
  select.bind(1, fingerprint);
  CUVIL_CHECK(select.step(), "machine row just inserted is missing");
  return select.column_int(0);
}

int64_t ResultsStore::config_id(const json& context) {
  const std::string hash =
      first_string(context, {"/cuvil/config_hash", "/cuvil/config/hash", "/config_hash"});
  std::string yaml =
      first_string(context, {"/cuvil/config_yaml", "/cuvil/config_text", "/cuvil/config/yaml"});
  // Older documents name the config file only; keep its text if it is still there.
  if (yaml.empty()) yaml = read_file_or_empty(first_string(context, {"/cuvil/config"}));
  if (hash.empty()) return 0;
  db_->prepare(
         "INSERT INTO configs(hash, yaml) VALUES (?1, ?2) ON CONFLICT(hash) DO UPDATE "
         "SET yaml = excluded.yaml WHERE configs.yaml = '' AND excluded.yaml <> ''")
      .bind(1, hash)
      .bind(2, yaml)
      .run();
  Statement select = db_->prepare("SELECT id FROM configs WHERE hash = ?1");
  select.bind(1, hash);
  CUVIL_CHECK(select.step(), "config row just inserted is missing");
  return select.column_int(0);
}

int64_t ResultsStore::store_run(const json& document, const StoreRunOptions& options) {
  const std::vector<BenchmarkSamples> benchmarks = benchmarks_of(document, "run document");
  const json context = document.contains("context") && document["context"].is_object()
                           ? document["context"]
                           : json::object();
  std::vector<std::string> suites;
  for (const auto& b : benchmarks) {
    if (std::find(suites.begin(), suites.end(), b.suite) == suites.end()) {
      suites.push_back(b.suite);
    }
  }
  std::string suite = first_string(context, {"/cuvil/suite"});
  if (suite.empty()) suite = join(suites, ",");
  const std::string commit = first_string(
      context, {"/cuvil/git_commit", "/cuvil/commit", "/cuvil/git/commit",
                "/cuvil/environment/git_commit", "/cuvil/env/git_commit", "/git_commit"});

  WriteTransaction transaction(*db_);
  const int64_t machine = machine_id(context);
  const int64_t config = config_id(context);
  Statement insert_run = db_->prepare(
      "INSERT INTO runs(started_at, git_commit, machine_id, config_id, suite, target, threads, "
      "command_line, document) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
  insert_run.bind(1, first_string(context, {"/date"}))
      .bind(2, commit)
      .bind(3, machine)
      .bind(6, first_string(context, {"/cuvil/target"}))
      .bind(5, suite)
      .bind(7, static_cast<int64_t>(benchmarks.empty() ? 0 : benchmarks.front().threads))
      .bind(8, options.command_line)
      .bind(9, document.dump(-1, ' ', false, json::error_handler_t::replace));
  if (config) {
    insert_run.bind(4, config);
  } else {
    insert_run.bind_null(4);
  }
  insert_run.run();
  const int64_t run_id = db_->last_insert_rowid();

  Statement insert_benchmark = db_->prepare(
      "INSERT INTO benchmarks(run_id, name, suite, rung, repetitions, median_ns, mean_ns, "
      "stddev_ns, cv, min_ns, max_ns, gflops, gbps, noisy) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)");
  Statement insert_sample = db_->prepare(
      "INSERT INTO samples(benchmark_id, idx, real_ns, cpu_ns) VALUES (?1, ?2, ?3, ?4)");
  int64_t written = 0;
  for (const BenchmarkSamples& b : benchmarks) {
    const stats::Summary s = stats::summarize(b.real_ns, stats::MedianInterval::none);
    insert_benchmark.bind(1, run_id)
        .bind(2, b.name)
        .bind(3, b.suite)
        .bind(4, b.rung)
        .bind(5, s.count)
        .bind(6, s.median)
        .bind(7, s.mean)
        .bind(8, s.stddev)
        .bind(9, s.cv)
        .bind(10, s.min)
        .bind(11, s.max)
        .bind(12, b.gflops)
        .bind(13, b.gbps)
        .bind(14, static_cast<int64_t>(b.noisy));
    insert_benchmark.run();
    const int64_t benchmark_id = db_->last_insert_rowid();
    for (size_t i = 0; i < b.real_ns.size(); ++i) {
      insert_sample.bind(1, benchmark_id).bind(2, static_cast<int64_t>(i)).bind(3, b.real_ns[i]);
      if (b.cpu_ns.empty()) {
        insert_sample.bind_null(4);
      } else {
        insert_sample.bind(4, b.cpu_ns[i]);
      }
      insert_sample.run();
    }
    ++written;
    if (options.after_benchmark) options.after_benchmark(written);
  }
  transaction.commit();
  return run_id;
}

std::vector<StoredRun> ResultsStore::list_runs(const std::string& suite, int limit) {
  Statement select = db_->prepare(
      "SELECT r.id, r.started_at, r.git_commit, r.suite, r.target, r.threads, "
      "       COALESCE(c.hash, ''), m.host, m.fingerprint, r.command_line, "
      "       (SELECT group_concat(rung, char(31)) FROM "
      "          (SELECT rung FROM benchmarks b WHERE b.run_id = r.id ORDER BY b.id)) "
      "FROM runs r JOIN machines m ON m.id = r.machine_id "
      "LEFT JOIN configs c ON c.id = r.config_id "
      "WHERE ?1 = '' OR r.suite = ?1 ORDER BY r.id DESC LIMIT ?2");
  select.bind(1, suite).bind(2, static_cast<int64_t>(limit > 0 ? limit : -1));
  std::vector<StoredRun> runs;
  while (select.step()) {
    StoredRun r;
    r.id = select.column_int(0);
    r.started_at = select.column_text(1);
    r.git_commit = select.column_text(2);
    r.suite = select.column_text(3);
    r.target = select.column_text(4);
    r.threads = static_cast<int>(select.column_int(5));
    r.config_hash = select.column_text(6);
    r.host = select.column_text(7);
    r.machine_fingerprint = select.column_text(8);
    r.command_line = select.column_text(9);
    r.rungs = split(select.column_text(10), '\x1f');
    runs.push_back(std::move(r));
  }
  return runs;
}

json ResultsStore::load_document(int64_t run_id) {
  Statement select = db_->prepare("SELECT document FROM runs WHERE id = ?1");
  select.bind(1, run_id);
  if (!select.step()) {
    throw UserError("run " + std::to_string(run_id) + ": no such run in " + path());
  }
  // Hand-edited or damaged databases hold anything: the document is read like a file's.
  return parse_json(select.column_text(0), document_source(run_id));
}

std::string ResultsStore::document_source(int64_t run_id) const {
  return path() + ": run " + std::to_string(run_id);
}

}  // namespace cuvil::reports
