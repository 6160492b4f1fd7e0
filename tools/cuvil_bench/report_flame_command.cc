// `cuvil-bench report flame RUN.json -o OUT`: flame graphs of a run, from its per-op records
// (`run --probes ops`) or from native samples (`--folded`, or the run's own samples file), as an
// interactive SVG, folded stacks, speedscope JSON and a Chrome trace for Perfetto; `--diff BASE`
// colours what grew and shrank against another run.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "base/error.h"
#include "reports/flame/chrome_trace.h"
#include "reports/flame/flame_svg.h"
#include "reports/flame/folded.h"
#include "reports/flame/op_records.h"
#include "reports/flame/speedscope.h"
#include "reports/run_document.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

namespace fs = std::filesystem;
namespace flame = reports::flame;

struct FlameCommandOptions {
  std::string run;
  std::string rung;
  std::string folded;
  std::string diff;
  std::string out;
  std::string format = "all";
  std::string title;
  int width = 1200;
};

// What a run (or a base run) contributes: its tree, and its per-op records when it has them.
struct FlameSource {
  flame::FrameTree tree;
  std::vector<flame::RungOps> rungs;  // empty when the tree came from samples
  std::string description;            // how the tree was made, for the subtitle
  std::string samples_file;           // where the tree came from when it is native samples
};

FlameSource source_of_run(const std::string& path, const std::string& rung,
                          const std::string& folded) {
  const nlohmann::json doc = reports::read_run_json(path);
  std::vector<flame::RungOps> rungs;
  if (flame::has_op_records(doc, path)) rungs = flame::read_op_records(doc, path, rung);
  if (!folded.empty()) {
    return {flame::read_folded_file(folded), std::move(rungs), "native samples from " + folded,
            folded};
  }
  if (!rungs.empty()) {
    size_t ops = 0;
    for (const auto& r : rungs) ops += r.records.size();
    return {flame::tree_from_ops(rungs), std::move(rungs),
            std::to_string(ops) + " ops, mean ns per iteration", ""};
  }
  if (const auto named = flame::samples_file_of(doc, path, rung)) {
    // Only ever inside the run's own folder: a run.json cannot make this read files elsewhere.
    const std::string file = flame::resolve_samples_file(*named, path);
    return {flame::read_folded_file(file), {}, "native samples from " + file, file};
  }
  flame::read_op_records(doc, path, rung);  // throws: no per-op records, run with --probes ops
  throw UserError(path + ": no per-op records");
}

FlameSource source_of_base(const std::string& path, const std::string& rung) {
  if (path.ends_with(".folded")) {
    return {flame::read_folded_file(path), {}, "native samples from " + path, path};
  }
  return source_of_run(path, rung, "");
}

std::string extension_of(const std::string& format) {
  if (format == "svg") return ".svg";
  if (format == "folded") return ".folded";
  if (format == "speedscope") return ".speedscope.json";
  return ".trace.json";
}

// OUT is a stem; a single format may also be given its full file name.
std::string output_path(const FlameCommandOptions& o, const std::string& format) {
  const std::string ext = extension_of(format);
  if (o.format != "all" && o.out.ends_with(ext)) return o.out;
  return o.out + ext;
}

void write_file(const std::string& path, const std::string& content) {
  const fs::path parent = fs::path(path).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw UserError(path + ": cannot write the output file");
  out << content;
  if (!out.flush()) throw UserError(path + ": write failed");
}

