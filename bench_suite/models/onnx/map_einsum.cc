// Einsum, lowered to the IR's transpose, reshape, reduce_sum and batched matmul: operands are
// contracted left to right; each pairwise step puts the shared kept labels first (the batch), the
// contracted ones innermost, and runs one matmul. Equations as exporters write them: spaces,
// `...` ellipses (broadcast, right-aligned), implicit outputs, size-1 broadcasting. A label
// repeated within one operand (a diagonal, "ii->i") is refused.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;
using Labels = std::vector<int>;  // letters are their character; ellipsis dims kEllipsis + i

constexpr int kEllipsis = 256;

struct Equation {
  std::vector<Labels> inputs;
  Labels output;
};

std::string label_name(int label) {
  if (label < kEllipsis) return std::string("'") + static_cast<char>(label) + "'";
  return "the ellipsis";
}

// One side of the equation, split at commas, spaces removed; `...` kept as one '.' marker.
std::vector<std::string> split_terms(const NodeContext& c, const std::string& side) {
  std::vector<std::string> terms(1);
  for (size_t k = 0; k < side.size(); ++k) {
    const char ch = side[k];
    if (ch == ' ') continue;
    if (ch == ',') {
      terms.emplace_back();
    } else if (ch == '.') {
      if (side.compare(k, 3, "...") != 0) c.fail("equation has a '.' outside an ellipsis '...'");
      if (terms.back().find('.') != std::string::npos) c.fail("a term has two ellipses");
      terms.back() += '.';
      k += 2;
    } else if (std::isalpha(static_cast<unsigned char>(ch))) {
      terms.back() += ch;
    } else {
      c.fail(std::string("equation has the character '") +
             (std::isprint(static_cast<unsigned char>(ch)) ? std::string(1, ch) : "?") +
             "' (letters, ',', '...' and '->' only)");
    }
  }
  return terms;
}

// A term's labels, its ellipsis expanded to the trailing `dims` of `width` ellipsis labels.
Labels expand(const std::string& term, int64_t dims, int64_t width) {
  Labels out;
  for (const char ch : term) {
    if (ch != '.') {
      out.push_back(ch);
      continue;
    }
    for (int64_t k = width - dims; k < width; ++k) out.push_back(kEllipsis + static_cast<int>(k));
  }
  return out;
}

Equation parse(const NodeContext& c, const std::string& equation,
               const std::vector<ir::Shape>& shapes) {
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  if (equation.find('>') != std::string::npos && arrow == std::string::npos)
    c.fail("equation has a '>' outside '->'");
  std::vector<std::string> terms = split_terms(c, lhs);
  if (terms.size() != shapes.size()) {
    c.fail("equation '" + equation + "' has " + std::to_string(terms.size()) + " input terms for " +
           std::to_string(shapes.size()) + " inputs");
  }
  std::vector<int64_t> ellipsis_dims(terms.size(), 0);
  int64_t width = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const bool has_ellipsis = terms[i].find('.') != std::string::npos;
    const int64_t letters = static_cast<int64_t>(terms[i].size()) - (has_ellipsis ? 1 : 0);
    const int64_t rank = static_cast<int64_t>(shapes[i].size());
    if (has_ellipsis ? letters > rank : letters != rank) {
      c.fail("term " + std::to_string(i) + " ('" + terms[i] + "') has " + std::to_string(letters) +
             " labels for input " + std::to_string(i) + " of rank " + std::to_string(rank));
    }
    ellipsis_dims[i] = has_ellipsis ? rank - letters : 0;
    width = std::max(width, ellipsis_dims[i]);
  }
  Equation eq;
  std::map<int, int> count;
  for (size_t i = 0; i < terms.size(); ++i) {
    eq.inputs.push_back(expand(terms[i], ellipsis_dims[i], width));
    std::set<int> seen;
    for (const int l : eq.inputs.back()) {
      if (!seen.insert(l).second) {
        c.fail("term " + std::to_string(i) + " repeats label " + label_name(l) +
               " (a diagonal), which is not supported");
      }
      ++count[l];
    }
  }
  if (arrow == std::string::npos) {
    // Implicit output: the ellipsis, then the labels used once, in alphabetical order.
    for (int64_t k = 0; k < width; ++k) eq.output.push_back(kEllipsis + static_cast<int>(k));
    for (const auto& [l, n] : count)
      if (l < kEllipsis && n == 1) eq.output.push_back(l);
    return eq;
  }
  const std::vector<std::string> out = split_terms(c, equation.substr(arrow + 2));
  if (out.size() != 1) c.fail("equation has more than one output term");
  eq.output = expand(out[0], width, width);
  std::set<int> seen;
  for (const int l : eq.output) {
    if (!seen.insert(l).second) c.fail("output repeats label " + label_name(l));
    if (!count.count(l)) c.fail("output label " + label_name(l) + " is in no input term");
  }
  return eq;
}

