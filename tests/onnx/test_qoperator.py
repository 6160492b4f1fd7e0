"""ONNX Runtime's quantized operator forms: QLinearConv and QLinearMatMul (static quantization,
QOperator format), DynamicQuantizeLinear with MatMulInteger (dynamic quantization of linear
layers) and ConvInteger. Graphs built with onnx.helper as ONNX Runtime's quantizer writes them,
through `cuvil-bench infer`, against numpy written from the ONNX specification (integer
arithmetic exact, requantization in float32 as ONNX Runtime computes it)."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from test_op_semantics import rand, refused, run

RNG = np.random.default_rng(11)


def quantize(x, scale, zp, lo=0, hi=255):
    return np.clip(np.round(x.astype(np.float32) / np.float32(scale)) + zp, lo, hi)


def np_conv_int(x, w, stride=1, pad=0):
    n, c, h, wd = x.shape
    o, _, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    y = np.zeros((n, o, oh, ow), np.int64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride:i * stride + k, j * stride:j * stride + k].astype(np.int64)
            y[:, :, i, j] = np.einsum("nchw,ochw->no", win, w.astype(np.int64))
    return y


@pytest.mark.parametrize("per_channel", [False, True])
def test_qlinear_conv_between_quantize_and_dequantize(tmp_path, per_channel):
    x = rand(1, 3, 9, 8)
    xs, xzp = np.float32(0.03), np.uint8(120)
    w = RNG.integers(-100, 100, (5, 3, 3, 3)).astype(np.int8)
    ws = (RNG.uniform(0.002, 0.01, 5) if per_channel else np.array(0.006)).astype(np.float32)
    b = RNG.integers(-2000, 2000, 5).astype(np.int32)
    ys, yzp = np.float32(0.05), np.uint8(128)
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xzp"], ["xq"]),
             helper.make_node("QLinearConv", ["xq", "xs", "xzp", "w", "ws", "wzp", "ys", "yzp", "b"],
                              ["yq"], pads=[1, 1, 1, 1], strides=[2, 1]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yzp"], ["y"])]
    inits = {"xs": xs, "xzp": xzp, "w": w, "ws": ws, "wzp": np.zeros(ws.shape, np.int8), "b": b,
             "ys": ys, "yzp": yzp}
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    xq = quantize(x, xs, xzp).astype(np.int64) - int(xzp)
    acc = np.zeros((1, 5, 5, 8), np.int64)
    xp = np.pad(xq, ((0, 0), (0, 0), (1, 1), (1, 1)))
    for i in range(5):
        for j in range(8):
            win = xp[:, :, 2 * i:2 * i + 3, j:j + 3]
            acc[:, :, i, j] = np.einsum("nchw,ochw->no", win, w.astype(np.int64))
    acc += b[None, :, None, None]
    scale = (xs * ws).reshape(1, -1, 1, 1) if per_channel else xs * ws
    want = (quantize(acc * scale, ys, yzp) - int(yzp)) * ys
    # requantization rounds a float product: a value on a rounding boundary may land one step away
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) <= ys * 1.001
    assert np.mean(np.abs(got - want) > ys / 2) < 0.02


def test_qlinear_matmul_with_per_column_weight_scales(tmp_path):
    a = rand(2, 4, 6)
    a_s, a_zp = np.float32(0.02), np.uint8(130)
    b = RNG.integers(-90, 90, (6, 5)).astype(np.int8)
    b_s = RNG.uniform(0.01, 0.03, 5).astype(np.float32)
    ys, yzp = np.float32(0.04), np.uint8(100)
    nodes = [helper.make_node("QuantizeLinear", ["a", "as", "azp"], ["aq"]),
             helper.make_node("QLinearMatMul", ["aq", "as", "azp", "b", "bs", "bzp", "ys", "yzp"], ["yq"]),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yzp"], ["y"])]
    inits = {"as": a_s, "azp": a_zp, "b": b, "bs": b_s, "bzp": np.zeros(5, np.int8), "ys": ys,
             "yzp": yzp}
    (got,) = run(tmp_path, nodes, {"a": a}, inits)
    aq = quantize(a, a_s, a_zp) - int(a_zp)
    real = (aq * a_s) @ (b.astype(np.float32) * b_s)
    want = (quantize(real, ys, yzp) - int(yzp)) * ys
    assert np.max(np.abs(got - want)) <= ys * 1.001


def dynamic_quantize(x):
    lo, hi = np.float32(min(x.min(), 0)), np.float32(max(x.max(), 0))
    scale = np.float32((hi - lo) / np.float32(255))
    zp = np.clip(np.round(-lo / scale), 0, 255)
    return quantize(x, scale, zp), scale, zp


def test_dynamic_quantization_of_a_linear_layer(tmp_path):
    # What onnxruntime.quantization.quantize_dynamic writes for a linear layer: the activation
    # quantized at run time, an integer matmul, the product of scales, the bias in float.
    x = rand(3, 7, 16) * 2
    w = RNG.integers(-127, 127, (16, 10)).astype(np.int8)
    ws = np.float32(0.01)
    bias = rand(10)
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xzp"]),
             helper.make_node("MatMulInteger", ["xq", "w", "xzp", "wzp"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["accf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["xs", "ws"], ["s"]),
             helper.make_node("Mul", ["accf", "s"], ["prod"]),
             helper.make_node("Add", ["prod", "bias"], ["y"]),
             helper.make_node("Cast", ["xzp"], ["zpf"], to=TensorProto.FLOAT)]
    inits = {"w": w, "wzp": np.int8(0), "ws": ws, "bias": bias}
    y, scale, zp = run(tmp_path, nodes, {"x": x}, inits, outputs=("y", "xs", "zpf"))
    xq, want_scale, want_zp = dynamic_quantize(x)
    np.testing.assert_allclose(scale, want_scale, rtol=1e-6)
    assert zp == want_zp
    want = ((xq - want_zp) @ w.astype(np.float64)) * (want_scale * ws) + bias
    np.testing.assert_allclose(y, want.astype(np.float32), rtol=1e-5, atol=1e-5)


def test_dynamic_quantize_of_zeros_and_of_positive_values(tmp_path):
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["q", "s", "z"]),
             helper.make_node("Cast", ["q"], ["qf"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["z"], ["zf"], to=TensorProto.FLOAT)]
    zeros = np.zeros((2, 3), np.float32)
    q, s, z = run(tmp_path, nodes, {"x": zeros}, outputs=("qf", "s", "zf"))
    assert not q.any() and s == 0 and z == 0
    pos = np.abs(rand(4, 5)) + 0.1  # the range starts at 0: zero point 0
    q, s, z = run(tmp_path, nodes, {"x": pos}, outputs=("qf", "s", "zf"))
    want_q, want_s, want_z = dynamic_quantize(pos)
    np.testing.assert_array_equal(q, want_q)
    assert z == want_z == 0


def test_matmul_integer_with_per_row_and_per_column_zero_points(tmp_path):
    a = RNG.integers(0, 255, (4, 6)).astype(np.uint8)
    b = RNG.integers(-128, 127, (6, 3)).astype(np.int8)
    azp = RNG.integers(0, 255, 4).astype(np.uint8)
    bzp = RNG.integers(-10, 10, 3).astype(np.int8)
    nodes = [helper.make_node("MatMulInteger", ["a", "b", "azp", "bzp"], ["acc"]),
             helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
    (got,) = run(tmp_path, nodes, {}, {"a": a, "b": b, "azp": azp, "bzp": bzp})
    want = (a.astype(np.int64) - azp[:, None].astype(np.int64)) @ (b.astype(np.int64) - bzp.astype(np.int64))
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_conv_integer_of_a_run_time_input(tmp_path):
    x = rand(1, 2, 6, 7)
    w = RNG.integers(0, 255, (3, 2, 3, 3)).astype(np.uint8)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["xq"]),
             helper.make_node("ConvInteger", ["xq", "w", "zp", "wzp"], ["acc"], pads=[1, 1, 1, 1]),
             helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
    inits = {"s": np.float32(0.02), "zp": np.uint8(128), "w": w, "wzp": np.uint8(127)}
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    xq = quantize(x, 0.02, 128).astype(np.int64) - 128
    want = np_conv_int(xq, w.astype(np.int64) - 127, pad=1)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def test_refusals_name_the_node(tmp_path):
    x = rand(2, 4)
    refused(tmp_path, helper.make_node("MatMulInteger", ["x", "w"], ["y"], name="mmi"), x,
            {"w": RNG.integers(0, 9, (4, 3)).astype(np.uint8)}, "must hold integers")
    refused(tmp_path, helper.make_node("DynamicQuantizeLinear", ["i"], ["y", "s", "z"], name="dq"),
            x, {"i": np.ones((2, 2), np.int64)}, "takes floats")
