// An ONNX model file as read from disk: the parsed ModelProto, its default-domain opset, and the
// graph's real inputs (initializers excluded) with their declared element types and dimensions.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
class GraphProto;
class NodeProto;
}  // namespace onnx

namespace cuvil::bench::onnx_import {

// Opsets the importer maps (what torch.onnx.export writes from PyTorch 1.x and 2.x).
inline constexpr int64_t kMinOpset = 7;
inline constexpr int64_t kMaxOpset = 21;

struct OnnxInput {
  std::string name;
  int32_t elem_type = 0;               // onnx::TensorProto::DataType
  std::vector<int64_t> dims;           // -1: dynamic
  std::vector<std::string> dim_names;  // dim_param, "" when static or unnamed
};

struct OnnxModel {
  std::string path;
  std::string dir;  // external data files are relative to it
  std::shared_ptr<const onnx::ModelProto> proto;
  int64_t opset = 0;
  std::vector<OnnxInput> inputs;
  std::vector<std::string> outputs;
  std::string producer;  // producer_name and version, e.g. "pytorch 1.13.1"
};

// Reads and checks the file: a ModelProto with a graph, a default-domain opset in
// [kMinOpset, kMaxOpset], only default-domain nodes once model-local functions are inlined
// (function_inliner.h), inputs of known element type. Problems are a
// UserError "PATH: message".
OnnxModel load_onnx_model(const std::string& path);
// The same checks on a file's bytes already read: `path` names it in messages, and external data
// files are looked up beside it.
OnnxModel parse_onnx_model(const std::string& bytes, const std::string& path);

// Every node of `graph` and of the subgraphs its nodes hold (Loop bodies, If branches), outer
// node before its subgraphs' nodes.
void for_each_node(const onnx::GraphProto& graph,
                   const std::function<void(const onnx::NodeProto&)>& visit);

}  // namespace cuvil::bench::onnx_import
