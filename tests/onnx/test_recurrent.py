"""LSTM, GRU and RNN (map_recurrent.cc): single-node graphs against numpy written from the ONNX
specification's equations (every direction, both layouts, peepholes, clip, activations, GRU's
two reset forms), PyTorch's nn.LSTM / nn.GRU / nn.RNN exports against PyTorch, and refusals."""
import numpy as np
import pytest
import torch
import torch.nn as nn
from onnx import helper

from conftest import FP32_BOUND, randomise
from test_op_semantics import close, rand, refused, run

ACT = {
    "sigmoid": lambda x, a, b: 1 / (1 + np.exp(-x)),
    "tanh": lambda x, a, b: np.tanh(x),
    "relu": lambda x, a, b: np.maximum(x, 0),
    "hardsigmoid": lambda x, a, b: np.clip(a * x + b, 0, 1),
    "leakyrelu": lambda x, a, b: np.where(x >= 0, x, a * x),
}


def np_recurrent(cell, x, w, r, b=None, h0=None, c0=None, p=None, direction="forward", clip=None,
                 acts=None, alphas=(), betas=(), linear_before_reset=0):
    """Y [T, dirs, B, H], Y_h and Y_c [dirs, B, H] (seq-major), from the specification."""
    x = x.astype(np.float64)
    t_len, batch = x.shape[:2]
    dirs, gh = w.shape[:2]
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[cell]
    hid = gh // g
    per = {"LSTM": 3, "GRU": 2, "RNN": 1}[cell]
    default = {"LSTM": ["sigmoid", "tanh", "tanh"], "GRU": ["sigmoid", "tanh"], "RNN": ["tanh"]}[cell]
    acts = acts or default * dirs
    ys, yh, yc = [], [], []
    for d in range(dirs):
        f = [lambda v, i=i: ACT[acts[d * per + i].lower()](
            v, alphas[d * per + i] if d * per + i < len(alphas) else (0.2 if acts[d * per + i].lower() == "hardsigmoid" else 0.01),
            betas[d * per + i] if d * per + i < len(betas) else 0.5) for i in range(per)]
        cl = (lambda v: np.clip(v, -clip, clip)) if clip else (lambda v: v)
        wb = b[d, :gh] if b is not None else np.zeros(gh)
        rb = b[d, gh:] if b is not None else np.zeros(gh)
        h = h0[d].astype(np.float64) if h0 is not None else np.zeros((batch, hid))
        c = c0[d].astype(np.float64) if c0 is not None else np.zeros((batch, hid))
        pi, po, pf = (p[d, :hid], p[d, hid:2 * hid], p[d, 2 * hid:]) if p is not None else (0, 0, 0)
        out = [None] * t_len
        order = range(t_len - 1, -1, -1) if (direction == "reverse" or d == 1) else range(t_len)
        for t in order:
            xw = x[t] @ w[d].T + wb
            if cell == "LSTM":
                s = xw + h @ r[d].T + rb
                i_, o_, f_, c_ = (s[:, k * hid:(k + 1) * hid] for k in range(4))
                i_ = f[0](cl(i_ + pi * c))
                f_ = f[0](cl(f_ + pf * c))
                c = f_ * c + i_ * f[1](cl(c_))
                o_ = f[0](cl(o_ + po * c))
                h = o_ * f[2](c)
            elif cell == "GRU":
                rz = lambda k, m: m[:, k * hid:(k + 1) * hid]
                z = f[0](cl(rz(0, xw) + h @ rz(0, r[d].T) + rz(0, rb[None])))
                rr = f[0](cl(rz(1, xw) + h @ rz(1, r[d].T) + rz(1, rb[None])))
                if linear_before_reset:
                    hh = f[1](cl(rz(2, xw) + rr * (h @ rz(2, r[d].T) + rz(2, rb[None]))))
                else:
                    hh = f[1](cl(rz(2, xw) + (rr * h) @ rz(2, r[d].T) + rz(2, rb[None])))
                h = (1 - z) * hh + z * h
            else:
                h = f[0](cl(xw + h @ r[d].T + rb))
            out[t] = h
        ys.append(np.stack(out))
        yh.append(h)
        yc.append(c)
    return (np.stack(ys, 1).astype(np.float32), np.stack(yh).astype(np.float32),
            np.stack(yc).astype(np.float32))


