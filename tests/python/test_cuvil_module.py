"""The `cuvil` Python module: compile and call models (ONNX files, torch modules, built-in
suites), the GIL released during calls and taken back for signals and hooks, concurrent calls,
the harness, PyTorch side by side, and every bad input raising a Python exception that names it.
CTest runs this with PYTHONPATH=build/python and CUVIL_BENCH set."""
import os
import signal
import subprocess
import threading
import time
import warnings

import numpy as np
import pytest
import torch
import torch.nn as nn

import cuvil

CUVIL_BENCH = os.environ.get("CUVIL_BENCH", "cuvil-bench")
QUICK = dict(warmup=1, warmup_time=0, min_samples=3, min_time=0, max_noise=50)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.bn(self.conv(x))).mean((2, 3)))


def max_rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    rms = np.sqrt((b * b).mean())
    return float((np.abs(a - b) / np.maximum(np.abs(b), rms)).max())


@pytest.fixture(scope="module")
def net():
    torch.manual_seed(0)
    m = Net().eval()
    with torch.no_grad():
        m.bn.running_mean.normal_(0, 0.1)
        m.bn.running_var.uniform_(0.5, 1.5)
    return m


@pytest.fixture(scope="module")
def onnx_path(net, tmp_path_factory):
    path = tmp_path_factory.mktemp("model") / "net.onnx"
    torch.onnx.export(net, torch.randn(2, 3, 9, 9), str(path), opset_version=17,
                      input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "n"}, "y": {0: "n"}})
    return path


def test_onnx_round_trip_matches_pytorch_and_infer(net, onnx_path, tmp_path):
    m = cuvil.compile(str(onnx_path), inputs={"x": (2, 3, 9, 9)}, threads=1)
    assert m.inputs == [cuvil.TensorSpec("x", (2, 3, 9, 9), "float32")]
    assert m.outputs[0].name == "y" and m.outputs[0].shape == (2, 5)
    assert "cuvil_pass_version" in m.config and m.config_path.endswith("model.cpu.cuvilpass")
    assert "conv2d" in m.plan_summary()
    x = np.random.default_rng(1).standard_normal((2, 3, 9, 9)).astype(np.float32)
    (y,) = m(x)
    assert y.dtype == np.float32 and y.shape == (2, 5)
    with torch.no_grad():
        assert max_rel(y, net(torch.from_numpy(x)).numpy()) <= 1e-4
    np.save(tmp_path / "x.npy", x)
    subprocess.run([CUVIL_BENCH, "infer", "--model", str(onnx_path), "--input", f"x={tmp_path / 'x.npy'}",
                    "--out-dir", str(tmp_path / "out"), "--threads", "1"], check=True, capture_output=True)
    np.testing.assert_array_equal(y, np.load(tmp_path / "out" / "y.npy"))
    assert m(x=x)[0].tobytes() == y.tobytes()  # by name too
    v = m.verify()
    assert v["ok"] and v["max_relative_error"]["y"] <= v["tolerance"]
    assert v["ill_conditioned"] == []  # a continuous model


def test_torch_module_and_builtin_suite(net):
    x = torch.randn(1, 3, 6, 7)
    m = cuvil.compile(net, inputs=x, threads=1)
    with torch.no_grad():
        assert max_rel(m(x.numpy())[0], net(x).numpy()) <= 1e-4
    r = cuvil.compile("resnet50/b1", threads=2, opt_level="O0")
    assert r.inputs[0].shape == (1, 3, 224, 224) and r.name == "resnet50/b1"


