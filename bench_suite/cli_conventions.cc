#include "bench_suite/cli_conventions.h"

#include <algorithm>
#include <cstdio>

#include "bench_suite/version.h"
#include "passes/ir/edit_distance.h"

namespace cuvil::bench {

namespace {

std::vector<std::string> subcommand_names(CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

// One line: CLI11's messages may hold newlines.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      out += "; ";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

void add_version_flag(CLI::App& app, const std::string& program) {
  app.set_version_flag("--version", version_line(program),
                       "print the version and the git commit of this build, and exit");
}

std::optional<std::string> closest_name(const std::string& typed,
                                        const std::vector<std::string>& names) {
  std::vector<std::string> prefixed;
  for (const std::string& n : names) {
    if (!typed.empty() && n.rfind(typed, 0) == 0) prefixed.push_back(n);
  }
  if (prefixed.size() == 1) return prefixed[0];
  const size_t allowed = std::clamp<size_t>(typed.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t best_distance = allowed + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(typed, n);
    if (d < best_distance) {
      best = n;
      best_distance = d;
    }
  }
  return best;
}

std::optional<std::string> unknown_subcommand(CLI::App& app, int argc, const char* const* argv) {
  CLI::App* level = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word.empty() || word[0] == '-') return std::nullopt;  // options: CLI11's to judge
    const std::vector<std::string> names = subcommand_names(*level);
    if (names.empty()) return std::nullopt;  // a command without subcommands: its arguments
    if (std::find(names.begin(), names.end(), word) != names.end()) {
      level = level->get_subcommand(word);
      continue;
    }
    // A word where a subcommand goes, naming none.
    const std::string where = level == &app ? "command" : level->get_name() + " command";
    std::string message = "unknown " + where + " '" + word + "'";
    if (const auto near = closest_name(word, names)) {
      message += " (did you mean '" + *near + "'?)";
    } else {
      std::string list;
      for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
      message += " (commands: " + list + ")";
    }
    return message;
  }
  return std::nullopt;
}

void tidy_defaults(CLI::App& app) {
  std::vector<CLI::App*> pending{&app};
  while (!pending.empty()) {
    CLI::App* level = pending.back();
    pending.pop_back();
    for (CLI::Option* opt : level->get_options()) {
      if (opt->get_default_str() == "[]") opt->default_str("");
    }
    for (CLI::App* sub : level->get_subcommands([](CLI::App*) { return true; })) {
      pending.push_back(sub);
    }
  }
}

int handle_parse_error(CLI::App& app, const CLI::ParseError& e, const std::string& program) {
  if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) {
    app.exit(e);  // --help, --help-all, --version: their text on stdout
    return 0;
  }
  // The deepest subcommand the words named, for the --help hint.
  std::string path = program;
  for (const CLI::App* level = &app;;) {
    const std::vector<CLI::App*> chosen = level->get_subcommands();
    if (chosen.empty()) break;
    level = chosen.front();
    path += " " + level->get_name();
  }
  std::fprintf(stderr, "%s: error: %s (see '%s --help')\n", program.c_str(),
               one_line(e.what()).c_str(), path.c_str());
  return kUsageErrorStatus;
}

}  // namespace cuvil::bench
