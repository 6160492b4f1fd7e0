// Model-local functions (ModelProto.functions: what torch.onnx.export writes with
// export_modules_as_functions, the dynamo exporter's torchlib functions) inlined into the graph,
// so that the importer sees only ONNX operators.
#pragma once

#include <string>

namespace onnx {
class ModelProto;
}  // namespace onnx

namespace cuvil::bench::onnx_import {

// Replaces every call of a model-local function, in the graph and in its subgraphs, by the
// function's nodes: formal inputs and outputs renamed to the call's values, the body's other
// values and nodes prefixed with a name unique to the call, attribute references (ref_attr_name)
// bound to the call's attributes or the function's defaults (omitted where neither gives one).
// Calls inside functions are inlined in turn; a function that calls itself (at any depth) is a
// UserError naming `path`. The model's function list is then empty.
void inline_functions(onnx::ModelProto& model, const std::string& path);

}  // namespace cuvil::bench::onnx_import
