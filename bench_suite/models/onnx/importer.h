// The ONNX importer: an ONNX graph (opsets 7..21, as torch.onnx.export writes them) becomes a
// cuvil IR graph with the model's real weights. Input shapes are bound first; every value that
// depends only on constants and static shapes (the Shape -> Gather -> Concat -> Reshape chains
// exporters emit) is folded at import time, so the IR sees only tensors of fixed shape. Control
// flow is resolved the same way: loops with trip counts known at import are unrolled, Ifs with
// folded conditions become their branch, and ONNX sequences exist only while importing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/onnx_model.h"
#include "passes/ir/graph.h"

namespace cuvil::bench::onnx_import {

// How the model's dynamic axes get their sizes.
struct InputBinding {
  std::map<std::string, ir::Shape> shapes;  // whole shapes by input name (--input NAME:1x3x224)
  // Sizes by dimension name: a model's dim_param ("sequence") binds that axis wherever it
  // appears; "batch" also binds axis 0 of every input whose axis 0 is dynamic.
  std::map<std::string, int64_t> dims;
};

// Each input's shape once bound. An input named in `binding.shapes` that the model lacks, a bound
// shape that contradicts a static dimension, or an axis left dynamic is a UserError naming the
// input and axis (and the --input that binds it).
std::vector<ir::Shape> bind_input_shapes(const OnnxModel& model, const InputBinding& binding);

// Every operator type in the model (subgraphs included) the importer cannot map, as one message
// listing each with its count and first node; empty when all are supported.
std::string unsupported_operators(const OnnxModel& model);

// Operator types in the model with their node counts.
std::map<std::string, int64_t> operator_counts(const OnnxModel& model);

// Builds the IR graph. Unsupported operators are reported all at once before anything is built;
// a node whose attributes the importer cannot honour is a UserError "PATH: node 'NAME' (Op): ...".
// ONNX's own shape inference runs on the bound model first and every shape it infers is checked
// against cuvil's.
ir::Graph import_onnx(const OnnxModel& model, const InputBinding& binding);

// Graph annotation: weight elements of convolution kernel taps that read only zero padding for
// every output pixel, which the importer drops (the model's parameters are the graph's plus these).
inline constexpr const char* kDroppedPaddingTaps = "import.dropped_padding_tap_weights";

// Graph annotation: weight and bias elements of ConvTranspose nodes, which the graph holds
// rearranged for a convolution (with zero taps) and does not count as parameters.
inline constexpr const char* kRearrangedWeights = "import.conv_transpose_weights";

}  // namespace cuvil::bench::onnx_import
