// cuvil-bench list: suites with their rungs, and the pass registry with every parameter.
#include <cstdio>

#include "bench_suite/cli/commands.h"
#include "bench_suite/suites.h"
#include "passes/registry.h"

namespace cuvil::bench::cli {

namespace {

void print_suites() {
  std::printf("Suites (rungs light to heavy; * = in the default CPU ladder)\n");
  for (const Suite& suite : suites()) {
    std::printf("  %-10s %s\n", suite.name.c_str(), suite.summary.c_str());
    const Ladder ladder = load_suite_ladder(suite);
    for (const Rung& rung : ladder.rungs) {
      std::string params;
      for (const auto& [k, v] : rung.params) params += " " + k + "=" + std::to_string(v);
      std::printf("    %c %-22s%s\n", rung.is_default ? '*' : ' ', rung.name.c_str(),
                  params.c_str());
    }
  }
}

void print_passes() {
  std::printf("\nPasses (registry order is the default pipeline order)\n");
  for (const auto& pass : passes::pass_registry()) {
    std::printf("  %-18s %s\n", std::string(pass->name()).c_str(),
                std::string(pass->summary()).c_str());
    for (const passes::ParamSpec& p : pass->params()) {
      std::printf("      %-20s %-6s default %-14s %s\n", p.name.c_str(),
                  std::string(passes::to_string(p.type)).c_str(),
                  passes::format_value(p.default_value).c_str(), passes::describe_range(p).c_str());
      if (!p.help.empty()) std::printf("      %-20s %s\n", "", p.help.c_str());
    }
  }
}

}  // namespace

Action add_list_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("list", "suites, rungs, passes and their parameters");
  auto what = std::make_shared<std::string>("all");
  cmd->add_option("what", *what, "all | suites | passes")
      ->check(CLI::IsMember({"all", "suites", "passes"}));
  return [what] {
    if (*what != "passes") print_suites();
    if (*what != "suites") print_passes();
    return 0;
  };
}

}  // namespace cuvil::bench::cli
