"""Operators the importer composes of IR ops (no IR op of their own): LRN, LpNormalization,
MeanVarianceNormalization, LpPool, GlobalLpPool, Shrink, ReduceLogSum, CastLike, EyeLike and
Hardmax, as other exporters than PyTorch's (Caffe2 and TensorFlow converters, ONNX Runtime's
tools, the model zoo) write them. Single-node graphs through `cuvil-bench infer` against numpy written
from the ONNX specification, at odd sizes; must-fail cases name the node."""
import numpy as np
import pytest
import torch
import torch.nn as nn
from onnx import TensorProto, helper

from conftest import randomise
from test_op_semantics import close, rand, refused, run


def lrn_reference(x, size, alpha=1e-4, beta=0.75, bias=1.0):
    # the specification's square_sum over [c - floor((size-1)/2), c + ceil((size-1)/2)]
    channels = x.shape[1]
    square_sum = np.zeros_like(x, dtype=np.float64)
    for c in range(channels):
        lo, hi = max(0, c - (size - 1) // 2), min(channels - 1, c + int(np.ceil((size - 1) / 2)))
        square_sum[:, c] = (x[:, lo:hi + 1].astype(np.float64) ** 2).sum(axis=1)
    return (x / (bias + alpha / size * square_sum) ** beta).astype(np.float32)


@pytest.mark.parametrize("size,shape", [(5, (2, 7, 3, 5)), (4, (1, 17, 2, 3)), (1, (1, 3, 4, 4)),
                                        (3, (2, 1, 5)), (7, (1, 3, 6, 6))])
def test_lrn_sums_squares_over_the_channel_window(tmp_path, size, shape):
    x = rand(*shape) * 3
    node = helper.make_node("LRN", ["x"], ["y"], size=size, alpha=0.2, beta=0.6, bias=1.5)
    (got,) = run(tmp_path, [node], {"x": x})
    close(got, lrn_reference(x, size, 0.2, 0.6, 1.5))


def test_lrn_defaults_and_pytorchs_local_response_norm(tmp_path):
    x = rand(2, 9, 4, 5) * 10
    (got,) = run(tmp_path, [helper.make_node("LRN", ["x"], ["y"], size=5)], {"x": x})
    close(got, lrn_reference(x, 5))
    # torch.nn.LocalResponseNorm computes the same formula (its own window, centred for odd sizes)
    with torch.no_grad():
        want = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=1.0)(torch.from_numpy(x)).numpy()
    close(got, want)


@pytest.mark.parametrize("p,axis", [(2, -1), (1, 1), (2, 0)])
def test_lp_normalization_divides_by_the_norm_along_the_axis(tmp_path, p, axis):
    x = rand(3, 7, 5)
    (got,) = run(tmp_path, [helper.make_node("LpNormalization", ["x"], ["y"], p=p, axis=axis)],
                 {"x": x})
    norm = np.linalg.norm(x.astype(np.float64), ord=p, axis=axis, keepdims=True)
    close(got, (x / norm).astype(np.float32))


@pytest.mark.parametrize("axes", [None, [1], [0, 1, 2, 3], [2, 3]])
def test_mean_variance_normalization_over_its_axes(tmp_path, axes):
    x = rand(3, 5, 7, 2) * 2 + 1
    kwargs = {} if axes is None else {"axes": axes}
    (got,) = run(tmp_path, [helper.make_node("MeanVarianceNormalization", ["x"], ["y"], **kwargs)],
                 {"x": x})
    ax = tuple(axes or [0, 2, 3])
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=ax, keepdims=True)
    std = np.sqrt((x64 ** 2).mean(axis=ax, keepdims=True) - mean ** 2)
    close(got, ((x64 - mean) / (std + 1e-9)).astype(np.float32))


def lp_pool_reference(x, kernel, strides, pads, p):
    n, c, h, w = x.shape
    xp = np.zeros((n, c, h + pads[0] + pads[2], w + pads[1] + pads[3]), np.float64)
    xp[:, :, pads[0]:pads[0] + h, pads[1]:pads[1] + w] = x
    oh = (xp.shape[2] - kernel[0]) // strides[0] + 1
    ow = (xp.shape[3] - kernel[1]) // strides[1] + 1
    y = np.zeros((n, c, oh, ow))
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * strides[0]:i * strides[0] + kernel[0], j * strides[1]:j * strides[1] + kernel[1]]
            y[:, :, i, j] = (np.abs(win) ** p).sum(axis=(2, 3)) ** (1.0 / p)
    return y.astype(np.float32)


