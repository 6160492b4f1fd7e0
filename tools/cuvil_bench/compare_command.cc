// cuvil-bench compare A B: per-benchmark change between two runs (run.json files or stored run
// ids) with a Mann-Whitney U test, a verdict, the geometric mean, and a CI gate.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "base/error.h"
#include "bench_suite/environment.h"
#include "reports/compare.h"
#include "reports/printable.h"
#include "reports/results_store.h"
#include "reports/run_document.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

struct CompareCommandOptions {
  std::string old_run, new_run;
  DbOptions db;
  reports::CompareOptions compare;
  std::optional<double> fail_on_regression_pct;
  bool json = false;
};

nlohmann::json finite_or_null(double x) {
  return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}

// The same comparison as the table: per benchmark its medians, change, test and verdict.
nlohmann::json comparison_json(const reports::Comparison& c, const std::string& old_label,
                               const std::string& new_label,
                               const std::vector<const reports::BenchmarkComparison*>* regressed) {
  nlohmann::json rows = nlohmann::json::array();
  for (const reports::BenchmarkComparison& r : c.rows) {
    rows.push_back({{"name", r.name},
                    {"n_old", r.n_old},
                    {"n_new", r.n_new},
                    {"old_median_ns", finite_or_null(r.old_median_ns)},
                    {"new_median_ns", finite_or_null(r.new_median_ns)},
                    {"change_pct", finite_or_null(r.change_pct)},
                    {"u", finite_or_null(r.test.u)},
                    {"p_value", finite_or_null(r.test.p_value)},
                    {"exact", r.test.exact},
                    {"significant", r.significant},
                    {"low_power", r.low_power},
                    {"noisy", r.noisy},
                    {"blocks_old", r.blocks_old},
                    {"blocks_new", r.blocks_new},
                    {"blocks_p", finite_or_null(r.blocks_p)},
                    {"drift_pct", finite_or_null(r.drift_pct)},
                    {"verdict", reports::verdict_name(r.verdict)}});
  }
  nlohmann::json j = {{"old", old_label},
                      {"new", new_label},
                      {"alpha", c.options.alpha},
                      {"min_change_pct", c.options.min_change_pct},
                      {"benchmarks", std::move(rows)},
                      {"only_in_old", c.only_in_old},
                      {"only_in_new", c.only_in_new},
                      {"geomean_ratio", finite_or_null(c.geomean_ratio)},
                      {"warnings", reports::comparison_warnings(c)}};
  if (regressed) {
    nlohmann::json names = nlohmann::json::array();
    for (const reports::BenchmarkComparison* r : *regressed) names.push_back(r->name);
    j["regressions"] = std::move(names);
  }
  return j;
}

bool is_run_id(const std::string& text) {
  return !text.empty() && text.size() < 19 &&
         text.find_first_not_of("0123456789") == std::string::npos;
}

// A path that exists is a file; otherwise digits name a stored run.
class RunSource {
 public:
  explicit RunSource(const DbOptions& db) : db_(db) {}

  std::vector<reports::BenchmarkSamples> load(const std::string& spec, std::string* label) {
    std::error_code ec;
    if (!std::filesystem::exists(spec, ec) && is_run_id(spec)) {
      const int64_t id = std::stoll(spec);
      *label = "run " + spec;
      return reports::benchmarks_of(store().load_document(id), store().document_source(id));
    }
    if (!std::filesystem::exists(spec, ec)) {
      throw UserError(spec + ": no such file (nor a stored run id)");
    }
    *label = spec;
    return reports::benchmarks_of(reports::read_run_json(spec), spec);
  }

 private:
  reports::ResultsStore& store() {
    if (!store_) {
      const std::string path = resolved_db_path(db_);
      if (path.empty()) throw UserError("run ids need a results database: --db PATH");
      store_ = std::make_unique<reports::ResultsStore>(reports::ResultsStore::open_read_only(path));
    }
    return *store_;
  }

  const DbOptions& db_;
  std::unique_ptr<reports::ResultsStore> store_;
};