// A value with the label of each of its dimensions.
struct Operand {
  ir::ValueId value;
  Labels labels;
};

bool contains(const Labels& ls, int l) {
  return std::find(ls.begin(), ls.end(), l) != ls.end();
}

ir::Shape shape_of(NodeContext& c, const Operand& x) {
  return c.value_shape(x.value);
}

// `x` with its dimensions in the order of `order` (a permutation of its labels).
Operand permute(NodeContext& c, Operand x, const Labels& order) {
  if (order == x.labels) return x;
  std::vector<int64_t> perm;
  for (const int l : order) {
    perm.push_back(std::find(x.labels.begin(), x.labels.end(), l) - x.labels.begin());
  }
  return {c.add(OpKind::transpose, {x.value}, {{"perm", perm}}, "transpose"), order};
}

ir::ValueId reshape(NodeContext& c, ir::ValueId v, const ir::Shape& shape) {
  if (c.value_shape(v) == shape) return v;
  return c.add(OpKind::reshape, {v}, {{"shape", shape}}, "reshape");
}

// Sums `x` over the labels for which `drop` holds.
template <class Drop>
Operand sum_out(NodeContext& c, Operand x, Drop drop) {
  std::vector<int64_t> axes;
  Labels kept;
  for (size_t d = 0; d < x.labels.size(); ++d) {
    if (drop(x.labels[d])) {
      axes.push_back(static_cast<int64_t>(d));
    } else {
      kept.push_back(x.labels[d]);
    }
  }
  if (axes.empty()) return x;
  return {c.add(OpKind::reduce_sum, {x.value}, {{"axes", axes}, {"keepdims", int64_t{0}}}, "sum"),
          kept};
}

// Size-1 dimensions of a label that is larger elsewhere broadcast: the operand does not depend
// on that index, so the dimension is dropped.
Operand drop_broadcast(NodeContext& c, Operand x, const std::map<int, int64_t>& size) {
  const ir::Shape s = shape_of(c, x);
  Labels kept;
  ir::Shape kept_shape;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 1 && size.at(x.labels[d]) > 1) continue;
    kept.push_back(x.labels[d]);
    kept_shape.push_back(s[d]);
  }
  if (kept.size() == x.labels.size()) return x;
  return {reshape(c, x.value, kept_shape), kept};
}

