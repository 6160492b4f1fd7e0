// cuvil-bench infer: run the compiled pipeline once on the user's arrays (.npy) and write every
// output as <out-dir>/<output name>.npy. For a model the inputs' shapes bind its dynamic axes.
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "base/error.h"
#include "bench_suite/npy.h"
#include "passes/cuvilpass.h"
#include "passes/pipeline.h"
#include "runtime/executor.h"
#include "tools/cuvil_bench/commands.h"

namespace cuvil::bench::cli {

namespace {

struct InferOptions {
  PipelineOptions pipeline;
  std::string rung;
  std::string out_dir;
};

// A file name for an output: the ONNX name with path separators and odd characters replaced.
std::string file_name_for(const std::string& name) {
  std::string out;
  for (char ch : name) {
    const bool plain =
        std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
    out += plain ? ch : '_';
  }
  if (out.empty() || out == "." || out == "..") out = "output";
  return out;
}

bool is_float32(const std::string& dtype) {
  return dtype == "<f4" || dtype == "=f4" || dtype == "|f4";
}

int run_infer(InferOptions o) {
  if (o.out_dir.empty()) throw UserError("--out-dir is required");
  // --input NAME=FILE.npy gives an array; NAME:SHAPE (models) only binds a shape.
  std::map<std::string, NpyArray> arrays;
  std::vector<std::string> shape_bindings;
  for (const std::string& text : o.pipeline.workload.inputs) {
    const size_t eq = text.find('=');
    if (eq == std::string::npos) {
      shape_bindings.push_back(text);
      continue;
    }
    const std::string name = text.substr(0, eq);
    if (name.empty()) throw UserError("--input " + text + ": expected NAME=FILE.npy");
    if (arrays.count(name)) throw UserError("--input " + name + ": given twice");
    arrays[name] = read_npy(text.substr(eq + 1));
  }
  WorkloadSpec spec = o.pipeline.workload;
  spec.inputs = shape_bindings;
  if (!spec.model.empty()) {
    for (const auto& [name, a] : arrays) {
      std::string dims;
      for (int64_t d : a.shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
      if (!a.shape.empty()) spec.inputs.push_back(name + ":" + dims);
    }
  }
  const Workload w = resolve_workload(spec);
  std::vector<Rung> rungs = select_rungs(w.ladder, o.rung);
  if (rungs.empty()) rungs = w.ladder.rungs;
  const Rung& rung = rungs.front();
  ir::Graph graph = w.suite.build(rung, /*tiny=*/false);

  std::vector<ir::Tensor> inputs;
  std::set<std::string> used;
  std::string missing;
  for (ir::ValueId id : graph.inputs()) {
    const ir::Value& v = graph.value(id);
    auto it = arrays.find(v.name);
    if (it == arrays.end()) {
      missing += (missing.empty() ? "" : ", ") + v.name + " " + ir::to_string(v.shape);
      continue;
    }
    const NpyArray& a = it->second;
    const bool want_int = v.dtype == ir::DType::i32;
    if (want_int != a.is_integer || (!want_int && !is_float32(a.dtype))) {
      throw UserError("--input " + v.name + ": the model expects " +
                      (want_int ? std::string("integer ids") : std::string("float32")) +
                      ", the .npy holds " + a.dtype +
                      (want_int ? "" : " (convert with x.astype(numpy.float32))"));
    }
    if (a.shape != v.shape) {
      throw UserError("--input " + v.name + ": shape " + ir::to_string(a.shape) + " given, " +
                      w.suite.name + "/" + rung.name + " expects " + ir::to_string(v.shape));
    }
    inputs.emplace_back(v.shape, a.data, v.dtype);
    used.insert(v.name);
  }
  if (!missing.empty())
    throw UserError("--input: no array for " + missing + " (give NAME=FILE.npy)");
  for (const auto& [name, a] : arrays) {
    if (!used.count(name))
      throw UserError("--input " + name + ": the graph has no input of that name");
  }
  std::vector<std::string> names;
  std::set<std::string> files;
  for (ir::ValueId id : graph.outputs()) {
    names.push_back(file_name_for(graph.value(id).name));
    if (!files.insert(names.back()).second) names.back() += "_" + std::to_string(files.size());
  }

  const std::string config_path = config_path_for(o.pipeline, w.suite);
  const passes::PipelineConfig config = load_config_for(o.pipeline, w.suite, config_path);
  passes::Compiled compiled =
      passes::compile(std::move(graph), config, resolved_threads(o.pipeline));
  runtime::Executor executor(std::move(compiled.plan));
  const std::vector<ir::Tensor> outputs = executor.run(inputs);

  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (!std::filesystem::is_directory(o.out_dir)) {
    throw UserError("--out-dir " + o.out_dir + ": cannot create the directory" +
                    (ec ? ": " + ec.message() : std::string()));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string path = (std::filesystem::path(o.out_dir) / (names[i] + ".npy")).string();
    write_npy(path, outputs[i].shape, outputs[i].data);
    std::printf("%s %s -> %s\n", names[i].c_str(), ir::to_string(outputs[i].shape).c_str(),
                path.c_str());
  }
  return 0;
}

}  // namespace

Action add_infer_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "infer",
      "run the compiled pipeline once on .npy inputs and write each output as OUT_DIR/<name>.npy");
  auto o = std::make_shared<InferOptions>();
  add_pipeline_options(*cmd, o->pipeline);
  // --input also takes NAME=FILE.npy here (for a suite as well as a model).
  cmd->get_option("--input")->description(
      "an input array, NAME=FILE.npy (repeatable; every graph input needs one), or for --model a "
      "shape binding NAME:1x3x224x224");
  cmd->get_option("--input")->remove_needs(cmd->get_option("--model"));
  cmd->add_option("--rung", o->rung, "the suite's rung (default: its lightest default rung)");
  cmd->add_option("-o,--out-dir", o->out_dir, "directory for the outputs")->required();
  cmd->footer(
      "Examples:\n"
      "  cuvil-bench infer --suite resnet50 --rung b1 --input image=image.npy -o outputs/\n"
      "  cuvil-bench infer --model model.onnx --input x=image.npy -o outputs/");
  return [o] { return run_infer(*o); };
}

}  // namespace cuvil::bench::cli
