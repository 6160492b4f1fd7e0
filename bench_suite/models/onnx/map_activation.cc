// Activations without an IR op of their own, composed of elementwise IR ops (fuse-elementwise
// runs each chain as one loop): PRelu, Elu, Selu, Celu, Softplus, Softsign, Mish,
// ThresholdedRelu, Shrink, and Gelu's tanh approximation (the exact Gelu is the IR op).
#include <cmath>
#include <string>
#include <vector>

#include "bench_suite/models/onnx/node_context.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

struct Builder {
  NodeContext& c;

  ir::ValueId op(OpKind k, std::vector<ir::ValueId> in, const std::string& suffix) {
    return c.add(k, std::move(in), {}, suffix);
  }
  ir::ValueId negative_part(ir::ValueId x) {
    return op(OpKind::min, {x, c.float_constant(0, "zero")}, "neg");
  }
  // relu(x) + alpha * (exp(min(x, 0) / scale) - 1): Elu (scale 1), Celu (scale alpha).
  ir::ValueId exponential_linear(ir::ValueId x, double alpha, double scale) {
    ir::ValueId n = negative_part(x);
    if (scale != 1.0)
      n = op(OpKind::mul, {n, c.float_constant(1.0 / scale, "inv_alpha")}, "scaled");
    const ir::ValueId e =
        op(OpKind::sub, {op(OpKind::exp, {n}, "exp"), c.float_constant(1, "one")}, "expm1");
    return op(OpKind::add,
              {op(OpKind::relu, {x}, "pos"),
               op(OpKind::mul, {e, c.float_constant(alpha, "alpha")}, "alpha_e")},
              "");
  }
  // log(1 + exp(x)) = relu(x) + log(1 + exp(-|x|)), which never overflows.
  ir::ValueId softplus(ir::ValueId x) {
    const ir::ValueId t =
        op(OpKind::exp, {op(OpKind::neg, {op(OpKind::abs, {x}, "abs")}, "neg_abs")}, "exp");
    const ir::ValueId l =
        op(OpKind::log, {op(OpKind::add, {t, c.float_constant(1, "one")}, "one_plus")}, "log");
    return op(OpKind::add, {op(OpKind::relu, {x}, "pos"), l}, "softplus");
  }
};

void map_activation(NodeContext& c) {
  if (!c.is_constant(0) && c.is_integer(0)) c.fail("needs a float input, not integers");
  Builder b{c};
  const ir::ValueId x = c.value(0);
  const std::string& t = c.op_type();
  ir::ValueId y = ir::kNoValue;
  if (t == "PRelu") {  // relu(x) + slope * min(x, 0), the slope broadcast to x
    if (!c.is_constant(1) && c.is_integer(1)) c.fail("needs a float slope, not integers");
    y = b.op(OpKind::add,
             {b.op(OpKind::relu, {x}, "pos"),
              b.op(OpKind::mul, {b.negative_part(x), c.value(1)}, "sloped")},
             "");
  } else if (t == "Elu") {
    y = b.exponential_linear(x, c.attr_float("alpha", 1.0), 1.0);
  } else if (t == "Celu") {
    const double alpha = c.attr_float("alpha", 1.0);
    if (alpha == 0.0) c.fail("alpha must not be 0");
    y = b.exponential_linear(x, alpha, alpha);
  } else if (t == "Selu") {
    const double alpha = c.attr_float("alpha", 1.67326319217681884765625);
    const double gamma = c.attr_float("gamma", 1.05070102214813232421875);
    y = b.op(OpKind::mul, {b.exponential_linear(x, alpha, 1.0), c.float_constant(gamma, "gamma")},
             "");
  } else if (t == "Softplus") {
    y = b.softplus(x);
  } else if (t == "Softsign") {  // x / (1 + |x|)
    y = b.op(
        OpKind::div,
        {x, b.op(OpKind::add, {b.op(OpKind::abs, {x}, "abs"), c.float_constant(1, "one")}, "den")},
        "");
  } else if (t == "Mish") {  // x * tanh(softplus(x))
    y = b.op(OpKind::mul, {x, b.op(OpKind::tanh, {b.softplus(x)}, "tanh")}, "");
  } else if (t == "ThresholdedRelu") {  // x where x > alpha, else 0
    const ir::ValueId above =
        c.compare(x, "greater", c.float_constant(c.attr_float("alpha", 1.0), "alpha"), "above");
    y = b.op(OpKind::mul, {x, above}, "");
  } else if (t == "Shrink") {  // x - bias above lambd, x + bias below -lambd, else 0
    const double lambd = c.attr_float("lambd", 0.5), bias = c.attr_float("bias", 0.0);
    const ir::ValueId above = c.compare(x, "greater", c.float_constant(lambd, "lambd"), "above");
    const ir::ValueId below = c.compare(x, "less", c.float_constant(-lambd, "neg_lambd"), "below");
    const ir::ValueId lowered = b.op(OpKind::sub, {x, c.float_constant(bias, "bias")}, "lowered");
    const ir::ValueId raised = b.op(OpKind::add, {x, c.float_constant(bias, "bias")}, "raised");
    // where, not masks multiplied in: an infinite x times a 0 mask would be NaN
    const ir::ValueId lower =
        b.op(OpKind::where, {below, raised, c.float_constant(0, "zero")}, "lower");
    y = b.op(OpKind::where, {above, lowered, lower}, "");
  } else if (t == "Gelu") {
    const std::string approximate = c.attr_string("approximate", "none");
    if (approximate == "none") {
      y = b.op(OpKind::gelu, {x}, "");
    } else if (approximate == "tanh") {  // x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const ir::ValueId x3 = b.op(OpKind::mul, {b.op(OpKind::mul, {x, x}, "x2"), x}, "x3");
      const ir::ValueId inner = b.op(
          OpKind::add,
          {x, b.op(OpKind::mul, {x3, c.float_constant(0.044715, "cubic")}, "cubic_term")}, "inner");
      const ir::ValueId th =
          b.op(OpKind::tanh,
               {b.op(OpKind::mul, {inner, c.float_constant(std::sqrt(2.0 / M_PI), "k")}, "scaled")},
               "tanh");
      const ir::ValueId half = b.op(OpKind::mul, {x, c.float_constant(0.5, "half")}, "half_x");
      y = b.op(OpKind::mul, {half, b.op(OpKind::add, {th, c.float_constant(1, "one")}, "one_plus")},
               "");
    } else {
      c.fail("unknown approximate '" + approximate + "' (none or tanh)");
    }
  }
  c.set_output(0, y);
}

}  // namespace

void add_activation_mappings(std::vector<OpMapping>& t) {
  for (const char* op : {"PRelu", "Elu", "Celu", "Selu", "Softplus", "Softsign", "Mish",
                         "ThresholdedRelu", "Shrink", "Gelu"})
    t.push_back({op, map_activation, nullptr});
}

}  // namespace cuvil::bench::onnx_import
