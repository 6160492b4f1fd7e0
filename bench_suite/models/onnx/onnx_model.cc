#include "bench_suite/models/onnx/onnx_model.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "base/error.h"
#include "bench_suite/models/onnx/function_inliner.h"
#include "bench_suite/models/onnx/host_tensor.h"

namespace cuvil::bench::onnx_import {

void for_each_node(const onnx::GraphProto& graph,
                   const std::function<void(const onnx::NodeProto&)>& visit) {
  for (const auto& node : graph.node()) {
    visit(node);
    for (const auto& a : node.attribute()) {
      if (a.has_g()) for_each_node(a.g(), visit);
      for (const auto& sub : a.graphs()) for_each_node(sub, visit);
    }
  }
}

OnnxModel load_onnx_model(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw UserError(path + ": is a directory, not an ONNX model file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path + ": cannot open ONNX model");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_onnx_model(buffer.str(), path);
}

OnnxModel parse_onnx_model(const std::string& bytes, const std::string& path) {
  if (bytes.empty()) throw UserError(path + ": empty file, not an ONNX model");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
    throw UserError(path + ": " + std::to_string(bytes.size()) +
                    " bytes: a protobuf holds at most 2 GiB; save the weights as external data "
                    "(torch.onnx.export does so for large models)");
  }
  auto proto = std::make_shared<onnx::ModelProto>();
  if (!proto->ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    throw UserError(path +
                    ": not an ONNX model (the protobuf does not parse: truncated or another "
                    "format)");
  }
  if (!proto->has_graph() || proto->graph().node_size() == 0) {
    throw UserError(path + ": not an ONNX model (no graph, or a graph without nodes)");
  }
  OnnxModel m;
  m.path = path;
  m.dir = std::filesystem::path(path).parent_path().string();
  if (m.dir.empty()) m.dir = ".";
  m.producer = proto->producer_name();
  if (!proto->producer_version().empty()) m.producer += " " + proto->producer_version();

  for (const auto& op : proto->opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") m.opset = op.version();
  }
  if (m.opset == 0 && proto->opset_import_size() == 0) m.opset = 1;  // IR v2: no imports means 1
  if (m.opset < kMinOpset || m.opset > kMaxOpset) {
    throw UserError(path + ": opset " + std::to_string(m.opset) + " is not supported (cuvil maps " +
                    "opsets " + std::to_string(kMinOpset) + ".." + std::to_string(kMaxOpset) +
                    "; export with torch.onnx.export(..., opset_version=17))");
  }
  inline_functions(*proto, path);
  const onnx::GraphProto& g = proto->graph();
  // Nodes of other domains (custom ops, calls of functions the model does not define) are listed
  // together.
  std::set<std::string> foreign;
  for_each_node(g, [&](const onnx::NodeProto& node) {
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      foreign.insert(node.domain() + "::" + node.op_type());
  });
  if (!foreign.empty()) {
    std::string list;
    for (const std::string& f : foreign) list += (list.empty() ? "" : ", ") + f;
    throw UserError(path +
                    ": operators outside the default ONNX domain are not supported: " + list);
  }

  std::set<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.insert(t.name());
  for (const auto& vi : g.input()) {
    if (initializers.count(vi.name())) continue;  // IR < 4 lists weights as inputs too
    OnnxInput input;
    input.name = vi.name();
    if (!vi.type().has_tensor_type()) {
      throw UserError(path + ": input '" + vi.name() +
                      "' is not a tensor (sequences and maps are not supported)");
    }
    const auto& tt = vi.type().tensor_type();
    input.elem_type = tt.elem_type();
    if (!tt.has_shape()) {
      throw UserError(path + ": input '" + vi.name() +
                      "' has no declared shape (its rank is unknown); bind it with --input " +
                      vi.name() + ":D0xD1x...");
    }
    for (const auto& d : tt.shape().dim()) {
      input.dims.push_back(d.has_dim_value() && d.dim_value() > 0 ? d.dim_value() : -1);
      input.dim_names.push_back(d.has_dim_param() ? d.dim_param() : "");
    }
    m.inputs.push_back(std::move(input));
  }
  for (const auto& vi : g.output()) m.outputs.push_back(vi.name());
  if (m.outputs.empty()) throw UserError(path + ": the graph has no outputs");
  m.proto = std::move(proto);
  return m;
}

}  // namespace cuvil::bench::onnx_import