def weights(cell, dirs, hid, inp, seed=0):
    g = {"LSTM": 4, "GRU": 3, "RNN": 1}[cell]
    rng = np.random.default_rng(seed)
    f = lambda *s: (rng.standard_normal(s) * 0.5).astype(np.float32)
    return f(dirs, g * hid, inp), f(dirs, g * hid, hid), f(dirs, 2 * g * hid)


CASES = {
    "lstm_forward": ("LSTM", dict(), 1),
    "lstm_reverse": ("LSTM", dict(direction="reverse"), 1),
    "lstm_bidirectional": ("LSTM", dict(direction="bidirectional"), 2),
    "lstm_clip_and_activations": ("LSTM", dict(clip=0.7, activations=["HardSigmoid", "Relu", "Tanh"],
                                               activation_alpha=[0.3], activation_beta=[0.4]), 1),
    "gru_linear_before_reset": ("GRU", dict(linear_before_reset=1), 1),
    "gru_reset_before_linear": ("GRU", dict(direction="bidirectional"), 2),
    "gru_leaky": ("GRU", dict(activations=["Sigmoid", "LeakyRelu"], activation_alpha=[0.0, 0.2]), 1),
    "rnn_tanh": ("RNN", dict(), 1),
    "rnn_relu_bidirectional": ("RNN", dict(direction="bidirectional", activations=["Relu", "Tanh"]), 2),
}


@pytest.mark.parametrize("states", [False, True], ids=["zero-states", "initial-states"])
@pytest.mark.parametrize("case", CASES.keys())
def test_recurrent_cells_match_the_specification(tmp_path, case, states):
    cell, attrs, dirs = CASES[case]
    seq, batch, inp, hid = 7, 3, 5, 4
    w, r, b = weights(cell, dirs, hid, inp)
    x = rand(seq, batch, inp)
    h0, c0 = rand(dirs, batch, hid), rand(dirs, batch, hid)
    ins = ["x", "w", "r", "b", "", "h0"] + (["c0"] if cell == "LSTM" else []) if states else ["x", "w", "r", "b"]
    outs = ["y", "yh", "yc"] if cell == "LSTM" else ["y", "yh"]
    node = helper.make_node(cell, ins, outs, hidden_size=hid, **attrs)
    inputs = {"x": x, "h0": h0, "c0": c0} if cell == "LSTM" and states else {"x": x, "h0": h0} if states else {"x": x}
    got = run(tmp_path, [node], inputs, {"w": w, "r": r, "b": b}, outputs=outs)
    want = np_recurrent(cell, x, w, r, b, h0 if states else None, c0 if states else None,
                        direction=attrs.get("direction", "forward"), clip=attrs.get("clip"),
                        acts=attrs.get("activations"), alphas=attrs.get("activation_alpha", ()),
                        betas=attrs.get("activation_beta", ()),
                        linear_before_reset=attrs.get("linear_before_reset", 0))
    for g, wnt in zip(got, want):
        close(g, wnt, 1e-5)


def test_lstm_peepholes_sequence_lens_and_batch_major_layout(tmp_path):
    # Opset 14's layout 1: X [B, T, I], Y [B, T, dirs, H], Y_h [B, dirs, H]; sequence_lens all
    # equal to the sequence length are accepted; peepholes P [dirs, 3H] (i, o, f).
    seq, batch, inp, hid = 5, 2, 3, 6
    w, r, b = weights("LSTM", 2, hid, inp, seed=3)
    p = rand(2, 3 * hid)
    x = rand(batch, seq, inp)
    node = helper.make_node("LSTM", ["x", "w", "r", "b", "lens", "", "", "p"], ["y", "yh", "yc"],
                            hidden_size=hid, direction="bidirectional", layout=1)
    y, yh, yc = run(tmp_path, [node], {"x": x}, {"w": w, "r": r, "b": b, "p": p,
                                                  "lens": np.full(batch, seq, np.int32)},
                    outputs=("y", "yh", "yc"), opset=14)
    wy, wyh, wyc = np_recurrent("LSTM", x.transpose(1, 0, 2), w, r, b, p=p, direction="bidirectional")
    close(y, wy.transpose(2, 0, 1, 3), 1e-5)
    close(yh, wyh.transpose(1, 0, 2), 1e-5)
    close(yc, wyc.transpose(1, 0, 2), 1e-5)