@pytest.mark.parametrize("p,kernel,strides,pads", [(2, [3, 3], [2, 2], [1, 1, 1, 1]),
                                                   (1, [2, 3], [1, 2], [0, 0, 0, 0]),
                                                   (3, [3, 2], [2, 1], [1, 0, 0, 1])])
def test_lp_pool_is_the_p_norm_of_each_window(tmp_path, p, kernel, strides, pads):
    x = rand(2, 3, 7, 9)
    node = helper.make_node("LpPool", ["x"], ["y"], p=p, kernel_shape=kernel, strides=strides,
                            pads=pads)
    (got,) = run(tmp_path, [node], {"x": x})
    close(got, lp_pool_reference(x, kernel, strides, pads, p), 1e-4)


@pytest.mark.parametrize("p", [1, 2, 3])
def test_global_lp_pool_over_every_spatial_axis(tmp_path, p):
    x = rand(2, 5, 3, 7)
    (got,) = run(tmp_path, [helper.make_node("GlobalLpPool", ["x"], ["y"], p=p)], {"x": x})
    want = (np.abs(x.astype(np.float64)) ** p).sum(axis=(2, 3), keepdims=True) ** (1.0 / p)
    close(got, want.astype(np.float32), 1e-4)


def test_shrink_moves_toward_zero_and_keeps_infinities(tmp_path):
    x = np.array([-3, -1.5, -1.0, -0.2, 0, 0.2, 1.0, 1.5, 3, np.inf, -np.inf], np.float32)
    node = helper.make_node("Shrink", ["x"], ["y"], lambd=1.0, bias=0.5)
    (got,) = run(tmp_path, [node], {"x": x})
    want = np.where(x > 1.0, x - 0.5, np.where(x < -1.0, x + 0.5, 0)).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    (default,) = run(tmp_path, [helper.make_node("Shrink", ["x"], ["y"])], {"x": x})
    np.testing.assert_array_equal(default, np.where(np.abs(x) > 0.5, x, 0).astype(np.float32))


@pytest.mark.parametrize("opset", [13, 18])
def test_reduce_log_sum(tmp_path, opset):
    x = np.abs(rand(3, 4, 5)) + 0.1
    if opset >= 18:
        node = helper.make_node("ReduceLogSum", ["x", "axes"], ["y"], keepdims=0)
        inits = {"axes": np.array([1], np.int64)}
    else:
        node = helper.make_node("ReduceLogSum", ["x"], ["y"], axes=[1], keepdims=0)
        inits = {}
    (got,) = run(tmp_path, [node], {"x": x}, inits, opset=opset)
    close(got, np.log(x.astype(np.float64).sum(axis=1)).astype(np.float32))


def test_cast_like_takes_the_type_of_its_second_input(tmp_path):
    x = np.array([[-2.7, -0.5, 0.4, 1.9, 3.0]], np.float32)
    nodes = [helper.make_node("CastLike", ["x", "like_int"], ["as_int"]),
             helper.make_node("CastLike", ["as_int", "like_float"], ["y"])]
    inits = {"like_int": np.array([1], np.int64), "like_float": np.array([1.0], np.float32)}
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    np.testing.assert_array_equal(got, np.trunc(x))  # toward zero through int64, then float


