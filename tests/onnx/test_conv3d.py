"""3-D Conv, MaxPool and AveragePool (map_conv3d.cc): single nodes against numpy written from the
ONNX specification (strides, dilations, pads, groups, odd sizes), PyTorch's Conv3d / pools /
BatchNorm3d and torchvision's video classifiers against PyTorch, and refusals."""
import itertools

import numpy as np
import pytest
import torch
import torch.nn as nn
import torchvision
from onnx import helper

from conftest import FP32_BOUND, randomise
from test_op_semantics import close, rand, refused, run


def np_conv3d(x, w, b=None, strides=(1, 1, 1), pads=(0,) * 6, dilations=(1, 1, 1), group=1):
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[a], pads[a + 3]) for a in range(3)])
    o, cg = w.shape[:2]
    k = w.shape[2:]
    out = [(x.shape[2 + a] - dilations[a] * (k[a] - 1) - 1) // strides[a] + 1 for a in range(3)]
    y = np.zeros((x.shape[0], o, *out))
    og = o // group
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        for tap in itertools.product(*[range(kk) for kk in k]):
            sl = tuple(slice(tap[a] * dilations[a], tap[a] * dilations[a] + strides[a] * (out[a] - 1) + 1, strides[a])
                       for a in range(3))
            y[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...", xg[(slice(None), slice(None), *sl)],
                                                   w[(slice(g * og, (g + 1) * og), slice(None), *tap)])
    if b is not None:
        y += b.reshape(1, -1, 1, 1, 1)
    return y.astype(np.float32)


def np_pool3d(x, kernel, strides, pads, op, include_pad=0):
    fill = -np.inf if op == "max" else 0.0
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(pads[a], pads[a + 3]) for a in range(3)],
                constant_values=fill)
    ones = np.pad(np.ones(x.shape[2:]), [(pads[a], pads[a + 3]) for a in range(3)])
    out = [(xp.shape[2 + a] - kernel[a]) // strides[a] + 1 for a in range(3)]
    y = np.zeros(x.shape[:2] + tuple(out))
    for t in itertools.product(*[range(o) for o in out]):
        win = tuple(slice(t[a] * strides[a], t[a] * strides[a] + kernel[a]) for a in range(3))
        block = xp[(slice(None), slice(None), *win)]
        if op == "max":
            y[(slice(None), slice(None), *t)] = block.max(axis=(2, 3, 4))
        else:
            count = np.prod(kernel) if include_pad else ones[win].sum()
            y[(slice(None), slice(None), *t)] = block.sum(axis=(2, 3, 4)) / count
    return y.astype(np.float32)


CONV_CASES = {
    "r3d_stem": ((1, 3, 5, 9, 9), (4, 3, 3, 7, 7), dict(strides=[1, 2, 2], pads=[1, 3, 3, 1, 3, 3])),
    "temporal_k3_s2": ((2, 4, 7, 3, 4), (5, 4, 3, 1, 1), dict(strides=[2, 1, 1], pads=[1, 0, 0, 1, 0, 0])),
    "spatial_1xkxk": ((1, 3, 3, 6, 5), (2, 3, 1, 3, 3), dict(pads=[0, 1, 1, 0, 1, 1])),
    "dilated_asymmetric": ((1, 2, 8, 7, 6), (3, 2, 2, 3, 2), dict(dilations=[3, 2, 1], pads=[0, 2, 1, 1, 0, 0])),
    "groups": ((1, 6, 4, 5, 5), (4, 3, 3, 3, 3), dict(group=2, strides=[1, 2, 1], pads=[1, 1, 1, 1, 1, 1])),
    "depthwise": ((1, 4, 5, 4, 4), (4, 1, 3, 3, 3), dict(group=4, pads=[1, 1, 1, 1, 1, 1])),
    "one_frame": ((1, 3, 1, 3, 3), (2, 3, 1, 1, 1), dict()),
}


@pytest.mark.parametrize("case", CONV_CASES.keys())
def test_conv3d_matches_the_specification(tmp_path, case):
    xs, ws, attrs = CONV_CASES[case]
    x, w, b = rand(*xs), rand(*ws), rand(ws[0])
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], **attrs)
    (got,) = run(tmp_path, [node], {"x": x}, {"w": w, "b": b})
    close(got, np_conv3d(x, w, b, **{k: v for k, v in attrs.items()}))


def test_conv3d_with_run_time_weights(tmp_path):
    x, w = rand(1, 2, 4, 5, 5), rand(3, 2, 2, 3, 3)
    node = helper.make_node("Conv", ["x", "w"], ["y"], strides=[2, 1, 2])
    (got,) = run(tmp_path, [node], {"x": x, "w": w})
    close(got, np_conv3d(x, w, strides=(2, 1, 2)))


