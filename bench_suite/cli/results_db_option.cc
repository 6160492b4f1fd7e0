// The results store option shared by run, history and compare: where the database is, and
// storing a finished run in it; and the bounds check of the reading commands' numeric options.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "bench_suite/cli/commands.h"
#include "reports/results_store.h"

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