def test_only_the_used_outputs_are_built(tmp_path):
    # A GRU whose Y is unused (only Y_h read): the sequence output is never concatenated.
    w, r, b = weights("GRU", 1, 4, 3)
    x = rand(6, 2, 3)
    node = helper.make_node("GRU", ["x", "w", "r", "b"], ["", "yh"], hidden_size=4)
    (yh,) = run(tmp_path, [node], {"x": x}, {"w": w, "r": r, "b": b}, outputs=("yh",))
    close(yh, np_recurrent("GRU", x, w, r, b)[1], 1e-5)


def lstm_node(**attrs):
    return helper.make_node("LSTM", ["x", "w", "r", "b", "lens"][:attrs.pop("inputs", 4)], ["y"], name="ct",
                            hidden_size=attrs.pop("hidden_size", 4), **attrs)


@pytest.mark.parametrize("attrs,extra,why", [
    (dict(inputs=5), {"lens": np.array([7, 5], np.int32)}, "packed sequences are not supported"),
    (dict(direction="sideways"), {}, "unknown direction 'sideways'"),
    (dict(activations=["Sigmoid", "Softsign", "Tanh"]), {}, "activation 'softsign' is not supported"),
    (dict(input_forget=1), {}, "input_forget = 1 is not supported"),
    (dict(hidden_size=5), {}, "W has shape [1, 16, 5], expected [1, 20, 5]"),
    (dict(clip=-1.0), {}, "clip must be positive"),
    (dict(activations=["Sigmoid", "Tanh"]), {}, "activations must name 3 functions"),
    (dict(layout=2), {}, "layout must be 0 or 1"),
])
def test_recurrent_forms_it_cannot_honour_are_refused_naming_the_node(tmp_path, attrs, extra, why):
    w, r, b = weights("LSTM", 1, 4, 5)
    refused(tmp_path, lstm_node(**attrs), rand(7, 2, 5), {"w": w, "r": r, "b": b, **extra}, why)


def test_recurrent_weights_from_run_time_are_refused_naming_the_node(tmp_path):
    w, r, b = weights("LSTM", 1, 4, 5)
    refused(tmp_path, lstm_node(), rand(7, 2, 5), {"r": r, "b": b}, "must be float constants",
            runtime=[("w", w)])


class Tagger(nn.Module):
    """An embedding-free sequence model: a 2-layer bidirectional LSTM over batch-first features,
    a GRU on top, a linear head per step."""

    def __init__(self, cell):
        super().__init__()
        self.rnn = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn": nn.RNN}[cell](
            6, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.top = nn.GRU(16, 5)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        y, _ = self.rnn(x)
        z, h = self.top(y.transpose(0, 1))
        return self.head(z), h


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("cell", ["lstm", "gru", "rnn"])
def test_pytorch_recurrent_layers(compare, cell, opset):
    m = randomise(Tagger(cell))
    assert compare(m, torch.randn(2, 9, 6), opset, output_names=("y", "h")) <= FP32_BOUND


class WithStates(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 7, num_layers=1)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


def test_pytorch_lstm_with_run_time_initial_states(compare):
    m = randomise(WithStates())
    example = (torch.randn(5, 3, 4), torch.randn(1, 3, 7), torch.randn(1, 3, 7))
    assert compare(m, example, 17, input_names=("x", "h0", "c0"),
                   output_names=("y", "h", "c")) <= FP32_BOUND
