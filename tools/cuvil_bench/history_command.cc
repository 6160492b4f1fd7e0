// cuvil-bench history: the runs stored in the results database, newest first.
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "reports/results_store.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

struct HistoryOptions {
  DbOptions db;
  std::string suite;
  int limit = 20;
  bool json = false;
};

// The same runs as the table, in full (the table clips commits and rungs).
nlohmann::json history_json(const std::string& path, const std::vector<reports::StoredRun>& runs) {
  nlohmann::json list = nlohmann::json::array();
  for (const reports::StoredRun& r : runs) {
    list.push_back({{"id", r.id},
                    {"date", r.started_at},
                    {"git_commit", r.git_commit},
                    {"suite", r.suite},
                    {"target", r.target},
                    {"threads", r.threads},
                    {"rungs", r.rungs},
                    {"config_hash", r.config_hash},
                    {"host", r.host},
                    {"machine_fingerprint", r.machine_fingerprint},
                    {"command_line", r.command_line}});
  }
  return {{"database", path}, {"runs", std::move(list)}};
}

constexpr size_t kCommitWidth = 10;
constexpr size_t kRungsWidth = 28;

std::string clipped(const std::string& text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

int print_history(const HistoryOptions& o) {
  const std::string path = resolved_db_path(o.db);
  if (path.empty()) throw UserError("history needs a results database: --db PATH");
  reports::ResultsStore store = reports::ResultsStore::open_read_only(path);
  const std::vector<reports::StoredRun> runs = store.list_runs(o.suite, o.limit);
  if (o.json) {
    std::printf("%s\n", history_json(path, runs).dump(2).c_str());
    return 0;
  }
  if (runs.empty()) {
    std::printf("no runs%s stored in %s\n", o.suite.empty() ? "" : (" of " + o.suite).c_str(),
                path.c_str());
    return 0;
  }
  std::printf("%6s  %-24s  %-10s  %-10s  %-6s %3s  %-28s  %-16s  %s\n", "id", "date", "commit",
              "suite", "target", "thr", "rungs", "config", "machine");
  for (const reports::StoredRun& r : runs) {
    std::string rungs;
    for (size_t i = 0; i < r.rungs.size(); ++i) rungs += (i ? "," : "") + r.rungs[i];
    std::printf("%6lld  %-24s  %-10s  %-10s  %-6s %3d  %-28s  %-16s  %s\n",
                static_cast<long long>(r.id), r.started_at.c_str(),
                (r.git_commit.empty() ? "-" : r.git_commit.substr(0, kCommitWidth)).c_str(),
                r.suite.c_str(), r.target.c_str(), r.threads, clipped(rungs, kRungsWidth).c_str(),
                r.config_hash.empty() ? "-" : r.config_hash.c_str(),
                (r.host + " (" + r.machine_fingerprint.substr(0, 8) + ")").c_str());
  }
  return 0;
}

}  // namespace

Action add_history_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("history", "list the runs stored in the results database");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench history\n"
      "  cuvil-bench history --suite resnet50 --limit 5\n"
      "  cuvil-bench history --json");
  auto o = std::make_shared<HistoryOptions>();
  add_db_option(*cmd, o->db, /*allow_disable=*/false);
  cmd->add_option("--suite", o->suite, "only runs of this suite");
  cmd->add_option("--limit", o->limit, "newest N runs (0: all)")->check(CLI::Range(0, 1000000000));
  cmd->add_flag("--json", o->json, "print JSON instead of the table (every field in full)");
  return [o] { return print_history(*o); };
}

}  // namespace cuvil::bench::cli
