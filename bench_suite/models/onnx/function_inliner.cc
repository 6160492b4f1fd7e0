#include "bench_suite/models/onnx/function_inliner.h"

#include <google/protobuf/unknown_field_set.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"

namespace cuvil::bench::onnx_import {

namespace {

// A function whose calls nest deeper than this calls itself, directly or not.
constexpr int kMaxNesting = 32;
// Nodes the inlined graph may reach: a malformed file whose functions each call the next twice
// would otherwise grow as 2^depth.
constexpr int64_t kMaxInlinedNodes = int64_t{1} << 20;

using AttributeMap = std::map<std::string, const onnx::AttributeProto*>;

// FunctionProto.attribute_proto (field 11, IR 9): the defaults a function gives its attributes.
// Debian's libonnx 1.12 predates it, and protobuf keeps it among the unknown fields.
constexpr int kAttributeDefaultsField = 11;

std::vector<onnx::AttributeProto> attribute_defaults(const onnx::FunctionProto& f) {
  std::vector<onnx::AttributeProto> out;
  const google::protobuf::UnknownFieldSet& unknown = f.GetReflection()->GetUnknownFields(f);
  for (int i = 0; i < unknown.field_count(); ++i) {
    const google::protobuf::UnknownField& field = unknown.field(i);
    if (field.number() != kAttributeDefaultsField ||
        field.type() != google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED)
      continue;
    onnx::AttributeProto a;
    if (a.ParseFromString(field.length_delimited()) && !a.name().empty())
      out.push_back(std::move(a));
  }
  return out;
}

class Inliner {
 public:
  Inliner(const onnx::ModelProto& model, const std::string& path) : path_(path) {
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") opset_ = op.version();
    }
    for (const auto& f : model.functions()) {
      // A function may not redefine an ONNX operator: in the default domain only other names
      // are calls.
      const bool onnx_domain = f.domain().empty() || f.domain() == "ai.onnx";
      if (onnx_domain && onnx::OpSchemaRegistry::Schema(f.name(), static_cast<int>(opset_),
                                                        onnx::ONNX_DOMAIN) != nullptr)
        continue;
      functions_[{onnx_domain ? "" : f.domain(), f.name()}] = &f;
      defaults_[&f] = attribute_defaults(f);  // filled once: pointers into it stay valid
    }
  }

  bool empty() const { return functions_.empty(); }

  // Inlines the calls among g's nodes and in their subgraphs; `depth` calls enclose g.
  void inline_calls(onnx::GraphProto& g, int depth) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> out;
    for (auto& node : *g.mutable_node()) {
      auto it = functions_.find(
          {node.domain() == "ai.onnx" ? std::string() : node.domain(), node.op_type()});
      if (it == functions_.end()) {
        for (auto& a : *node.mutable_attribute()) {
          if (a.has_g()) inline_calls(*a.mutable_g(), depth);
          for (auto& sub : *a.mutable_graphs()) inline_calls(sub, depth);
        }
        *out.Add() = std::move(node);
        continue;
      }
      const onnx::FunctionProto& f = *it->second;
      if (depth >= kMaxNesting) {
        throw UserError(path_ + ": function " + qualified(f) + " is called " +
                        std::to_string(kMaxNesting) + " calls deep (it calls itself)");
      }
      onnx::GraphProto body = expand(node, f);
      inline_calls(body, depth + 1);
      for (auto& n : *body.mutable_node()) *out.Add() = std::move(n);
      nodes_ += body.node_size();
      if (nodes_ > kMaxInlinedNodes) {
        throw UserError(path_ + ": inlining the model's functions makes more than " +
                        std::to_string(kMaxInlinedNodes) + " nodes");
      }
    }
    g.mutable_node()->Swap(&out);
  }

 private:
  // Appended, not concatenated: GCC 12 warns falsely (-Wstringop-overflow) on "'" + string.
  static std::string qualified(const onnx::FunctionProto& f) {
    std::string q(1, '\'');
    if (!f.domain().empty()) q += f.domain() + "::";
    q += f.name();
    q += '\'';
    return q;
  }

