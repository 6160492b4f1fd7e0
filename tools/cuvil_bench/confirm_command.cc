// cuvil-bench confirm --old A1,A2,... --new B1,B2,...: is a suspected regression real? The runs
// are rounds measured in alternation (A B A B ...); reports/confirmation.h decides per benchmark.
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <sstream>

#include "base/error.h"
#include "reports/confirmation.h"
#include "reports/printable.h"
#include "reports/run_document.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

struct ConfirmCommandOptions {
  std::string old_runs, new_runs;
  reports::ConfirmationOptions confirm;
};

// The rounds of one side: each benchmark's samples, one vector per run file.
std::map<std::string, std::vector<std::vector<double>>> load_rounds(const std::string& list,
                                                                    const std::string& flag) {
  std::vector<std::string> paths;
  std::stringstream in(list);
  std::string path;
  while (std::getline(in, path, ',')) {
    if (path.empty()) throw UserError(flag + ": an empty file name in '" + list + "'");
    paths.push_back(path);
  }
  std::map<std::string, std::vector<std::vector<double>>> rounds;
  for (const std::string& p : paths) {
    for (reports::BenchmarkSamples& b : reports::benchmarks_of(reports::read_run_json(p), p)) {
      rounds[b.name].push_back(std::move(b.real_ns));
    }
  }
  const size_t files = paths.size();
  if (files == 0) throw UserError(flag + ": no run files given");
  return rounds;
}

int confirm(const ConfirmCommandOptions& o) {
  const auto old_side = load_rounds(o.old_runs, "--old");
  const auto new_side = load_rounds(o.new_runs, "--new");
  std::printf("%-28s %9s %9s %8s %8s %6s  %s\n", "benchmark", "change", "p", "old sprd", "new sprd",
              "pairs", "verdict");
  size_t confirmed = 0, common = 0;
  for (const auto& [name, old_rounds] : old_side) {
    const auto it = new_side.find(name);
    if (it == new_side.end()) continue;
    ++common;
    const reports::Confirmation c = reports::confirm_regression(old_rounds, it->second, o.confirm);
    confirmed += c.verdict == reports::ConfirmationVerdict::kConfirmed;
    std::printf("%-28s %+8.2f%% %9.3g %7.1f%% %7.1f%% %2zu/%-3zu  %s: %s\n",
                reports::printable(name).c_str(), c.change_pct, c.p_value, c.old_spread_pct,
                c.new_spread_pct, c.pairs_slower, c.pairs,
                reports::confirmation_verdict_name(c.verdict), c.reason.c_str());
  }
  if (common == 0) throw UserError("--old and --new have no benchmark in common");
  std::printf("%zu confirmed regression(s) of %zu benchmark(s) (minimum effect %.1f%%, alpha %g)\n",
              confirmed, common, o.confirm.min_effect_pct, o.confirm.alpha);
  return confirmed ? 1 : 0;
}

}  // namespace

Action add_confirm_command(CLI::App& app) {
  auto o = std::make_shared<ConfirmCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "confirm",
      "Confirm a suspected regression from runs measured in alternation (old, new, old, new, "
      "...): exit 1 only when the new side is significantly slower and its rounds rank above "
      "the old side's (one-sided exact rank test of the round medians)");
  cmd->add_option("--old", o->old_runs, "run.json files of the old side, comma-separated")
      ->required();
  cmd->add_option("--new", o->new_runs, "run.json files of the new side, in the same order")
      ->required();
  cmd->add_option("--min-effect", o->confirm.min_effect_pct,
                  "a slowdown below this many percent is not a regression")
      ->check(finite_range(0.0, 1e6))
      ->capture_default_str();
  cmd->add_option("--alpha", o->confirm.alpha,
                  "significance level of the two-sided test on the pooled samples")
      ->check(finite_range(1e-9, 0.5))
      ->capture_default_str();
  return [o] { return confirm(*o); };
}

}  // namespace cuvil::bench::cli