@pytest.mark.parametrize("frozen", [False, True])
def test_transformer_encoder_module_exports_its_decomposed_attention(frozen):
    # In eval mode without gradients PyTorch runs these layers through fused ops ONNX cannot
    # express (aten::_native_multi_head_attention); compile() must export the decomposed path,
    # frozen parameters included, and leave the module as it found it.
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                       batch_first=True)
    m = nn.Sequential(nn.TransformerEncoder(layer, num_layers=2), nn.Linear(32, 5)).eval()
    for p in m.parameters():
        p.requires_grad_(not frozen)
    x = torch.randn(3, 7, 32)
    c = cuvil.compile(m, inputs=x, threads=1)
    with torch.no_grad():
        assert max_rel(c(x.numpy())[0], m(x).numpy()) <= 1e-4
    assert all(p.requires_grad == (not frozen) for p in m.parameters())
    assert not m.training


class ZeroesPartOfItsBias(nn.Module):
    # Swin V2's attention zeroes the key third of its qkv bias in place (`t.zero_()`), which
    # PyTorch 1.13's exporter cannot express (aten::zero).
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.arange(1.0, 7.0))

    def forward(self, x):
        b = self.bias.clone()
        b[2:4].zero_()
        return x + b


def test_module_with_an_in_place_zero_exports_every_time():
    m = ZeroesPartOfItsBias().eval()
    x = torch.randn(2, 6)
    expected = x.numpy() + np.array([1, 2, 0, 0, 5, 6], np.float32)
    for _ in range(2):  # the second export must not trip over the first one's registration
        assert max_rel(cuvil.compile(m, inputs=x, threads=1)(x.numpy())[0], expected) <= 1e-6


class ExportedAsTriple(torch.autograd.Function):
    # forward doubles, the ONNX symbolic triples: an exporter that writes another computation
    # than the module's, whatever PyTorch version runs the test.
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def symbolic(g, x):
        return g.op("Mul", x, g.op("Constant", value_t=torch.tensor(3.0)))


class MisExported(nn.Module):
    def forward(self, x):
        return torch.relu(x), ExportedAsTriple.apply(x)


def test_compile_warns_where_the_export_computes_something_else():
    x = torch.randn(2, 6)
    with pytest.warns(cuvil.ExportMismatchWarning) as caught:
        m = cuvil.compile(MisExported(), inputs=x, threads=1)
    (message,) = [str(w.message) for w in caught if w.category is cuvil.ExportMismatchWarning]
    # the second output only, with its error (|3x - 2x| / |2x| = 0.5) and the bound
    assert "MisExported" in message and "output 1" in message and "output 0" not in message
    assert "max relative error 0.5" in message and "bound 0.0001" in message
    assert max_rel(m(x.numpy())[1], 3 * x.numpy()) <= 1e-6  # cuvil computes the graph as written
    with warnings.catch_warnings():
        warnings.simplefilter("error", cuvil.ExportMismatchWarning)
        cuvil.compile(MisExported(), inputs=x, threads=1, check=False)


def test_compile_checks_a_faithful_export_without_warning(net):
    # A key padding mask: without gradients PyTorch's fused attention differs from the traced
    # path at the padded positions; the check compares against the traced path before warning.
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
    encoder = nn.TransformerEncoder(layer, num_layers=2).eval()

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = encoder

        def forward(self, x, mask):
            return self.encoder(x, src_key_padding_mask=mask)

    mask = torch.zeros(2, 5, dtype=torch.bool)
    mask[0, 3:] = True
    with warnings.catch_warnings():
        warnings.simplefilter("error", cuvil.ExportMismatchWarning)
        cuvil.compile(net, inputs=torch.randn(1, 3, 6, 7), threads=1)
        cuvil.compile(Masked(), inputs=(torch.randn(2, 5, 16), mask), threads=1)


def test_benchmark_is_the_harness(onnx_path):
    m = cuvil.compile(str(onnx_path), inputs={"x": (1, 3, 9, 9)}, threads=1)
    b = m.benchmark(**QUICK)
    assert b["count"] >= 3 and len(b["samples_ns"]) == b["count"]
    assert b["median_ci_ms"][0] <= b["median_ms"] <= b["median_ci_ms"][1]
    assert b["stop_reason"] in ("converged", "timeout", "max_samples")
    with pytest.raises(cuvil.CuvilError, match="unknown option 'min_tme'"):
        m.benchmark(min_tme=1)