// Frame names from a folded file may hold bytes that are not UTF-8: JSON gets U+FFFD for them.
std::string json_text(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

// What the graph shows: the rungs of per-op records, or the file the samples came from.
std::string subject(const FlameSource& source) {
  if (!source.samples_file.empty()) return source.samples_file + " (native samples)";
  std::string names;
  for (const flame::RungOps& r : source.rungs) {
    if (names.size() > 60) return names + ", ...";
    names += (names.empty() ? "" : ", ") + r.name;
  }
  return names;
}

int report_flame(const FlameCommandOptions& o) {
  if (o.width < 100 || o.width > 100000) throw UserError("--width must be between 100 and 100000");
  FlameSource run = source_of_run(o.run, o.rung, o.folded);
  if (!(run.tree.total() > 0)) {
    throw UserError(o.run + ": nothing to draw (every op or sample weighs 0)");
  }
  std::string title = o.title;
  if (!o.diff.empty()) {
    const FlameSource base = source_of_base(o.diff, o.rung);
    if (base.tree.unit() != run.tree.unit()) {
      throw UserError("--diff " + o.diff + ": weighs " + base.tree.unit() + " but " + o.run +
                      " weighs " + run.tree.unit() + "; compare like with like");
    }
    if (!(base.tree.total() > 0)) throw UserError("--diff " + o.diff + ": nothing to compare with");
    // Sample counts grow with the sampling time: compare them as shares of each run.
    const bool samples = run.tree.unit() != "nanoseconds";
    const double scale = samples ? run.tree.total() / base.tree.total() : 1.0;
    if (!(std::isfinite(scale) && scale > 0)) {
      throw UserError("--diff " + o.diff + ": its total and " + o.run +
                      "'s are too far apart to compare as shares");
    }
    run.tree.annotate_with_base(base.tree, scale);
    if (samples) {
      std::printf("samples: base counts scaled by %.4g to the run's total (shares compared)\n",
                  scale);
    }
    if (title.empty()) title = "Differential flame graph: " + o.diff + " -> " + o.run;
  }
  if (title.empty()) title = "Flame graph: " + subject(run);

  const bool all = o.format == "all";
  std::vector<std::string> written;
  if (all || o.format == "svg") {
    flame::SvgOptions svg;
    svg.title = title;
    svg.subtitle = o.run + ": " + run.description + ", total " +
                   flame::format_weight(run.tree.total(), run.tree.unit());
    svg.width = o.width;
    const std::string path = output_path(o, "svg");
    write_file(path, flame::flame_svg(run.tree, svg));
    written.push_back(path + "  (open in a browser: hover, click to zoom, Search)");
  }
  if (all || o.format == "folded") {
    const std::string path = output_path(o, "folded");
    write_file(path, flame::to_folded(run.tree));
    written.push_back(path + "  (folded stacks: flamegraph.pl, speedscope, inferno)");
  }
  if (all || o.format == "speedscope") {
    const std::string path = output_path(o, "speedscope");
    write_file(path, json_text(flame::to_speedscope(run.tree, subject(run))));
    written.push_back(path + "  (open at https://www.speedscope.app)");
  }
  if (all || o.format == "trace") {
    if (run.rungs.empty()) {
      if (!all) {
        throw UserError(o.run +
                        ": a trace needs per-op records (cuvil.ops); run with `cuvil-bench run "
                        "--probes ops`");
      }
      std::fprintf(stderr, "cuvil-bench: note: no trace: %s has no per-op records\n",
                   o.run.c_str());
    } else {
      const std::string path = output_path(o, "trace");
      write_file(path, json_text(flame::to_chrome_trace(run.rungs, o.run)));
      written.push_back(path + "  (open at https://ui.perfetto.dev)");
    }
  }
  for (const std::string& line : written) std::printf("wrote %s\n", line.c_str());
  if (run.tree.differential() && run.tree.total_only_in_base() > 0) {
    std::printf("frames only in %s: %s\n", o.diff.c_str(),
                flame::format_weight(run.tree.total_only_in_base(), run.tree.unit()).c_str());
  }
  return 0;
}

}  // namespace

Action add_report_flame(CLI::App& report) {
  CLI::App* cmd = report.add_subcommand(
      "flame",
      "flame graphs of a run: per-op records (run --probes ops) or native samples, as an "
      "interactive SVG, folded stacks, speedscope JSON and a Chrome trace for Perfetto");
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench report flame run.json -o flame\n"
      "  cuvil-bench report flame run.json --format trace -o run.trace.json\n"
      "  cuvil-bench report flame new.json --diff base.json --rung b1 -o diff");
  auto o = std::make_shared<FlameCommandOptions>();
  cmd->add_option("run", o->run, "a run.json written by `cuvil-bench run --probes ops`")
      ->required();
  cmd->add_option("--rung", o->rung, "only this rung (e.g. b1 or resnet50/b1; default: all)");
  cmd->add_option("--folded", o->folded,
                  "draw these folded stacks (native samples) instead of the per-op records");
  cmd->add_option("--diff", o->diff,
                  "the base run (run.json or .folded): colour frames that grew red and shrank "
                  "blue; widths from RUN");
  cmd->add_option("-o,--out", o->out,
                  "output stem: writes OUT.svg, OUT.folded, OUT.speedscope.json, OUT.trace.json")
      ->required();
  cmd->add_option("--format", o->format, "svg | folded | speedscope | trace | all")
      ->check(CLI::IsMember({"svg", "folded", "speedscope", "trace", "all"}))
      ->capture_default_str();
  cmd->add_option("--title", o->title, "the SVG's title");
  cmd->add_option("--width", o->width, "the SVG's width in pixels")->capture_default_str();
  return [o] { return report_flame(*o); };
}

}  // namespace cuvil::bench::cli
