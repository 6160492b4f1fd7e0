// cuvil-tune-gen: ranks pass parameters by SHAP importance and writes the tuned .cuvilpass.
// Not implemented yet: it needs the tuner (study storage, trial log, importance) first.
#include <CLI/CLI.hpp>
#include <cstdio>

int main(int argc, char** argv) {
  CLI::App app{
      "cuvil-tune-gen: read a tuning study, rank pass parameters by SHAP importance and write the "
      "tuned pipeline as a .cuvilpass file.\n"
      "NOT IMPLEMENTED YET: this build only prints its usage. The tuner (cuvil-bench tune) that "
      "produces studies comes first."};
  std::string study, suite, out;
  app.add_option("--study", study, "Optuna study storage (SQLite file)");
  app.add_option("--suite", suite, "suite the study tuned");
  app.add_option("-o,--output", out, "the .cuvilpass file to write");
  CLI11_PARSE(app, argc, argv);
  std::fprintf(stderr,
               "cuvil-tune-gen: not implemented yet (needs the tuner's study and trial log); see "
               "--help\n");
  return 2;
}
