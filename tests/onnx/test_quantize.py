"""QuantizeLinear and DequantizeLinear (the QDQ form of quantized models): ONNX graphs against
numpy written from the ONNX specification (round half to even, saturation, per-tensor and
per-axis parameters, integer weights folded), a model PyTorch's quantization-aware training
exports against PyTorch, and refusals naming the node."""
import numpy as np
import pytest
import torch
from onnx import TensorProto, helper

from conftest import export, infer
from test_op_semantics import close, rand, refused, run

U8, I8 = np.uint8, np.int8


def np_quantize(x, scale, zp, axis=1, dtype=U8):
    info = np.iinfo(dtype)
    if np.ndim(scale) == 1:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zp = np.reshape(scale, shape), np.reshape(zp, shape)
    q = np.rint(x / np.float32(scale)) + zp.astype(np.float32)  # rint: halves to even
    return np.clip(q, info.min, info.max)


def np_dequantize(q, scale, zp, axis=1):
    if np.ndim(scale) == 1:
        shape = [1] * q.ndim
        shape[axis] = -1
        scale, zp = np.reshape(scale, shape), np.reshape(zp, shape)
    return ((q.astype(np.int64) - zp.astype(np.int64)) * scale).astype(np.float32)


def as_int64(name, out):
    # The graph helper declares integer outputs int64; a quantized tensor is (u)int8.
    return helper.make_node("Cast", [name], [out], to=TensorProto.INT64)


def test_quantize_rounds_halves_to_even_and_saturates_to_uint8(tmp_path):
    scale = np.float32(0.5)
    x = np.array([0.25, 0.75, 1.25, -0.25, 200.0, -3.0, 127.6, 1.0], np.float32)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s"], ["q"]),  # no zero point: uint8, 0
             as_int64("q", "y")]
    (got,) = run(tmp_path, nodes, {"x": x}, {"s": np.array(scale)}, int_outputs=("y",))
    np.testing.assert_array_equal(got, [0, 2, 2, 0, 255, 0, 255, 2])
    np.testing.assert_array_equal(got, np_quantize(x, scale, np.uint8(0)))


@pytest.mark.parametrize("dtype,zp", [(I8, -3), (U8, 128)])
def test_quantize_then_dequantize_per_tensor(tmp_path, dtype, zp):
    x = rand(2, 3, 5) * 4
    scale, zero = np.float32(0.03), np.array(zp, dtype)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x}, {"s": np.array(scale), "z": zero})
    want = np_dequantize(np_quantize(x, scale, zero, dtype=dtype), scale, zero)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6)


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_quantize_and_dequantize_per_axis(tmp_path, axis):
    x = rand(3, 4, 7) * 3
    n = x.shape[axis]
    scale = np.linspace(0.01, 0.05, n).astype(np.float32)
    zero = np.arange(n, dtype=np.int8) - 2
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q8"], axis=axis),
             as_int64("q8", "q"),
             helper.make_node("DequantizeLinear", ["q8", "s", "z"], ["y"], axis=axis)]
    q, y = run(tmp_path, nodes, {"x": x}, {"s": scale, "z": zero}, outputs=("q", "y"),
               int_outputs=("q",), opset=13)
    a = axis % x.ndim
    want_q = np_quantize(x, scale, zero, a, I8)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_allclose(y, np_dequantize(want_q, scale, zero, a), rtol=0, atol=1e-6)


def test_int8_weights_and_int32_bias_fold_into_a_convolution(tmp_path):
    # ONNX Runtime's QDQ form: DequantizeLinear of integer initializers feeding Conv.
    x = rand(1, 3, 9, 9)
    w = np.random.default_rng(1).integers(-127, 128, (4, 3, 3, 3)).astype(np.int8)
    w_scale = np.array([0.01, 0.02, 0.005, 0.03], np.float32)
    b = np.array([100, -2000, 70000, 5], np.int32)
    b_scale = np.float32(1e-4)
    nodes = [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], axis=0),
             helper.make_node("DequantizeLinear", ["b", "bs"], ["bf"]),
             helper.make_node("Conv", ["x", "wf", "bf"], ["y"], pads=[1, 1, 1, 1])]
    (got,) = run(tmp_path, nodes, {"x": x},
                 {"w": w, "ws": w_scale, "wz": np.zeros(4, np.int8), "b": b,
                  "bs": np.array(b_scale)}, opset=13)
    wf = w.astype(np.float32) * w_scale[:, None, None, None]
    want = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wf),
                                      torch.from_numpy((b * b_scale).astype(np.float32)), padding=1).numpy()
    close(got, want, 1e-5)


