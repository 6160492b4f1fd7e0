#include "bench_suite/torch_baseline.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.h"
#include "bench_suite/npy.h"

namespace cuvil::bench {

std::string torch_worker_path() {
  const char* dir = std::getenv("CUVIL_BENCH_PYTHON_DIR");
  return std::string(dir && *dir ? dir : CUVIL_SOURCE_DIR "/bench_suite/python") +
         "/torch_worker.py";
}

TorchBaseline::ScratchDir::ScratchDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "cuvil-baseline-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) {
    throw UserError("cannot create a scratch directory for the baseline's arrays: " +
                    std::string(std::strerror(errno)));
  }
  path = tmpl;
}

TorchBaseline::ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

std::vector<double> relative_errors_vs_cuvil(const std::vector<ir::Tensor>& theirs,
                                             const std::vector<ir::Tensor>& ours,
                                             const std::string& variant) {
  if (theirs.size() != ours.size()) {
    throw UserError(variant + " returned " + std::to_string(theirs.size()) + " output(s), cuvil " +
                    std::to_string(ours.size()));
  }
  std::vector<double> errors;
  for (size_t i = 0; i < ours.size(); ++i) {
    if (theirs[i].numel() != ours[i].numel()) {
      throw UserError(variant + " output " + std::to_string(i) + " has " +
                      std::to_string(theirs[i].numel()) + " elements, cuvil's " +
                      std::to_string(ours[i].numel()) + " (is it the same model?)");
    }
    ir::Tensor t = theirs[i];
    t.shape = ours[i].shape;
    errors.push_back(ir::max_relative_error(t, ours[i]));
  }
  return errors;
}

double max_relative_error_vs_cuvil(const std::vector<ir::Tensor>& theirs,
                                   const std::vector<ir::Tensor>& ours,
                                   const std::string& variant) {
  double worst = 0;
  for (double e : relative_errors_vs_cuvil(theirs, ours, variant)) worst = std::max(worst, e);
  return worst;
}

bool has_torch_reference(const std::string& suite) {
  return suite == "resnet50" || suite == "llama3-8b" || suite == "sdxl";
}

bool has_scaled_down_torch_reference(const std::string& suite) {
  return suite == "llama3-8b" || suite == "sdxl";
}

TorchBaseline::TorchBaseline(const TorchBaselineSpec& spec, const std::vector<ir::Tensor>& inputs,
                             const ir::Graph* graph, const std::map<std::string, int64_t>& rung) {
  PythonChildOptions o;
  o.what = "the PyTorch baseline worker";
  o.python = spec.python;
  o.script = torch_worker_path();
  o.reply_timeout_s = 900;  // loading, tracing and freezing a large model
  child_ = std::make_unique<PythonChild>(o);
  nlohmann::json files = nlohmann::json::array();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string path =
        (std::filesystem::path(scratch_.path) / ("input" + std::to_string(i) + ".npy")).string();
    write_npy(path, inputs[i].shape, inputs[i].data);
    files.push_back({{"path", path}, {"integer", inputs[i].dtype == ir::DType::i32}});
  }
  nlohmann::json request = {{"op", "load"},        {"module", spec.module_path},
                            {"inputs", files},     {"threads", spec.threads},
                            {"dtype", spec.dtype}, {"reserve_bytes", spec.reserve_bytes}};
  if (!spec.builtin.empty()) {
    CUVIL_CHECK(graph != nullptr, "a built-in reference needs the graph's weights");
    const std::string dir = (std::filesystem::path(scratch_.path) / "weights").string();
    std::filesystem::create_directories(dir);
    // One weight in memory at a time: a lazily made constant is made in a copy of the graph,
    // written and dropped, so the caller's graph holds no more than it did.
    ir::Graph weights = *graph;
    for (ir::ValueId id : weights.constants()) {
      const ir::Value& v = weights.value(id);
      write_npy((std::filesystem::path(dir) / (v.name + ".npy")).string(), v.shape,
                weights.constant_data(id));
      weights.release_constant_data(id);
    }
    request["builtin"] = spec.builtin;
    request["weights_dir"] = dir;
    request["rung"] = rung;
    request["scaled_down"] = spec.scaled_down;
  }
  const nlohmann::json reply = child_->call_ok(request);
  variants_ = reply.value("variants", std::vector<std::string>{});
  unavailable_ = reply.value("unavailable", std::map<std::string, std::string>{});
  torch_version_ = reply.value("torch", std::string());
  blas_ = reply.value("blas", std::string());
  threads_ = reply.value("threads", spec.threads);
  if (variants_.empty())
    throw UserError("the PyTorch baseline worker made no variant of " + spec.module_path);
}

pid_t TorchBaseline::worker_pid() const {
  return child_->pid();
}

Sampler TorchBaseline::sampler(const std::string& variant) {
  return [this, variant] {
    const nlohmann::json r = child_->call_ok({{"op", "run"}, {"variant", variant}, {"count", 1}});
    return Sample{r.at("real_ns").at(0).get<double>(), r.at("cpu_ns").at(0).get<double>()};
  };
}

std::vector<ir::Tensor> TorchBaseline::outputs(const std::string& variant) {
  const nlohmann::json r =
      child_->call_ok({{"op", "outputs"}, {"variant", variant}, {"dir", scratch_.path}});
  std::vector<ir::Tensor> out;
  for (const auto& f : r.at("files")) {
    const NpyArray a = read_npy(f.get<std::string>());
    out.emplace_back(a.shape, a.data);
  }
  return out;
}

}  // namespace cuvil::bench