# Lowerings whose kernels keep state between calls: oneDNN's primitives (and their scratchpad,
# which crashed two threads in NCHW convolutions when oneDNN managed it) and cuvil's own.
LOWERINGS = {
    "default": {},
    "onednn-nchw": {"memory_layout: nhwc": "memory_layout: nchw",
                    "conv_1x1: direct, conv_3x3: winograd, conv_other: direct":
                        "conv_1x1: onednn, conv_3x3: onednn, conv_other: onednn",
                    "linear: gemm": "linear: onednn"},
}


def config_with(onnx_path, tmp_path, edits):
    text = open(cuvil.compile(str(onnx_path), inputs={"x": (1, 3, 9, 9)}).config_path).read()
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "lowering.cuvilpass"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("lowering", sorted(LOWERINGS))
def test_concurrent_calls_equal_serial_ones(onnx_path, tmp_path, lowering):
    config = config_with(onnx_path, tmp_path, LOWERINGS[lowering])
    m = cuvil.compile(str(onnx_path), inputs={"x": (2, 3, 9, 9)}, config=config, threads=1)
    rng = np.random.default_rng(3)
    xs = [rng.standard_normal((2, 3, 9, 9)).astype(np.float32) for _ in range(8)]
    serial = [m(x)[0] for x in xs]
    results = [None] * len(xs)

    def worker(k):
        for i in range(k, len(xs), 2):
            for _ in range(20):  # long enough for the two threads to overlap
                results[i] = m(xs[i])[0]

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(results, serial):
        np.testing.assert_array_equal(a, b)
    assert 1 <= m.contexts <= 2


def test_calls_release_the_gil():
    # A pure-Python counter keeps counting while another thread is inside a cuvil call.
    m = cuvil.compile("resnet50/b1", threads=1)
    x = np.zeros((1, 3, 224, 224), np.float32)
    m(x)
    done = threading.Event()
    count = [0]

    def counter():
        while not done.is_set():
            count[0] += 1

    t = threading.Thread(target=counter)
    t.start()
    start = time.perf_counter()
    m(x)
    elapsed = time.perf_counter() - start
    done.set()
    t.join()
    assert count[0] > 1000, (count[0], elapsed)


def test_ctrl_c_raises_keyboard_interrupt_between_steps_and_the_model_stays_usable():
    m = cuvil.compile("resnet50/b16", threads=1)
    assert m.gil_check > 0
    x = np.zeros((16, 3, 224, 224), np.float32)
    # The hook runs where the Ctrl-C check does (every gil_check steps): the last step it saw
    # says how far a call got, whatever the machine's load.
    seen = []
    m.set_step_hook(lambda i, name: seen.append(i))
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        m(x)
    timer.join()
    interrupted_at = max(seen, default=-1)
    seen.clear()
    (y,) = m(x[:16])
    assert y.shape == (16, 1000) and np.isfinite(y).all()
    # It stopped mid-run: before the steps a whole call reaches (a call takes seconds here).
    assert interrupted_at < max(seen), (interrupted_at, max(seen))


def test_step_hook_sees_steps_and_its_exception_ends_the_call(onnx_path):
    m = cuvil.compile(str(onnx_path), inputs={"x": (1, 3, 9, 9)}, threads=1)
    seen = []
    m.set_step_hook(lambda i, name: seen.append((i, name)))
    x = np.zeros((1, 3, 9, 9), np.float32)
    m(x)
    if m.gil_check and len(m.plan_summary().splitlines()) - 1 >= m.gil_check:
        assert seen and all(isinstance(i, int) and isinstance(n, str) for i, n in seen)

    def boom(i, name):
        raise RuntimeError("stop here")

    m.set_step_hook(boom)
    if seen:
        with pytest.raises(RuntimeError, match="stop here"):
            m(x)
    m.set_step_hook(None)
    assert m(x)[0].shape == (1, 5)
    with pytest.raises(TypeError):
        m.set_step_hook(3)