// a x b over their shared labels: those in `keep` are the matmul's batch, the others contracted.
Operand contract(NodeContext& c, const Operand& a, const Operand& b, const std::set<int>& keep,
                 const std::map<int, int64_t>& size) {
  Labels batch, free_a, free_b, inner;
  for (const int l : a.labels) {
    if (!contains(b.labels, l)) {
      free_a.push_back(l);
    } else {
      (keep.count(l) ? batch : inner).push_back(l);
    }
  }
  for (const int l : b.labels)
    if (!contains(a.labels, l)) free_b.push_back(l);
  auto product = [&](const Labels& ls) {
    int64_t n = 1;
    for (const int l : ls) n *= size.at(l);
    return n;
  };
  ir::Shape batch_shape;
  for (const int l : batch) batch_shape.push_back(size.at(l));
  auto joined = [](Labels x, const Labels& y, const Labels& z) {
    x.insert(x.end(), y.begin(), y.end());
    x.insert(x.end(), z.begin(), z.end());
    return x;
  };
  const Operand at = permute(c, a, joined(batch, free_a, inner));
  const Operand bt = permute(c, b, joined(batch, inner, free_b));
  ir::Shape as = batch_shape, bs = batch_shape;
  as.insert(as.end(), {product(free_a), product(inner)});
  bs.insert(bs.end(), {product(inner), product(free_b)});
  const ir::ValueId y =
      c.add(OpKind::matmul, {reshape(c, at.value, as), reshape(c, bt.value, bs)}, {}, "matmul");
  Operand out{y, joined(batch, free_a, free_b)};
  ir::Shape full = batch_shape;
  for (const int l : free_a) full.push_back(size.at(l));
  for (const int l : free_b) full.push_back(size.at(l));
  out.value = reshape(c, y, full);
  return out;
}

void map_einsum(NodeContext& c) {
  if (c.input_count() == 0) c.fail("needs at least one input");
  std::vector<ir::Shape> shapes;
  for (size_t i = 0; i < c.input_count(); ++i) {
    if (c.is_integer(i))
      c.fail("integer operands are not supported (input " + std::to_string(i) + ")");
    shapes.push_back(c.shape(i));
  }
  const Equation eq = parse(c, c.attr_string("equation", ""), shapes);

  std::map<int, int64_t> size;
  for (size_t i = 0; i < shapes.size(); ++i) {
    for (size_t d = 0; d < shapes[i].size(); ++d) {
      const int l = eq.inputs[i][d];
      const int64_t n = shapes[i][d];
      auto [it, fresh] = size.emplace(l, n);
      if (fresh || it->second == n || n == 1) continue;
      if (it->second != 1) {
        c.fail("label " + label_name(l) + " has size " + std::to_string(it->second) +
               " in one term and " + std::to_string(n) + " in input " + std::to_string(i));
      }
      it->second = n;
    }
  }
  std::vector<Operand> ops;
  for (size_t i = 0; i < shapes.size(); ++i)
    ops.push_back(drop_broadcast(c, {c.value(i), eq.inputs[i]}, size));

  // Labels still needed after operand `i`: the output's and those of the operands after it.
  auto needed_after = [&](size_t i) {
    std::set<int> keep(eq.output.begin(), eq.output.end());
    for (size_t j = i + 1; j < ops.size(); ++j)
      keep.insert(ops[j].labels.begin(), ops[j].labels.end());
    return keep;
  };
  Operand acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) {
    const std::set<int> keep = needed_after(i);
    // A label of only one side that nothing later needs is summed before the product.
    acc = sum_out(c, acc, [&](int l) { return !keep.count(l) && !contains(ops[i].labels, l); });
    const Operand b =
        sum_out(c, ops[i], [&](int l) { return !keep.count(l) && !contains(acc.labels, l); });
    acc = contract(c, acc, b, keep, size);
  }
  acc = sum_out(c, acc, [&](int l) { return !contains(eq.output, l); });
  // Labels of size 1 dropped as broadcast come back as size-1 dimensions of the output.
  ir::Shape out_shape;
  Labels present;
  for (const int l : eq.output) {
    out_shape.push_back(size.at(l));
    if (contains(acc.labels, l)) present.push_back(l);
  }
  acc = permute(c, acc, present);
  c.set_output(0, reshape(c, acc.value, out_shape));
}

}  // namespace

void add_einsum_mappings(std::vector<OpMapping>& t) {
  t.push_back({"Einsum", map_einsum, nullptr});
}

}  // namespace cuvil::bench::onnx_import
