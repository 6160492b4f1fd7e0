#include "bench_suite/workload.h"

#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "bench_suite/models/onnx/importer.h"
#include "bench_suite/sha256.h"

namespace cuvil::bench {

namespace {

ir::Shape parse_dims(const std::string& text, const std::string& what) {
  ir::Shape shape;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t x = std::min(text.find('x', start), text.size());
    const std::string part = text.substr(start, x - start);
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (part.empty() || used != part.size() || v < 1) {
      throw UserError(what + ": '" + text + "' is not a shape like 1x3x224x224 (dimensions >= 1)");
    }
    shape.push_back(v);
    start = x + 1;
  }
  return shape;
}

std::string stem_of(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

// The model's named dynamic dimensions: possible ladder keys besides "batch".
std::vector<std::string> dim_keys(const onnx_import::OnnxModel& m) {
  std::set<std::string> names = {"batch"};
  for (const auto& in : m.inputs) {
    for (size_t d = 0; d < in.dims.size(); ++d) {
      if (in.dims[d] < 0 && !in.dim_names[d].empty()) names.insert(in.dim_names[d]);
    }
  }
  return {names.begin(), names.end()};
}

onnx_import::InputBinding binding_for(const std::map<std::string, ir::Shape>& shapes,
                                      const Rung& rung) {
  onnx_import::InputBinding b;
  b.shapes = shapes;
  for (const auto& [key, value] : rung.params) b.dims[key] = value;
  return b;
}

Workload model_workload(const WorkloadSpec& spec) {
  auto model = std::make_shared<onnx_import::OnnxModel>(onnx_import::load_onnx_model(spec.model));
  if (const std::string unsupported = onnx_import::unsupported_operators(*model);
      !unsupported.empty()) {
    throw UserError(unsupported);
  }
  std::map<std::string, ir::Shape> shapes;
  for (const std::string& text : spec.inputs) {
    auto [name, shape] = parse_input_binding(text);
    if (!shapes.emplace(name, shape).second) throw UserError("--input " + name + ": given twice");
  }

  Workload w;
  w.suite.name = stem_of(spec.model);
  w.suite.summary = "ONNX model " + spec.model + " (" +
                    (model->producer.empty() ? "" : model->producer + ", ") + "opset " +
                    std::to_string(model->opset) + ")";
  w.suite.rung_keys = dim_keys(*model);
  w.suite.config_name = kModelConfigName;
  // Dynamic int8's bound holds for ResNet-50 only (transformer blocks measure 5e-2..2e-1), and an
  // imported model may be either: random configurations leave it out, as the model space does.
  w.suite.random_config_exclusions = {"int8"};
  w.suite.model_path = std::filesystem::absolute(spec.model).string();
  w.suite.model_sha256 = sha256_file(spec.model);
  // A rung binds the model's dynamic axes; the scaled-down graph verify checks by default is the
  // same model at batch 1 (an imported model has no smaller topology).
  w.suite.build = [model, shapes](const Rung& rung, bool tiny) {
    Rung r = rung;
    if (tiny && r.params.count("batch")) r.params["batch"] = 1;
    return onnx_import::import_onnx(*model, binding_for(shapes, r));
  };

  w.ladder.suite = w.suite.name;
  if (!spec.ladder.empty()) {
    if (!spec.batch.empty()) throw UserError("--batch and --ladder: give one of them");
    w.ladder = load_ladder(spec.ladder, w.suite.rung_keys);
  } else if (!spec.batch.empty()) {
    w.ladder.source = "--batch";
    for (int64_t b : spec.batch) {
      if (b < 1) throw UserError("--batch: sizes must be >= 1, got " + std::to_string(b));
      Rung r;
      r.name = "b" + std::to_string(b);
      r.params["batch"] = b;
      w.ladder.rungs.push_back(r);
    }
  } else {
    // One rung: the shapes the model declares (and --input binds), named by their batch.
    const std::vector<ir::Shape> bound =
        onnx_import::bind_input_shapes(*model, binding_for(shapes, Rung{}));
    Rung r;
    r.name =
        bound.empty() || bound.front().empty() ? "default" : "b" + std::to_string(bound.front()[0]);
    w.ladder.source = spec.model;
    w.ladder.rungs.push_back(r);
  }
  // Every rung binds every axis: checked now, before anything runs.
  for (const Rung& r : w.ladder.rungs)
    onnx_import::bind_input_shapes(*model, binding_for(shapes, r));
  return w;
}

}  // namespace

std::pair<std::string, ir::Shape> parse_input_binding(const std::string& text) {
  const size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    throw UserError("--input: '" + text + "' is not NAME:SHAPE (e.g. input:1x3x224x224)");
  }
  return {text.substr(0, colon),
          parse_dims(text.substr(colon + 1), "--input " + text.substr(0, colon))};
}

Workload resolve_workload(const WorkloadSpec& spec) {
  if (spec.suite.empty() == spec.model.empty()) {
    throw UserError(spec.suite.empty() ? "give --suite S or --model FILE.onnx"
                                       : "--suite and --model: give one of them");
  }
  if (!spec.model.empty()) return model_workload(spec);
  if (!spec.inputs.empty() || !spec.batch.empty() || !spec.ladder.empty()) {
    throw UserError("--input, --batch and --ladder apply to --model only");
  }
  Workload w;
  w.suite = find_suite(spec.suite);
  w.ladder = load_suite_ladder(w.suite);
  return w;
}

}  // namespace cuvil::bench
