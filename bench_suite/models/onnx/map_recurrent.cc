// LSTM, GRU and RNN (PyTorch's nn.LSTM, nn.GRU, nn.RNN) unrolled over their sequence length,
// which the bound shapes fix: the input projection of every step is one linear layer, each step
// a linear layer of the previous hidden state and its gates' elementwise ops, and the outputs
// concatenate the steps. Forward, reverse and bidirectional; batch-major layout (opset 14);
// peepholes, clip and the Sigmoid/Tanh/Relu/HardSigmoid/LeakyRelu activations; GRU in both
// linear_before_reset forms. Per-example sequence lengths (packed sequences) are refused.
#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include "bench_suite/models/onnx/node_context.h"
#include "bench_suite/models/onnx/shape_util.h"

namespace cuvil::bench::onnx_import {

namespace {

using ir::OpKind;

enum class Cell { lstm, gru, rnn };

struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

// The cell's parts of one direction: constants split from W, R, B and P, initial states.
struct Direction {
  ir::ValueId w = ir::kNoValue, wb = ir::kNoValue;    // input projection [G * H, I], bias [G * H]
  ir::ValueId r = ir::kNoValue, rb = ir::kNoValue;    // recurrence [G' * H, H] (G' = 2 for GRU's
                                                      // r/z when linear_before_reset is 0)
  ir::ValueId rh = ir::kNoValue, rbh = ir::kNoValue;  // GRU's h-gate recurrence then
  ir::ValueId p_i = ir::kNoValue, p_o = ir::kNoValue, p_f = ir::kNoValue;  // LSTM peepholes [H]
  ir::ValueId h = ir::kNoValue, c = ir::kNoValue;                          // states [B, H]
  std::vector<Activation> acts;                                            // f, g(, h)
  bool reverse = false;
};

class Unroller {
 public:
  Unroller(NodeContext& c, Cell cell) : c_(c), cell_(cell) {}

  void run() {
    read_attributes();
    ir::ValueId x = c_.value(0);
    if (batch_major_) x = c_.add(OpKind::transpose, {x}, {{"perm", ints{1, 0, 2}}}, "seq_major");
    std::vector<ir::ValueId> ys, hs, cs;
    for (int64_t d = 0; d < dirs_; ++d) {
      Direction dir = direction(d);
      std::vector<ir::ValueId> steps(static_cast<size_t>(seq_));
      const ir::ValueId proj = linear(x, dir.w, dir.wb, "input_proj");  // [T, B, G * H]
      for (int64_t s = 0; s < seq_; ++s) {
        const int64_t t = dir.reverse ? seq_ - 1 - s : s;
        const ir::ValueId xt = reshape(slice(proj, 0, t, t + 1), {batch_, gates_ * hidden_});
        step(dir, xt);
        steps[static_cast<size_t>(t)] = dir.h;
      }
      if (c_.output_used(0)) {
        for (ir::ValueId& v : steps) v = reshape(v, {1, 1, batch_, hidden_});
        ys.push_back(concat(steps, 0));  // [T, 1, B, H]
      }
      hs.push_back(reshape(dir.h, {1, batch_, hidden_}));
      if (cell_ == Cell::lstm) cs.push_back(reshape(dir.c, {1, batch_, hidden_}));
    }
    if (c_.output_used(0)) {
      ir::ValueId y = concat(ys, 1);  // [T, dirs, B, H]
      if (batch_major_) y = c_.add(OpKind::transpose, {y}, {{"perm", ints{2, 0, 1, 3}}}, "y");
      c_.set_output(0, y);
    }
    set_state_output(1, hs);
    if (cell_ == Cell::lstm) set_state_output(2, cs);
  }

 private:
  using ints = std::vector<int64_t>;