@pytest.mark.parametrize("k", [0, 1, -2, 5])
def test_eye_like_has_ones_on_the_kth_diagonal(tmp_path, k):
    x = rand(3, 4)
    nodes = [helper.make_node("EyeLike", ["x"], ["eye"], k=k),
             helper.make_node("Add", ["x", "eye"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x})
    close(got, x + np.eye(3, 4, k, dtype=np.float32))


def hardmax_reference(x, axis):
    y = np.zeros_like(x)
    np.put_along_axis(y, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
    return y


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_hardmax_marks_the_first_maximum_along_the_axis(tmp_path, axis):
    x = np.round(rand(3, 5, 4) * 2)  # rounded: ties, where the first maximum wins
    (got,) = run(tmp_path, [helper.make_node("Hardmax", ["x"], ["y"], axis=axis)], {"x": x})
    np.testing.assert_array_equal(got, hardmax_reference(x, axis))


@pytest.mark.parametrize("axis", [1, 2, -1, 0, 3])
def test_hardmax_before_opset_13_reads_the_input_as_2d(tmp_path, axis):
    x = np.round(rand(2, 3, 4) * 2)
    (got,) = run(tmp_path, [helper.make_node("Hardmax", ["x"], ["y"], axis=axis)], {"x": x}, opset=11)
    a = axis + 3 if axis < 0 else axis
    rows = int(np.prod(x.shape[:a]))
    np.testing.assert_array_equal(got, hardmax_reference(x.reshape(rows, -1), 1).reshape(x.shape))


def test_caffe_style_classifier_with_lrn_against_pytorch(tmp_path):
    # AlexNet's first layers as the model zoo writes them: conv, relu, LRN, max pool; PyTorch
    # exports its LocalResponseNorm decomposed, so the graph is built here with the LRN node
    # and PyTorch's module is the reference.
    torch.manual_seed(0)
    net = randomise(nn.Sequential(nn.Conv2d(3, 16, 5, stride=2), nn.ReLU(),
                                  nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0),
                                  nn.MaxPool2d(3, 2)))
    x = rand(1, 3, 31, 29)
    w, b = net[0].weight.detach().numpy(), net[0].bias.detach().numpy()
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], strides=[2, 2]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("LRN", ["r"], ["n"], size=5, alpha=1e-4, beta=0.75, bias=2.0),
             helper.make_node("MaxPool", ["n"], ["y"], kernel_shape=[3, 3], strides=[2, 2])]
    (got,) = run(tmp_path, nodes, {"x": x}, {"w": w, "b": b}, opset=9)
    with torch.no_grad():
        close(got, net(torch.from_numpy(x)).numpy(), 1e-4)


def test_lrn_window_wider_than_the_channels_and_eye_like_far_off_the_diagonal(tmp_path):
    # A malformed file's size 2^40 or k 2^62 must neither hang nor overflow: the window clamps
    # to the channels (all of them summed), the diagonal falls outside (all zeros).
    x = rand(1, 3, 2, 2)
    node = helper.make_node("LRN", ["x"], ["y"], size=2 ** 40 + 1, alpha=2.0 ** 40, beta=0.5)
    (got,) = run(tmp_path, [node], {"x": x})
    close(got, lrn_reference(x, 7, 7.0, 0.5))  # size 7 already covers 3 channels; alpha/size = 1
    nodes = [helper.make_node("EyeLike", ["x2"], ["eye"], k=2 ** 62),
             helper.make_node("Add", ["x2", "eye"], ["y"])]
    x2 = rand(3, 4)
    (got,) = run(tmp_path, nodes, {"x2": x2})
    close(got, x2)


def test_must_fail_cases_name_the_node(tmp_path):
    x = rand(2, 3, 4, 4)
    refused(tmp_path, helper.make_node("LRN", ["x"], ["y"], name="lrn"), x, {},
            "attribute 'size' is required")
    refused(tmp_path, helper.make_node("LRN", ["x"], ["y"], name="lrn0", size=0), x, {},
            "size must be >= 1")
    refused(tmp_path, helper.make_node("LpNormalization", ["x"], ["y"], name="lpn", p=3), x, {},
            "p must be 1 or 2")
    refused(tmp_path, helper.make_node("LpNormalization", ["x"], ["y"], name="lpn_axis", axis=4),
            x, {}, "axis")
    refused(tmp_path, helper.make_node("LpPool", ["x"], ["y"], name="lppool"), x, {},
            "attribute 'kernel_shape' is required")
    refused(tmp_path, helper.make_node("GlobalLpPool", ["x"], ["y"], name="glp", p=0), x, {},
            "p must be positive")
    refused(tmp_path, helper.make_node("EyeLike", ["x"], ["y"], name="eye"), x, {},
            "input must be 2-D")
    ints = {"i": np.ones((2, 3), np.int64)}
    refused(tmp_path, helper.make_node("Hardmax", ["i"], ["y"], name="hm"), x, ints,
            "needs a float input")
    refused(tmp_path, helper.make_node("Hardmax", ["x"], ["y"], name="hm_axis", axis=5), x, {},
            "axis 5 is outside [-4, 4]", opset=11)
    refused(tmp_path, helper.make_node("Atan", ["i"], ["y"], name="atan"), x, ints,
            "a floating-point function of integers")
    refused(tmp_path, helper.make_node("Resize", ["i2", "", "sc"], ["y"], name="resize2d"), x,
            {"i2": np.ones((2, 3), np.float32), "sc": np.array([2, 2], np.float32)},
            "only 3-D to 5-D inputs")