@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
@pytest.mark.parametrize("kernel,strides,pads,include_pad", [
    ([1, 3, 3], [1, 2, 2], [0, 1, 1, 0, 1, 1], 0),
    ([3, 3, 3], [2, 2, 2], [1, 1, 1, 1, 1, 1], 0),
    ([3, 3, 3], [2, 2, 2], [1, 1, 1, 1, 1, 1], 1),
    ([2, 2, 2], [2, 2, 2], [0, 0, 0, 0, 0, 0], 0),
    ([2, 1, 1], [1, 1, 1], [1, 0, 0, 0, 0, 0], 1),
])
def test_pool3d_matches_the_specification(tmp_path, op, kernel, strides, pads, include_pad):
    x = rand(2, 3, 7, 6, 5)
    attrs = dict(kernel_shape=kernel, strides=strides, pads=pads)
    if op == "AveragePool":
        attrs["count_include_pad"] = include_pad
    (got,) = run(tmp_path, [helper.make_node(op, ["x"], ["y"], **attrs)], {"x": x})
    close(got, np_pool3d(x, kernel, strides, pads, "max" if op == "MaxPool" else "avg", include_pad))


@pytest.mark.parametrize("node,why", [
    (helper.make_node("MaxPool", ["x"], ["y"], name="ct", kernel_shape=[2, 2, 2], ceil_mode=1),
     "ceil_mode is not supported for 3-D pooling"),
    (helper.make_node("Conv", ["x", "w"], ["y"], name="ct", pads=[9, 0, 0, 0, 0, 0], strides=[1, 1, 1]),
     "output would be empty"),
    (helper.make_node("AveragePool", ["x"], ["y"], name="ct", kernel_shape=[2, 1, 1], pads=[2, 0, 0, 0, 0, 0]),
     "a window covers only padding frames"),
])
def test_3d_forms_it_cannot_honour_are_refused_naming_the_node(tmp_path, node, why):
    refused(tmp_path, node, rand(1, 2, 3, 4, 4), {"w": rand(2, 2, 20, 1, 1)} if node.op_type == "Conv" else {}, why)


class Clip3d(nn.Module):
    """Conv3d, BatchNorm3d, pools and a temporal-only conv, as video networks mix them."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv3d(3, 8, (3, 5, 5), stride=(1, 2, 2), padding=(1, 2, 2), bias=False), nn.BatchNorm3d(8), nn.ReLU(),
            nn.MaxPool3d((1, 3, 3), stride=(1, 2, 2), padding=(0, 1, 1)),
            nn.Conv3d(8, 8, (3, 1, 1), padding=(1, 0, 0), groups=2), nn.BatchNorm3d(8), nn.ReLU(),
            nn.AvgPool3d(2, stride=2), nn.Conv3d(8, 6, 3, padding=1, dilation=(1, 2, 1)))
        self.head = nn.Linear(6, 5)

    def forward(self, x):
        return self.head(nn.functional.adaptive_avg_pool3d(self.body(x), 1).flatten(1))


@pytest.mark.parametrize("opset", [13, 17])
def test_pytorch_conv3d_pools_and_batchnorm3d(compare, opset):
    assert compare(randomise(Clip3d()), torch.randn(2, 3, 6, 23, 19), opset) <= FP32_BOUND


class UNet3d(nn.Module):
    """A 3-D U-Net as volumetric segmentation writes it: conv blocks with instance norm, max pool
    down, a transposed convolution (k = s = 2) up, the skip concatenated."""

    def __init__(self):
        super().__init__()
        block = lambda i, o: nn.Sequential(nn.Conv3d(i, o, 3, padding=1), nn.InstanceNorm3d(o, affine=True),
                                           nn.LeakyReLU(0.01))
        self.down, self.bottom = block(2, 8), block(8, 16)
        self.up = nn.ConvTranspose3d(16, 8, 2, stride=2)
        self.out = nn.Sequential(block(16, 8), nn.Conv3d(8, 3, 1))

    def forward(self, x):
        skip = self.down(x)
        return self.out(torch.cat([self.up(self.bottom(nn.functional.max_pool3d(skip, 2))), skip], 1))


@pytest.mark.parametrize("opset", [13, 17])
def test_pytorch_unet3d_with_transposed_3d_convolutions(compare, opset):
    assert compare(randomise(UNet3d()), torch.randn(1, 2, 6, 10, 8), opset) <= FP32_BOUND


@pytest.mark.parametrize("name", ["r3d_18", "mc3_18", "r2plus1d_18"])
def test_torchvision_video_classifiers(compare, name):
    m = randomise(getattr(torchvision.models.video, name)(num_classes=7))
    assert compare(m, torch.randn(1, 3, 4, 32, 32), 17) <= FP32_BOUND