  // One call's copy of f's nodes, renamed and with its attributes bound.
  onnx::GraphProto expand(const onnx::NodeProto& call, const onnx::FunctionProto& f) {
    for (const auto& op : f.opset_import()) {
      if ((op.domain().empty() || op.domain() == "ai.onnx") && op.version() != opset_) {
        throw UserError(path_ + ": function " + qualified(f) + " is written for opset " +
                        std::to_string(op.version()) + ", the model imports opset " +
                        std::to_string(opset_));
      }
    }
    if (call.input_size() > f.input_size() || call.output_size() > f.output_size()) {
      throw UserError(path_ + ": node '" + call.name() + "' calls function " + qualified(f) +
                      " with " + std::to_string(call.input_size()) + " inputs and " +
                      std::to_string(call.output_size()) + " outputs; it takes " +
                      std::to_string(f.input_size()) + " and " + std::to_string(f.output_size()));
    }
    Call c;
    c.prefix =
        (call.name().empty() ? call.op_type() : call.name()) + "#" + std::to_string(calls_++) + "/";
    // Formal parameters name the call's values; an input the call leaves out is absent ("").
    for (int i = 0; i < f.input_size(); ++i)
      c.names[f.input(i)] = i < call.input_size() ? call.input(i) : "";
    for (int i = 0; i < f.output_size(); ++i) {
      c.names[f.output(i)] = i < call.output_size() && !call.output(i).empty()
                                 ? call.output(i)
                                 : c.prefix + f.output(i);
    }
    // The call's attributes, else the function's defaults; one neither gives is omitted (the op
    // takes its own default).
    for (const auto& a : defaults_.at(&f)) c.attributes[a.name()] = &a;
    for (const auto& a : call.attribute()) c.attributes[a.name()] = &a;
    onnx::GraphProto body;
    for (const auto& n : f.node()) {
      onnx::NodeProto* copy = body.add_node();
      *copy = n;
      bind(*copy, c);
    }
    return body;
  }

  struct Call {
    std::string prefix;
    std::map<std::string, std::string> names;  // body name -> graph name
    AttributeMap attributes;
  };

  static std::string renamed(const std::string& name, Call& c) {
    if (name.empty()) return name;
    auto it = c.names.find(name);
    if (it != c.names.end()) return it->second;
    return c.names[name] = c.prefix + name;
  }

  // A body node (or a node of a body node's subgraph) renamed, its attribute references bound.
  static void bind(onnx::NodeProto& n, Call& c) {
    for (auto& v : *n.mutable_input()) v = renamed(v, c);
    for (auto& v : *n.mutable_output()) v = renamed(v, c);
    n.set_name(c.prefix + (n.name().empty() ? n.op_type() : n.name()));
    google::protobuf::RepeatedPtrField<onnx::AttributeProto> bound;
    for (auto& a : *n.mutable_attribute()) {
      if (!a.ref_attr_name().empty()) {
        auto it = c.attributes.find(a.ref_attr_name());
        if (it == c.attributes.end()) continue;  // not given: omitted
        onnx::AttributeProto value = *it->second;
        value.set_name(a.name());
        *bound.Add() = std::move(value);
        continue;
      }
      if (a.has_g()) bind_graph(*a.mutable_g(), c);
      for (auto& sub : *a.mutable_graphs()) bind_graph(sub, c);
      *bound.Add() = std::move(a);
    }
    n.mutable_attribute()->Swap(&bound);
  }

  static void bind_graph(onnx::GraphProto& g, Call& c) {
    for (auto& n : *g.mutable_node()) bind(n, c);
    for (auto& vi : *g.mutable_input()) vi.set_name(renamed(vi.name(), c));
    for (auto& vi : *g.mutable_output()) vi.set_name(renamed(vi.name(), c));
    for (auto& vi : *g.mutable_value_info()) vi.set_name(renamed(vi.name(), c));
    for (auto& t : *g.mutable_initializer()) t.set_name(renamed(t.name(), c));
  }

  std::string path_;
  int64_t opset_ = 0;
  std::map<std::pair<std::string, std::string>, const onnx::FunctionProto*> functions_;
  std::map<const onnx::FunctionProto*, std::vector<onnx::AttributeProto>> defaults_;
  int64_t calls_ = 0;
  int64_t nodes_ = 0;
};

}  // namespace

void inline_functions(onnx::ModelProto& model, const std::string& path) {
  if (model.functions_size() == 0 || !model.has_graph()) return;
  {
    Inliner inliner(model, path);
    inliner.inline_calls(*model.mutable_graph(), 0);
  }
  model.clear_functions();
}

}  // namespace cuvil::bench::onnx_import
