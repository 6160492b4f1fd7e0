// Loop, Scan and If, imported by unrolling: a Loop whose trip count and condition are known at
// import (constants or static shapes, as PyTorch writes them for `split`, `unbind` and loops over
// constant ranges) becomes its body repeated in place, and so does a Scan (older TensorFlow and
// Caffe2 converters' recurrences) once per position of its scan inputs; an If whose condition folds
// becomes the branch taken. The IR has no control flow: a condition known only at run time is
// refused.
#include <onnx/defs/attr_proto_util.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"

namespace cuvil::bench::onnx_import {

namespace {

// Above this a Loop is refused rather than unrolled (the importer's node budget bounds the
// total as well).
constexpr int64_t kMaxLoopIterations = 4096;

HostTensor scalar_like(const onnx::GraphProto& body, int input, HostTensor::Kind kind, int64_t v) {
  // ONNX Runtime feeds iteration_num and cond with the rank the body declares: PyTorch declares
  // [1], other exporters a scalar.
  ir::Shape shape;
  const auto& type = body.input(input).type();
  if (type.has_tensor_type() && type.tensor_type().has_shape() &&
      type.tensor_type().shape().dim_size() == 1)
    shape = {1};
  return HostTensor::ints(shape, {v}, kind);
}

// A condition or count that must be a one-element constant.
int64_t known_scalar(NodeContext& c, const ImportedValue& v, const std::string& what) {
  if (v.sequence) c.fail(what + " is a sequence");
  if (!v.constant) {
    c.fail(what +
           " is known only at run time; cuvil unrolls loops and picks branches at import, so it "
           "must be a constant or computable from static shapes");
  }
  if (v.constant->numel() != 1) {
    c.fail(what + " has " + std::to_string(v.constant->numel()) + " elements; it must have one");
  }
  return v.constant->integer(0);
}

// Stacks scan output k's values of every iteration along a new axis `axis` (0 for Loop).
ImportedValue stack(NodeContext& c, size_t k, const std::vector<ImportedValue>& values,
                    int64_t axis = 0) {
  ir::Shape first;
  for (size_t i = 0; i < values.size(); ++i) {
    if (values[i].sequence) c.fail("scan output " + std::to_string(k) + " is a sequence");
    const ir::Shape shape =
        values[i].constant ? values[i].constant->shape : c.value_shape(values[i].id);
    if (i == 0) first = shape;
    if (shape != first) {
      c.fail("scan output " + std::to_string(k) + " has shape " + ir::to_string(first) +
             " in iteration 0 and " + ir::to_string(shape) + " in iteration " + std::to_string(i) +
             "; iterations must agree");
    }
  }
  onnx::NodeProto concat;
  concat.set_op_type("ConcatFromSequence");
  *concat.add_attribute() = onnx::MakeAttribute("axis", axis);
  *concat.add_attribute() = onnx::MakeAttribute("new_axis", int64_t{1});
  ImportedValue seq;
  seq.sequence = std::make_shared<const std::vector<ImportedValue>>(values);
  return c.import_composed(concat, {seq}, 1)[0];
}

// Loop(M, cond, v_initial...) -> (v_final..., scan outputs...). The body takes (iteration_num,
// cond, v...) and returns (cond, v..., scan...).
void map_loop(NodeContext& c) {
  const onnx::GraphProto& body = c.attr_graph("body");
  if (c.input_count() < 2) c.fail("takes M and cond (either may be empty) before its values");
  const size_t carried = c.input_count() - 2;
  if (body.input_size() != static_cast<int>(carried) + 2) {
    c.fail("the body takes " + std::to_string(body.input_size()) + " inputs; with " +
           std::to_string(carried) + " loop-carried values it must take " +
           std::to_string(carried + 2));
  }
  if (body.output_size() < static_cast<int>(carried) + 1) {
    c.fail("the body returns " + std::to_string(body.output_size()) + " outputs; it must return " +
           "the condition and the " + std::to_string(carried) + " loop-carried values");
  }
  const size_t scans = static_cast<size_t>(body.output_size()) - 1 - carried;
  if (c.output_count() > carried + scans) {
    c.fail("declares " + std::to_string(c.output_count()) + " outputs; the body gives " +
           std::to_string(carried + scans));
  }
  const bool counted = c.has_input(0);
  const bool conditioned = c.has_input(1);
  const int64_t trips = counted ? known_scalar(c, c.input(0), "the trip count M (input 0)") : 0;
  bool cond = conditioned ? known_scalar(c, c.input(1), "the condition (input 1)") != 0 : true;
  if (!counted && !conditioned) c.fail("has neither a trip count nor a condition: it never ends");
  if (counted && trips > kMaxLoopIterations) {
    c.fail("runs " + std::to_string(trips) + " iterations; cuvil unrolls loops of at most " +
           std::to_string(kMaxLoopIterations));
  }

  std::vector<ImportedValue> state;
  for (size_t k = 0; k < carried; ++k) state.push_back(c.input(2 + k));
  std::vector<std::vector<ImportedValue>> scanned(scans);
  int64_t i = 0;
  for (; (!counted || i < trips) && cond; ++i) {
    if (i >= kMaxLoopIterations) {
      c.fail("its condition still holds after " + std::to_string(kMaxLoopIterations) +
             " iterations; cuvil unrolls loops of at most that many");
    }
    std::vector<ImportedValue> inputs;
    inputs.push_back(ImportedValue::of(scalar_like(body, 0, HostTensor::Kind::i64, i)));
    inputs.push_back(ImportedValue::of(scalar_like(body, 1, HostTensor::Kind::boolean, 1)));
    inputs.insert(inputs.end(), state.begin(), state.end());
    std::vector<ImportedValue> out = c.inline_graph(body, inputs, ".iter" + std::to_string(i));
    if (conditioned) cond = known_scalar(c, out[0], "the body's condition (output 0)") != 0;
    for (size_t k = 0; k < carried; ++k) state[k] = out[1 + k];
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(out[1 + carried + k]);
  }
  for (size_t k = 0; k < carried && k < c.output_count(); ++k) c.set_output_value(k, state[k]);
  for (size_t k = 0; k < scans && carried + k < c.output_count(); ++k) {
    if (!c.output_used(carried + k)) continue;
    if (scanned[k].empty()) {
      c.fail("scan output " + std::to_string(k) +
             " is read but the loop runs no iteration (cuvil has no empty tensors)");
    }
    c.set_output_value(carried + k, stack(c, k, scanned[k]));
  }
}

// Scan (opset 9 on) -> (final states..., scan outputs...): the body runs once per position of the
// scan inputs' axis (their lengths are static, so the count is known at import) with the states
// and each scan input's slice at that position (the axis removed; from the end where its
// direction is 1), and returns the states and the scan outputs' slices, stacked along their
// axes (reversed where their direction is 1).
void map_scan(NodeContext& c) {
  if (c.opset() < 9) c.fail("Scan before opset 9 (batched, with sequence_lens) is not supported");
  const onnx::GraphProto& body = c.attr_graph("body");
  if (!c.has_attr("num_scan_inputs")) c.fail("attribute 'num_scan_inputs' is required");
  const int64_t m = c.attr_int("num_scan_inputs", 1);
  if (m < 1 || m > static_cast<int64_t>(c.input_count())) {
    c.fail("num_scan_inputs is " + std::to_string(m) + " of " + std::to_string(c.input_count()) +
           " inputs");
  }
  const size_t scan_in = static_cast<size_t>(m), states = c.input_count() - scan_in;
  if (body.input_size() != static_cast<int>(states + scan_in)) {
    c.fail("the body takes " + std::to_string(body.input_size()) + " inputs; it must take the " +
           std::to_string(states) + " states and " + std::to_string(scan_in) + " scan slices");
  }
  if (body.output_size() < static_cast<int>(states)) {
    c.fail("the body returns " + std::to_string(body.output_size()) + " outputs; it must return " +
           "the " + std::to_string(states) + " states first");
  }
  const size_t scans = static_cast<size_t>(body.output_size()) - states;
  if (c.output_count() > states + scans) {
    c.fail("declares " + std::to_string(c.output_count()) + " outputs; the body gives " +
           std::to_string(states + scans));
  }
  auto per = [&](const char* name, size_t n) {
    std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(n, 0));
    if (v.size() != n) c.fail(std::string(name) + " must have " + std::to_string(n) + " entries");
    return v;
  };
  const std::vector<int64_t> in_axes = per("scan_input_axes", scan_in),
                             in_dirs = per("scan_input_directions", scan_in),
                             out_axes = per("scan_output_axes", scans),
                             out_dirs = per("scan_output_directions", scans);
  int64_t length = -1;
  std::vector<int64_t> axes(scan_in);
  for (size_t j = 0; j < scan_in; ++j) {
    const ir::Shape shape = c.shape(states + j);
    if (shape.empty()) c.fail("scan input " + std::to_string(j) + " is a scalar");
    const int64_t rank = static_cast<int64_t>(shape.size());
    axes[j] = in_axes[j] < 0 ? in_axes[j] + rank : in_axes[j];
    if (axes[j] < 0 || axes[j] >= rank)
      c.fail("scan_input_axes[" + std::to_string(j) + "] is outside the input's rank");
    const int64_t l = shape[static_cast<size_t>(axes[j])];
    if (length >= 0 && l != length) {
      c.fail("scan input " + std::to_string(j) + " has " + std::to_string(l) +
             " positions along its axis; scan input 0 has " + std::to_string(length));
    }
    length = l;
  }
  if (length > kMaxLoopIterations) {
    c.fail("scans " + std::to_string(length) + " positions; cuvil unrolls at most " +
           std::to_string(kMaxLoopIterations));
  }
  std::vector<ImportedValue> state;
  for (size_t k = 0; k < states; ++k) state.push_back(c.input(k));
  std::vector<std::vector<ImportedValue>> scanned(scans);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<ImportedValue> inputs = state;
    for (size_t j = 0; j < scan_in; ++j) {
      onnx::NodeProto gather;  // a scalar index removes the axis
      gather.set_op_type("Gather");
      *gather.add_attribute() = onnx::MakeAttribute("axis", axes[j]);
      const int64_t at = in_dirs[j] != 0 ? length - 1 - t : t;
      inputs.push_back(c.import_composed(
          gather, {c.input(states + j), ImportedValue::of(HostTensor::ints({}, {at}))}, 1)[0]);
    }
    std::vector<ImportedValue> out = c.inline_graph(body, inputs, ".step" + std::to_string(t));
    for (size_t k = 0; k < states; ++k) state[k] = out[k];
    for (size_t k = 0; k < scans; ++k) scanned[k].push_back(out[states + k]);
  }
  for (size_t k = 0; k < states && k < c.output_count(); ++k) c.set_output_value(k, state[k]);
  for (size_t k = 0; k < scans && states + k < c.output_count(); ++k) {
    if (!c.output_used(states + k)) continue;
    if (scanned[k].empty()) c.fail("scan output " + std::to_string(k) + " would be empty");
    if (out_dirs[k] != 0) std::reverse(scanned[k].begin(), scanned[k].end());
    c.set_output_value(states + k, stack(c, k, scanned[k], out_axes[k]));
  }
}

void map_if(NodeContext& c) {
  const bool taken = known_scalar(c, c.input(0), "the condition (input 0)") != 0;
  const char* branch_name = taken ? "then_branch" : "else_branch";
  const onnx::GraphProto& branch = c.attr_graph(branch_name);
  if (branch.input_size() != 0) {
    c.fail(std::string(branch_name) + " declares inputs; If's branches take none");
  }
  std::vector<ImportedValue> out = c.inline_graph(branch, {}, taken ? ".then" : ".else");
  if (out.size() < c.output_count()) {
    c.fail("declares " + std::to_string(c.output_count()) + " outputs; " + branch_name +
           " returns " + std::to_string(out.size()));
  }
  for (size_t k = 0; k < c.output_count(); ++k) c.set_output_value(k, out[k]);
}

}  // namespace

void add_control_flow_mappings(std::vector<OpMapping>& t) {
  // Both decide everything at import; `fold` would see the same (constant or not) inputs.
  t.push_back({"Loop", map_loop, nullptr});
  t.push_back({"Scan", map_scan, nullptr});
  t.push_back({"If", map_if, nullptr});
}

}  // namespace cuvil::bench::onnx_import