  void read_attributes() {
    const ir::Shape xs = c_.shape(0);
    if (xs.size() != 3) c_.fail("X must have rank 3, got " + std::to_string(xs.size()));
    const int64_t layout = c_.attr_int("layout", 0);
    if (layout != 0 && layout != 1) c_.fail("layout must be 0 or 1");
    batch_major_ = layout == 1;
    seq_ = batch_major_ ? xs[1] : xs[0];
    batch_ = batch_major_ ? xs[0] : xs[1];
    input_ = xs[2];
    if (seq_ < 1) c_.fail("the sequence is empty");
    gates_ = cell_ == Cell::lstm ? 4 : cell_ == Cell::gru ? 3 : 1;
    hidden_ = c_.attr_int("hidden_size", 0);
    const std::string direction = c_.attr_string("direction", "forward");
    if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
      c_.fail("unknown direction '" + direction + "'");
    dirs_ = direction == "bidirectional" ? 2 : 1;
    reverse_first_ = direction == "reverse";
    if (c_.attr_int("input_forget", 0) != 0) c_.fail("input_forget = 1 is not supported");
    linear_before_reset_ = c_.attr_int("linear_before_reset", 0) != 0;
    clip_ = c_.attr_float("clip", 0.0);
    if (c_.has_attr("clip") && !(clip_ > 0)) c_.fail("clip must be positive");
    for (size_t i : {size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
      if (c_.has_input(i) && (!c_.is_constant(i) || !c_.constant(i).is_float()))
        c_.fail(
            "W, R, B and P must be float constants (weights computed at run time are not "
            "supported)");
    }
    if (!c_.has_input(1) || !c_.has_input(2)) c_.fail("W and R are required");
    if (hidden_ < 1) c_.fail("hidden_size must be >= 1");
    expect_shape(1, {dirs_, gates_ * hidden_, input_}, "W");
    expect_shape(2, {dirs_, gates_ * hidden_, hidden_}, "R");
    if (c_.has_input(3)) expect_shape(3, {dirs_, 2 * gates_ * hidden_}, "B");
    if (c_.has_input(5)) expect_shape(5, {dirs_, batch_, hidden_}, "initial_h");
    if (cell_ == Cell::lstm && c_.has_input(6))
      expect_shape(6, {dirs_, batch_, hidden_}, "initial_c");
    if (cell_ == Cell::lstm && c_.has_input(7)) expect_shape(7, {dirs_, 3 * hidden_}, "P");
    if (c_.has_input(4)) {
      if (!c_.is_constant(4)) {
        c_.fail(
            "sequence_lens computed at run time are not supported (every sequence must have "
            "the bound length)");
      }
      for (int64_t len : c_.constant(4).to_ints()) {
        if (len != seq_) {
          c_.fail("sequence_lens " + std::to_string(len) + " differs from the sequence length " +
                  std::to_string(seq_) + " (packed sequences are not supported)");
        }
      }
    }
    read_activations();
  }

  void expect_shape(size_t i, const ir::Shape& want, const char* name) {
    if (c_.shape(i) != want) {
      c_.fail(std::string(name) + " has shape " + ir::to_string(c_.shape(i)) + ", expected " +
              ir::to_string(want));
    }
  }

  void read_activations() {
    const size_t per_dir = cell_ == Cell::lstm ? 3 : cell_ == Cell::gru ? 2 : 1;
    std::vector<std::string> defaults = {"sigmoid", "tanh", "tanh"};
    if (cell_ == Cell::rnn) defaults = {"tanh"};
    std::vector<std::string> names;
    if (c_.has_attr("activations")) {
      for (const auto& s : string_list("activations")) {
        std::string lower = s;
        std::transform(lower.begin(), lower.end(), lower.begin(),
                       [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
        names.push_back(lower);
      }
      if (names.size() != per_dir * static_cast<size_t>(dirs_)) {
        c_.fail("activations must name " + std::to_string(per_dir * dirs_) + " functions");
      }
    } else {
      for (int64_t d = 0; d < dirs_; ++d)
        names.insert(names.end(), defaults.begin(), defaults.begin() + per_dir);
    }
    const std::vector<float> alphas =
        c_.has_attr("activation_alpha") ? c_.attr_floats("activation_alpha") : std::vector<float>{};
    const std::vector<float> betas =
        c_.has_attr("activation_beta") ? c_.attr_floats("activation_beta") : std::vector<float>{};
    for (size_t i = 0; i < names.size(); ++i) {
      Activation a{names[i]};
      const bool hard = a.name == "hardsigmoid";
      if (a.name != "sigmoid" && a.name != "tanh" && a.name != "relu" && !hard &&
          a.name != "leakyrelu") {
        c_.fail("activation '" + names[i] +
                "' is not supported (Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu)");
      }
      a.alpha = i < alphas.size() ? alphas[i] : hard ? 0.2 : 0.01;
      a.beta = i < betas.size() ? betas[i] : 0.5;
      acts_.push_back(a);
    }
  }

  std::vector<std::string> string_list(const std::string& name) {
    std::vector<std::string> out;
    // NodeContext reads single strings; the list form comes through the proto.
    for (const auto& a : c_.node().attribute()) {
      if (a.name() == name)
        for (const auto& s : a.strings()) out.push_back(s);
    }
    return out;
  }

  // Rows [begin, end) of the constant input i's direction d, as a constant.
  ir::ValueId part(size_t i, int64_t d, int64_t begin, int64_t end, const std::string& name,
                   bool parameter = true) {
    const HostTensor& t = c_.constant(i);
    std::vector<AxisSlice> ranges = {{0, d, d + 1}, {1, begin, end}};
    HostTensor s = slice_tensor(t, ranges);
    ir::Shape shape(s.shape.begin() + 1, s.shape.end());
    return c_.constant_value(reshaped(s, shape), name, parameter);
  }

  // Direction d's initial state from input i ([dirs, B, H]), or zeros.
  ir::ValueId initial_state(size_t i, int64_t d, const std::string& name) {
    if (!c_.has_input(i)) {
      return c_.constant_value(
          HostTensor::floats({batch_, hidden_}, std::vector<float>(batch_ * hidden_, 0.0f)), name);
    }
    if (c_.is_constant(i)) {
      const HostTensor s = slice_tensor(c_.constant(i), {{0, d, d + 1}});
      return c_.constant_value(reshaped(s, {batch_, hidden_}), name);
    }
    return reshape(slice(c_.value(i), 0, d, d + 1), {batch_, hidden_});
  }

  Direction direction(int64_t d) {
    Direction dir;
    const int64_t gh = gates_ * hidden_;
    const std::string sfx = dirs_ == 2 ? (d == 0 ? "_fwd" : "_bwd") : "";
    dir.reverse = d == 1 || reverse_first_;
    dir.w = part(1, d, 0, gh, "W" + sfx);
    if (c_.has_input(3)) dir.wb = part(3, d, 0, gh, "Wb" + sfx);
    const bool split_h = cell_ == Cell::gru && !linear_before_reset_;
    const int64_t rec = split_h ? 2 * hidden_ : gh;
    dir.r = part(2, d, 0, rec, "R" + sfx);
    if (c_.has_input(3)) dir.rb = part(3, d, gh, gh + rec, "Rb" + sfx);
    if (split_h) {
      dir.rh = part(2, d, rec, gh, "Rh" + sfx);
      if (c_.has_input(3)) dir.rbh = part(3, d, gh + rec, 2 * gh, "Rbh" + sfx);
    }
    if (cell_ == Cell::lstm && c_.has_input(7)) {
      dir.p_i = part(7, d, 0, hidden_, "Pi" + sfx);
      dir.p_o = part(7, d, hidden_, 2 * hidden_, "Po" + sfx);
      dir.p_f = part(7, d, 2 * hidden_, 3 * hidden_, "Pf" + sfx);
    }
    dir.h = initial_state(5, d, "initial_h" + sfx);
    if (cell_ == Cell::lstm) dir.c = initial_state(6, d, "initial_c" + sfx);
    const size_t per_dir = acts_.size() / static_cast<size_t>(dirs_);
    dir.acts.assign(acts_.begin() + static_cast<int64_t>(per_dir) * d,
                    acts_.begin() + static_cast<int64_t>(per_dir) * (d + 1));
    return dir;
  }

  // One step from the projected input xt [B, G * H]: updates dir.h (and dir.c).
  void step(Direction& dir, ir::ValueId xt) {
    const ir::ValueId rec = linear(dir.h, dir.r, dir.rb, "recurrence");
    const Activation& f = dir.acts[0];
    if (cell_ == Cell::rnn) {
      dir.h = act(f, add(xt, rec));
      return;
    }
    const Activation& g = dir.acts[1];
    if (cell_ == Cell::lstm) {  // gates i, o, f, c
      const ir::ValueId pre = add(xt, rec);
      ir::ValueId i = gate(pre, 0), o = gate(pre, 1), fg = gate(pre, 2), cc = gate(pre, 3);
      if (dir.p_i != ir::kNoValue) {
        i = add(i, mul(dir.p_i, dir.c));
        fg = add(fg, mul(dir.p_f, dir.c));
      }
      dir.c = add(mul(act(f, fg), dir.c), mul(act(f, i), act(g, cc)));
      if (dir.p_o != ir::kNoValue) o = add(o, mul(dir.p_o, dir.c));
      dir.h = mul(act(f, o), act(dir.acts[2], dir.c, /*clip=*/false));
      return;
    }
    // GRU: gates z, r, h; h' = hh + z (h - hh).
    const ir::ValueId z = act(f, add(gate(xt, 0), gate(rec, 0)));
    const ir::ValueId r = act(f, add(gate(xt, 1), gate(rec, 1)));
    ir::ValueId hh;
    if (linear_before_reset_) {
      hh = act(g, add(gate(xt, 2), mul(r, gate(rec, 2))));
    } else {
      hh = act(g, add(gate(xt, 2), linear(mul(r, dir.h), dir.rh, dir.rbh, "reset_recurrence")));
    }
    dir.h = add(hh, mul(z, c_.add(OpKind::sub, {dir.h, hh})));
  }

  // Gate k's columns [k H, (k + 1) H) of a [B, G * H] value.
  ir::ValueId gate(ir::ValueId v, int64_t k) { return slice(v, 1, k * hidden_, (k + 1) * hidden_); }

  // `clip` bounds the gates' inputs (as ONNX Runtime does), not the cell state's.
  ir::ValueId act(const Activation& a, ir::ValueId x, bool clip = true) {
    if (clip && clip_ > 0) x = c_.add(OpKind::clip, {x}, {{"min", -clip_}, {"max", clip_}}, "clip");
    if (a.name == "sigmoid") return c_.add(OpKind::sigmoid, {x});
    if (a.name == "tanh") return c_.add(OpKind::tanh, {x});
    if (a.name == "relu") return c_.add(OpKind::relu, {x});
    if (a.name == "hardsigmoid")
      return c_.add(OpKind::hard_sigmoid, {x}, {{"alpha", a.alpha}, {"beta", a.beta}});
    return c_.add(OpKind::leaky_relu, {x}, {{"alpha", a.alpha}});
  }

  ir::ValueId linear(ir::ValueId x, ir::ValueId w, ir::ValueId b, const std::string& name) {
    std::vector<ir::ValueId> in = {x, w};
    if (b != ir::kNoValue) in.push_back(b);
    return c_.add(OpKind::linear, in, {}, name);
  }
  ir::ValueId add(ir::ValueId a, ir::ValueId b) { return c_.add(OpKind::add, {a, b}); }
  ir::ValueId mul(ir::ValueId a, ir::ValueId b) { return c_.add(OpKind::mul, {a, b}); }
  ir::ValueId slice(ir::ValueId v, int64_t axis, int64_t start, int64_t end) {
    return c_.add(OpKind::slice, {v}, {{"axis", axis}, {"start", start}, {"end", end}});
  }
  ir::ValueId reshape(ir::ValueId v, ir::Shape shape) {
    return c_.add(OpKind::reshape, {v}, {{"shape", shape}});
  }
  ir::ValueId concat(const std::vector<ir::ValueId>& parts, int64_t axis) {
    return parts.size() == 1 ? parts[0] : c_.add(OpKind::concat, parts, {{"axis", axis}});
  }

  // Y_h or Y_c from each direction's final state [1, B, H]: [dirs, B, H] ([B, dirs, H] when
  // batch-major).
  void set_state_output(size_t k, const std::vector<ir::ValueId>& states) {
    if (!c_.output_used(k)) return;
    ir::ValueId v = concat(states, 0);
    if (batch_major_) v = c_.add(OpKind::transpose, {v}, {{"perm", ints{1, 0, 2}}});
    c_.set_output(k, v);
  }

  NodeContext& c_;
  Cell cell_;
  bool batch_major_ = false, reverse_first_ = false, linear_before_reset_ = false;
  int64_t seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0, gates_ = 1, dirs_ = 1;
  double clip_ = 0;
  std::vector<Activation> acts_;
};

void map_recurrent(NodeContext& c) {
  const std::string& t = c.op_type();
  Unroller(c, t == "LSTM" ? Cell::lstm : t == "GRU" ? Cell::gru : Cell::rnn).run();
}

}  // namespace

void add_recurrent_mappings(std::vector<OpMapping>& t) {
  for (const char* op : {"LSTM", "GRU", "RNN"}) t.push_back({op, map_recurrent, nullptr});
}

}  // namespace cuvil::bench::onnx_import
