"""GridSample (F.grid_sample) exported by PyTorch, against PyTorch: every mode, padding mode and
align_corners, grids reaching far outside the image, and a spatial transformer whose grid comes
from a predicted affine transform."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnx import helper

from conftest import FP32_BOUND
from test_op_semantics import close, rand, refused, run


class Sample(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, x, grid):
        return F.grid_sample(x, grid, **self.kwargs)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sample_against_pytorch(compare, mode, padding_mode, align_corners):
    # Grid coordinates up to 3x outside [-1, 1]: several reflections, corners off the image.
    torch.manual_seed(0)
    x, grid = torch.randn(2, 3, 7, 9), torch.rand(2, 5, 6, 2) * 6 - 3
    m = Sample(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
    assert compare(m, (x, grid), 16, input_names=("x", "grid")) <= FP32_BOUND


def test_grid_sample_of_a_one_pixel_high_image(compare):
    torch.manual_seed(0)
    m = Sample(mode="bilinear", padding_mode="reflection", align_corners=True)
    assert compare(m, (torch.randn(1, 2, 1, 5), torch.rand(1, 3, 4, 2) * 4 - 2), 16,
                   input_names=("x", "grid")) <= FP32_BOUND


class SpatialTransformer(nn.Module):
    """A localisation network predicts an affine transform per image; the sampling grid is
    that transform applied to the output pixels' normalised coordinates (affine_grid written
    out: PyTorch 1.13 cannot export affine_grid itself)."""

    def __init__(self, size=12):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(2),
                                 nn.Flatten(), nn.Linear(16, 6))
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size),
                                indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys, torch.ones_like(xs)], -1).view(-1, 3))
        self.size = size
        self.head = nn.Conv2d(1, 2, 3)

    def forward(self, x):
        theta = self.loc(x).view(-1, 2, 3) * 0.3 + torch.tensor([[1.0, 0, 0], [0, 1.0, 0]])
        grid = (self.base @ theta.transpose(1, 2)).view(-1, self.size, self.size, 2)
        return self.head(F.grid_sample(x, grid, align_corners=True))


@pytest.mark.parametrize("opset", [16, 17])
def test_spatial_transformer(compare, opset):
    torch.manual_seed(0)
    assert compare(SpatialTransformer().eval(), torch.randn(3, 1, 12, 12), opset) <= FP32_BOUND


@pytest.mark.parametrize("attrs,why", [
    ({"mode": "bicubic"}, "mode 'bicubic' is not supported"),
    ({"padding_mode": "wrap"}, "padding_mode 'wrap' is not supported"),
])
def test_grid_sample_it_cannot_honour_is_refused_naming_the_node(tmp_path, attrs, why):
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="warp", **attrs)
    refused(tmp_path, node, rand(1, 2, 4, 4), {"grid": rand(1, 3, 3, 2)}, why, opset=16)


def test_grid_sample_grid_of_the_wrong_shape_is_refused(tmp_path):
    node = helper.make_node("GridSample", ["x", "grid"], ["y"], name="warp")
    refused(tmp_path, node, rand(1, 2, 4, 4), {"grid": rand(1, 3, 3, 3)},
            "grid has shape [1, 3, 3, 3], expected [1, H_out, W_out, 2]", opset=16)


@pytest.mark.parametrize("size", [[2, 3, 5, 7], [3, 1, 1, 4], [2, 2, 17, 1], [2, 1, 3, 4, 5]])
@pytest.mark.parametrize("align_corners", [0, 1])
def test_affine_grid_against_pytorch(tmp_path, size, align_corners):
    # Opset 20's AffineGrid (what PyTorch 2 writes for F.affine_grid), theta at run time.
    r = len(size) - 2
    theta = torch.randn(size[0], r, r + 1)
    node = helper.make_node("AffineGrid", ["theta", "size"], ["y"], align_corners=align_corners)
    (got,) = run(tmp_path, [node], {"theta": theta.numpy()},
                 {"size": np.array(size, np.int64)}, opset=20)
    want = F.affine_grid(theta, size, align_corners=bool(align_corners)).numpy()
    close(got, want)


def test_affine_grid_feeding_grid_sample_against_pytorch(tmp_path):
    # A spatial transformer's sampling as PyTorch 2 exports it: AffineGrid, then GridSample.
    x, theta = torch.randn(2, 3, 9, 11), torch.randn(2, 2, 3) * 0.5
    nodes = [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0),
             helper.make_node("GridSample", ["x", "grid"], ["y"], align_corners=0)]
    (got,) = run(tmp_path, nodes, {"x": x.numpy(), "theta": theta.numpy()},
                 {"size": np.array([2, 3, 6, 5], np.int64)}, opset=20)
    want = F.grid_sample(x, F.affine_grid(theta, [2, 3, 6, 5], align_corners=False),
                         align_corners=False).numpy()
    close(got, want, 1e-4)


@pytest.mark.parametrize("theta_shape,size,why", [
    ((2, 2, 3), [2, 3, 4], "size must be [N, C, H, W] or [N, C, D, H, W]"),
    ((2, 2, 3), [3, 1, 4, 4], "theta of [2, 2, 3] for a size of batch 3: [N, 2, 3] is needed"),
    ((2, 2, 3), [2, 1, 2, 4, 4], "[N, 3, 4] is needed"),
    ((2, 2, 3), [2, 1, 0, 4], "size has an empty spatial axis"),
])
def test_affine_grid_it_cannot_honour_is_refused_naming_the_node(tmp_path, theta_shape, size, why):
    node = helper.make_node("AffineGrid", ["x", "size"], ["y"], name="grid")
    refused(tmp_path, node, rand(*theta_shape), {"size": np.array(size, np.int64)}, why, opset=20)


@pytest.mark.parametrize("c_in,c_out,k,stride,pad,dil,groups,offset_groups,mask,bias", [
    (3, 4, 3, 1, 1, 1, 1, 1, False, True),      # DCNv1
    (4, 6, 3, 2, 1, 1, 2, 2, True, True),       # DCNv2, grouped, two offset groups
    (2, 3, 2, 1, 0, 2, 1, 1, True, False),      # dilated, unpadded, no bias
    (6, 5, (3, 1), (1, 2), (2, 0), 1, 1, 3, False, False),
])
def test_deform_conv_against_torchvision(tmp_path, c_in, c_out, k, stride, pad, dil, groups,
                                         offset_groups, mask, bias):
    # Opset 19's DeformConv, what PyTorch 2 writes for torchvision.ops.deform_conv2d; offsets
    # large enough to leave the image and land between pixels.
    torchvision = pytest.importorskip("torchvision")
    pair = lambda v: v if isinstance(v, tuple) else (v, v)
    k, stride, pad, dil = pair(k), pair(stride), pair(pad), pair(dil)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(2, c_in, 7, 9, generator=g)
    weight = torch.randn(c_out, c_in // groups, *k, generator=g)
    oh = (7 + 2 * pad[0] - dil[0] * (k[0] - 1) - 1) // stride[0] + 1
    ow = (9 + 2 * pad[1] - dil[1] * (k[1] - 1) - 1) // stride[1] + 1
    taps = k[0] * k[1]
    offset = torch.randn(2, offset_groups * 2 * taps, oh, ow, generator=g) * 2.5
    m = torch.rand(2, offset_groups * taps, oh, ow, generator=g) if mask else None
    b = torch.randn(c_out, generator=g) if bias else None
    want = torchvision.ops.deform_conv2d(x, offset, weight, b, stride=stride, padding=pad,
                                         dilation=dil, mask=m).numpy()
    names = ["x", "w", "offset", "b" if bias else "", "mask" if mask else ""]
    while names[-1] == "":
        names.pop()
    node = helper.make_node("DeformConv", names, ["y"], strides=list(stride),
                            pads=[pad[0], pad[1], pad[0], pad[1]], dilations=list(dil),
                            group=groups, offset_group=offset_groups, kernel_shape=list(k))
    inputs = {"x": x.numpy(), "offset": offset.numpy()}
    if mask:
        inputs["mask"] = m.numpy()
    inits = {"w": weight.numpy(), **({"b": b.numpy()} if bias else {})}
    (got,) = run(tmp_path, [node], inputs, inits, opset=19)
    close(got, want, 1e-4)


@pytest.mark.parametrize("offset_shape,attrs,why", [
    ((1, 18, 4, 4), {}, "offset has shape [1, 18, 4, 4], expected [1, 18, 2, 2]"),
    ((1, 18, 2, 2), {"group": 3}, "group 3 does not divide"),
    ((1, 18, 2, 2), {"offset_group": 5}, "offset_group 5 does not divide"),
    ((1, 18, 2, 2), {"kernel_shape": [2, 2]}, "kernel_shape differs from the weight's"),
])
def test_deform_conv_it_cannot_honour_is_refused_naming_the_node(tmp_path, offset_shape, attrs, why):
    node = helper.make_node("DeformConv", ["x", "w", "offset"], ["y"], name="dcn", **attrs)
    refused(tmp_path, node, rand(1, 4, 4, 4), {"w": rand(2, 4, 3, 3)}, why,
            runtime=[("offset", rand(*offset_shape))], opset=19)