def test_gil_check_is_the_python_binding_parameter(onnx_path, tmp_path):
    config = open(cuvil.compile(str(onnx_path), inputs={"x": (1, 3, 9, 9)}).config_path).read()
    steps = {}
    for value in (0, 1):
        path = tmp_path / f"g{value}.cuvilpass"
        path.write_text(config.replace("gil_check: 16", f"gil_check: {value}"))
        m = cuvil.compile(str(onnx_path), inputs={"x": (1, 3, 9, 9)}, config=str(path), threads=1)
        assert m.gil_check == value
        steps[value] = m.benchmark(**QUICK)
    assert steps[0]["gil_checks"] == 0
    n_steps = len(cuvil.compile(str(onnx_path), inputs={"x": (1, 3, 9, 9)}).plan_summary().splitlines()) - 1
    runs = steps[1]["count"] + len(steps[1]["warmup_ns"])
    assert steps[1]["gil_checks"] == runs * n_steps


def test_bad_inputs_name_what_is_wrong(onnx_path):
    m = cuvil.compile(str(onnx_path), inputs={"x": (1, 3, 9, 9)}, threads=1)
    good = np.zeros((1, 3, 9, 9), np.float32)
    with pytest.raises(ValueError, match=r"expected 1 input\(s\) \['x'\], got 2"):
        m(good, good)
    with pytest.raises(ValueError, match=r"unknown input\(s\) \['z'\]"):
        m(z=good)
    with pytest.raises(ValueError, match=r"input 'x' expects shape \(1, 3, 9, 9\), got \(1, 3, 9, 8\)"):
        m(np.zeros((1, 3, 9, 8), np.float32))
    with pytest.raises(TypeError, match="input 'x' expects float32, got float64"):
        m(good.astype(np.float64))
    # A non-contiguous float32 view is converted, not refused.
    wide = np.zeros((1, 3, 9, 18), np.float32)
    assert m(wide[..., ::2])[0].shape == (1, 5)
    for bad in (-1, 1025, 1.5, "2"):
        with pytest.raises(ValueError, match="threads must be an integer in 0..1024"):
            cuvil.compile(str(onnx_path), threads=bad)
    with pytest.raises(ValueError, match="opt_level must be one of O0, O1, O2, O3"):
        cuvil.compile(str(onnx_path), opt_level="O4")
    with pytest.raises(cuvil.CuvilError, match="no-such.onnx"):
        cuvil.compile("/no-such.onnx")
    with pytest.raises(cuvil.CuvilError, match="unknown suite"):
        cuvil.compile("resnet51/b1")
    with pytest.raises(TypeError, match="model must be"):
        cuvil.compile(42)
    m.close()
    with pytest.raises(RuntimeError, match="closed"):
        m(good)


def test_export_failure_names_the_module_class():
    class NotTraceable(nn.Module):
        def forward(self, x):  # no ONNX symbolic for the FFT in torch 1.13
            return torch.fft.rfft(x).abs()

    with pytest.raises(ValueError, match="torch.onnx.export failed for NotTraceable"):
        cuvil.compile(NotTraceable(), inputs=torch.randn(2, 2))
    with pytest.raises(ValueError, match="needs inputs="):
        cuvil.compile(NotTraceable())


def test_compare_beside_pytorch(net):
    r = cuvil.compare(net, torch.randn(1, 3, 9, 9), threads=1, verbose=False, **QUICK)
    for key in ("eager", "torchscript", "cuvil"):
        assert r[key]["count"] >= 3
    assert r["max_relative_error"]["eager"] <= 1e-4
    assert r["max_relative_error"]["torchscript"] <= 1e-4
    assert r["threads"] == 1
