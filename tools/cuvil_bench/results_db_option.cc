// The results store option shared by run, history and compare: where the database is, and
// storing a finished run in it; checking a run's outputs before it measures; and the bounds
// check of the reading commands' numeric options.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "bench_suite/json_report.h"
#include "reports/results_store.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

// This process's own command line, NUL-separated in /proc, as one shell-like string.
std::string own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  return raw;
}

}  // namespace

void add_db_option(CLI::App& command, DbOptions& options, bool allow_disable) {
  command.add_option_function<std::string>(
      "--db",
      [&options](const std::string& path) {
        options.path = path;
        options.disabled = path.empty();
      },
      allow_disable ? "results database (default: $XDG_DATA_HOME/cuvil/results.db, else "
                      "~/.local/share/cuvil/results.db); '' stores nothing"
                    : "results database (default: $XDG_DATA_HOME/cuvil/results.db, else "
                      "~/.local/share/cuvil/results.db)");
  if (allow_disable) {
    command.add_flag("--no-db", options.disabled, "do not store this run in the results database");
  }
}

std::string resolved_db_path(const DbOptions& options) {
  if (options.disabled) return {};
  return options.path.empty() ? reports::default_database_path() : options.path;
}

namespace {

// A file `flag` names will be writable: not a directory, in an existing writable directory.
void require_writable_file(const std::string& path, const std::string& flag) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UserError(flag + " " + path + ": is a directory; name the file to write");
  }
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (!std::filesystem::is_directory(dir, ec)) {
    throw UserError(flag + " " + path + ": the directory " + dir.string() + " does not exist");
  }
  if (access(dir.c_str(), W_OK) != 0) {
    throw UserError(flag + " " + path + ": cannot write in " + dir.string() + ": " +
                    std::strerror(errno));
  }
}

// A directory `flag` names exists (made now if missing) and is writable.
void require_writable_dir(const std::string& path, const std::string& flag) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (!std::filesystem::is_directory(path)) {
    throw UserError(flag + " " + path + ": cannot make this directory" +
                    (ec ? ": " + ec.message() : std::string()));
  }
  if (access(path.c_str(), W_OK) != 0) {
    throw UserError(flag + " " + path + ": cannot write there: " + std::strerror(errno));
  }
}

// Where a run goes when --out or the database failed at the end: the working directory, else
// the system's temporary one.
std::string fallback_path() {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", std::gmtime(&now));
  const std::string name =
      "cuvil-run-" + std::string(stamp) + "-" + std::to_string(getpid()) + ".json";
  if (access(".", W_OK) == 0) return name;
  return (std::filesystem::temp_directory_path() / name).string();
}

}  // namespace

RunOutputs::RunOutputs(const DbOptions& db, std::string out, std::string probe_dir)
    : out_(std::move(out)) {
  if (!out_.empty()) require_writable_file(out_, "--out");
  if (!probe_dir.empty()) require_writable_dir(probe_dir, "--probe-dir");
  const std::string path = resolved_db_path(db);
  if (!path.empty()) {
    try {
      store_ = std::make_unique<reports::ResultsStore>(path);
    } catch (const UserError& e) {
      throw UserError(std::string(e.what()) +
                      " (checked before measuring; --no-db measures without storing)");
    }
  }
}

RunOutputs::~RunOutputs() = default;

void RunOutputs::finish(const nlohmann::json& document) {
  std::string failed;
  if (!out_.empty()) {
    try {
      write_json_file(out_, document);
      std::printf("wrote %s\n", out_.c_str());
    } catch (const UserError& e) {
      failed = e.what();
    }
  }
  if (store_) {
    try {
      reports::StoreRunOptions store_options;
      store_options.command_line = own_command_line();
      const int64_t id = store_->store_run(document, store_options);
      std::printf("stored run %lld in %s\n", static_cast<long long>(id), store_->path().c_str());
    } catch (const UserError& e) {
      failed += (failed.empty() ? "" : "; ") + std::string(e.what());
    }
  }
  if (failed.empty()) return;
  const std::string keep = fallback_path();
  write_json_file(keep, document);
  throw UserError(failed + "; the run is kept in " + keep +
                  " (cuvil-bench compare and report read it)");
}

void store_run_document(const DbOptions& options, const nlohmann::json& document) {
  const std::string path = resolved_db_path(options);
  if (path.empty()) return;
  reports::ResultsStore store(path);
  reports::StoreRunOptions store_options;
  store_options.command_line = own_command_line();
  const int64_t id = store.store_run(document, store_options);
  std::printf("stored run %lld in %s\n", static_cast<long long>(id), path.c_str());
}

CLI::Validator finite_range(double min, double max) {
  char description[64];
  std::snprintf(description, sizeof description, "FLOAT in [%g - %g]", min, max);
  return CLI::Validator(
      [min, max](std::string& input) -> std::string {
        double value = 0;
        if (!CLI::detail::lexical_cast(input, value) || !std::isfinite(value) || value < min ||
            value > max) {
          char message[128];
          std::snprintf(message, sizeof message, " is not a finite number in [%g, %g]", min, max);
          return "'" + input + "'" + message;
        }
        return {};
      },
      description);
}

}  // namespace cuvil::bench::cli
