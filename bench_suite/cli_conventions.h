// The conventions cuvil's command-line programs share (cuvil-bench, cuvil-tune-gen): --version,
// one-line "PROGRAM: error: ..." messages with exit status 2 for CLI11's own parse errors, and a
// "did you mean" for a mistyped subcommand.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace cuvil::bench {

// Exit status of bad input (the usage errors of every cuvil program).
inline constexpr int kUsageErrorStatus = 2;

// Adds --version to `app`: prints version_line(program) (bench_suite/version.h) and exits 0.
void add_version_flag(CLI::App& app, const std::string& program);

// The name in `names` closest to `typed`: a unique name it is a prefix of, else the nearest by
// edit distance when that distance is at most a third of the typed length (and at least 1, at
// most 3). nullopt when none is close.
std::optional<std::string> closest_name(const std::string& typed,
                                        const std::vector<std::string>& names);

// Before parsing: the first command-line word that should name a subcommand of `app` (or of a
// subcommand it names, down the tree) and names none, as the one-line message "unknown command
// 'runn' (did you mean 'run'?)" (or listing the commands). nullopt when every such word is
// known, or when an option comes first (CLI11 then reports what is wrong).
std::optional<std::string> unknown_subcommand(CLI::App& app, int argc, const char* const* argv);

// After every option is added: an option whose captured default is an empty list shows none
// (CLI11 would print "=[]"), in `app` and all its subcommands.
void tidy_defaults(CLI::App& app);

// Handles what CLI11's parse threw: --help and --version print and return 0; an error prints
// "PROGRAM: error: MESSAGE (see PROGRAM [SUBCOMMAND] --help)" on one line to stderr and returns
// kUsageErrorStatus.
int handle_parse_error(CLI::App& app, const CLI::ParseError& e, const std::string& program);

}  // namespace cuvil::bench