def test_dequantize_of_a_run_time_int8_input(tmp_path):
    q = np.random.default_rng(2).integers(-128, 128, (2, 6)).astype(np.int8)
    node = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])
    (got,) = run(tmp_path, [node], {"q": q.astype(np.int64)},
                 {"s": np.array(np.float32(0.25)), "z": np.array(5, np.int8)})
    np.testing.assert_array_equal(got, np_dequantize(q, np.float32(0.25), np.int8(5)))


# ---- refused ----------------------------------------------------------------------------------

def test_a_run_time_scale_is_refused(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="Q")
    refused(tmp_path, node, rand(4), {}, "input 1 ('s') must be a constant",
            runtime=[("s", np.ones(1, np.float32))])


def test_a_zero_scale_is_refused(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], name="Q")
    refused(tmp_path, node, rand(4), {"s": np.array(np.float32(0))}, "must be finite and nonzero")


def test_a_per_axis_scale_of_the_wrong_length_is_refused(tmp_path):
    node = helper.make_node("DequantizeLinear", ["w", "s"], ["y"], axis=0, name="D")
    refused(tmp_path, node, rand(4, 3), {"w": np.ones((4, 3), np.int8), "s": np.ones(3, np.float32)},
            "holds 3 values; axis 0 of input 0 has length 4", opset=13)


def test_a_per_axis_scale_on_an_axis_the_input_lacks_is_refused(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=2, name="Q")
    refused(tmp_path, node, rand(2, 3), {"s": np.ones(3, np.float32)},
            "axis 2 out of range for rank 2", opset=13)


def test_a_zero_point_off_its_scale_shape_is_refused(tmp_path):
    node = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1, name="Q")
    refused(tmp_path, node, rand(2, 3), {"s": np.ones(3, np.float32), "z": np.zeros(2, np.int8)},
            "the zero point (input 2) has shape [2]", opset=13)


# ---- PyTorch quantization-aware training -------------------------------------------------------

class QatNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.relu = torch.nn.ReLU()
        self.conv2 = torch.nn.Conv2d(8, 8, 3, stride=2)
        self.fc = torch.nn.Linear(8 * 7 * 7, 10)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.relu(self.conv(self.quant(x)))
        x = self.conv2(x)
        return self.dequant(self.fc(torch.flatten(x, 1)))


@pytest.mark.parametrize("per_channel", [False, True])
def test_pytorch_quantization_aware_training_export(tmp_path, per_channel):
    from torch.ao import quantization as tq

    weights = tq.FakeQuantize.with_args(
        observer=tq.MovingAveragePerChannelMinMaxObserver if per_channel
        else tq.MovingAverageMinMaxObserver,
        quant_min=-128, quant_max=127, dtype=torch.qint8,
        qscheme=torch.per_channel_symmetric if per_channel else torch.per_tensor_symmetric)
    activations = tq.FakeQuantize.with_args(observer=tq.MovingAverageMinMaxObserver,
                                            quant_min=0, quant_max=255, dtype=torch.quint8)
    torch.manual_seed(0)
    model = QatNet()
    model.qconfig = tq.QConfig(activation=activations, weight=weights)
    tq.prepare_qat(model.train(), inplace=True)
    for _ in range(4):  # calibrate the observers
        model(torch.randn(8, 3, 16, 16))
    model.apply(tq.disable_observer).eval()
    x = torch.randn(4, 3, 16, 16)
    path = export(model, (x,), tmp_path / "qat.onnx", 13, ["x"], ["y"])
    got = infer(path, {"x": x.numpy()}, tmp_path / "out")["y"]
    with torch.no_grad():
        want = model(x).numpy()
    # The output is quantized, so results agree to the step, except where PyTorch's
    # x * (1 / scale) and ONNX's x / scale round a value on a boundary apart: per channel, one of
    # the first convolution's 216 weights lands a step apart and moves a fifth of the outputs one
    # step; per tensor nothing does.
    step = float(model.fc.activation_post_process.scale)
    off = np.abs(got - want) > 1e-6
    assert np.abs(got - want).max() <= 2 * step + 1e-6
    assert off.mean() <= (0.3 if per_channel else 0.02), off.mean()