int compare(const CompareCommandOptions& o) {
  if (!(o.compare.alpha > 0 && o.compare.alpha < 1)) {
    throw UserError("--alpha must be between 0 and 1 (exclusive)");
  }
  RunSource source(o.db);
  std::string old_label, new_label;
  const auto old_run = source.load(o.old_run, &old_label);
  const auto new_run = source.load(o.new_run, &new_label);
  const reports::Comparison c = reports::compare_runs(old_run, new_run, o.compare);
  if (c.rows.empty()) {
    throw UserError(old_label + " and " + new_label + " have no benchmark in common");
  }
  // A median of 0 has no ratio to anything: the measurement is broken, never "same".
  for (const reports::BenchmarkComparison& row : c.rows) {
    if (row.verdict != reports::Verdict::kInvalid) continue;
    const bool old_side = !(row.old_median_ns > 0);
    char median[32];
    std::snprintf(median, sizeof median, "%g", old_side ? row.old_median_ns : row.new_median_ns);
    throw UserError((old_side ? old_label : new_label) + ": '" + row.name + "' has a median of " +
                    median + " ns; a run that measured no time cannot be compared");
  }
  if (o.json) {
    std::vector<const reports::BenchmarkComparison*> regressed;
    if (o.fail_on_regression_pct) regressed = reports::regressions(c, *o.fail_on_regression_pct);
    const nlohmann::json j =
        comparison_json(c, old_label, new_label, o.fail_on_regression_pct ? &regressed : nullptr);
    std::printf("%s\n", j.dump(2).c_str());
    std::fflush(stdout);
    return regressed.empty() ? 0 : 1;
  }
  std::fputs(reports::format_comparison(c, old_label, new_label).c_str(), stdout);
  std::fflush(stdout);
  for (const std::string& line : reports::comparison_warnings(c)) {
    print_warning(reports::printable(line));
  }
  if (!o.fail_on_regression_pct) return 0;
  const auto regressed = reports::regressions(c, *o.fail_on_regression_pct);
  for (const reports::BenchmarkComparison* row : regressed) {
    std::fprintf(stderr,
                 "cuvil-bench: regression: %s is %.2f%% slower (p = %.4g), beyond "
                 "--fail-on-regression %g%%\n",
                 reports::printable(row->name).c_str(), row->change_pct, row->test.p_value,
                 *o.fail_on_regression_pct);
  }
  return regressed.empty() ? 0 : 1;
}

}  // namespace

Action add_compare_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "compare",
      "compare two runs benchmark by benchmark (Mann-Whitney U on the raw samples); exit 1 "
      "with --fail-on-regression when a benchmark got significantly slower");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench compare base.json new.json\n"
      "  cuvil-bench compare base.json new.json --fail-on-regression\n"
      "  cuvil-bench compare base.json new.json --json");
  auto o = std::make_shared<CompareCommandOptions>();
  cmd->add_option("old", o->old_run, "the baseline: a run.json file or a stored run id")
      ->required();
  cmd->add_option("new", o->new_run, "the candidate: a run.json file or a stored run id")
      ->required();
  add_db_option(*cmd, o->db, /*allow_disable=*/false);
  cmd->add_option("--alpha", o->compare.alpha, "significance level of the two-sided test");
  cmd->add_option("--min-change", o->compare.min_change_pct,
                  "a significant change below this many percent is still 'same'")
      ->check(finite_range(0.0, 1e6));
  // NaN would compare false with every change and so silently turn the gate off.
  cmd->add_option_function<double>(
         "--fail-on-regression", [o](const double& pct) { o->fail_on_regression_pct = pct; },
         "exit 1 if any benchmark is significantly slower by more than PCT percent")
      ->check(finite_range(0.0, 1e6));
  cmd->add_flag("--json", o->json,
                "print the comparison as JSON instead of the table (warnings included; exit "
                "status as without it)");
  return [o] { return compare(*o); };
}

}  // namespace cuvil::bench::cli
