"""ConvTranspose (map_conv_transpose.cc) and the pixel shuffles DepthToSpace / SpaceToDepth,
single-node graphs through `cuvil-bench infer` against numpy written from the ONNX
specification: every stride, padding, output padding, dilation and group form, odd sizes, and
the refusals."""
import itertools

import numpy as np
import pytest
import torch
from onnx import helper

from conftest import cuvil
from test_op_semantics import close, rand, refused, run


def np_conv_transpose(x, w, b=None, strides=None, pads=None, dilations=None, group=1,
                      output_padding=None):
    """The specification's definition: every input pixel scatters its kernel, taps d apart, to
    the output at stride s; the full output is cropped by pads (and extended by output_padding)."""
    r = x.ndim - 2
    strides = strides or [1] * r
    dilations = dilations or [1] * r
    pads = pads or [0] * (2 * r)
    output_padding = output_padding or [0] * r
    n, c = x.shape[:2]
    mg, k = w.shape[1], w.shape[2:]
    full = [strides[a] * (x.shape[2 + a] - 1) + output_padding[a] + dilations[a] * (k[a] - 1) + 1
            for a in range(r)]
    y = np.zeros((n, mg * group, *full), np.float64)
    cg = c // group
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg].astype(np.float64)
        for tap in itertools.product(*[range(kk) for kk in k]):
            contrib = np.einsum("nc...,cm->nm...", xg, w[(slice(g * cg, (g + 1) * cg), slice(None), *tap)])
            where = tuple(slice(tap[a] * dilations[a], tap[a] * dilations[a] + strides[a] * (x.shape[2 + a] - 1) + 1,
                                strides[a]) for a in range(r))
            y[(slice(None), slice(g * mg, (g + 1) * mg), *where)] += contrib
    if b is not None:
        y += b.reshape(1, -1, *[1] * r)
    crop = tuple(slice(pads[a], full[a] - pads[a + r]) for a in range(r))
    return y[(slice(None), slice(None), *crop)].astype(np.float32)


CASES_2D = {
    # name: (x shape, weight shape, attributes)
    "unet_k2_s2": ((2, 4, 5, 3), (4, 3, 2, 2), dict(strides=[2, 2])),
    "dcgan_k4_s2_p1": ((1, 3, 4, 7), (3, 5, 4, 4), dict(strides=[2, 2], pads=[1, 1, 1, 1])),
    "k3_s2_p1_op1": ((1, 3, 7, 5), (3, 2, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1],
                                                      output_padding=[1, 1])),
    "k3_s1_p1": ((2, 5, 3, 17), (5, 4, 3, 3), dict(pads=[1, 1, 1, 1])),
    "k1_s1_pixel": ((1, 3, 1, 1), (3, 7, 1, 1), dict()),
    "k1_s3_wider_than_kernel": ((1, 2, 3, 4), (2, 3, 1, 1), dict(strides=[3, 3])),
    "unequal_asymmetric": ((1, 3, 6, 5), (3, 4, 3, 5), dict(strides=[2, 3], pads=[0, 1, 2, 1],
                                                            output_padding=[1, 0])),
    "pads_past_a_stride": ((1, 2, 5, 5), (2, 3, 5, 5), dict(strides=[2, 2], pads=[3, 4, 2, 3])),
    "groups": ((1, 6, 5, 4), (6, 2, 3, 3), dict(strides=[2, 2], pads=[1, 1, 1, 1], group=3)),
    "depthwise": ((1, 4, 3, 3), (4, 1, 4, 4), dict(strides=[2, 2], pads=[1, 1, 1, 1], group=4)),
    "dilated": ((1, 3, 5, 6), (3, 2, 3, 3), dict(strides=[2, 1], dilations=[2, 3], pads=[1, 2, 0, 1])),
    "dilated_with_output_padding": ((1, 2, 4, 4), (2, 2, 2, 2), dict(strides=[1, 1], dilations=[3, 3],
                                                                     output_padding=[2, 1])),
}


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
@pytest.mark.parametrize("case", CASES_2D.keys())
def test_conv_transpose_2d_matches_the_specification(tmp_path, case, bias):
    xs, ws, attrs = CASES_2D[case]
    x, w = rand(*xs), rand(*ws)
    b = rand(ws[1] * attrs.get("group", 1)) if bias else None
    inputs = ["x", "w", "b"] if bias else ["x", "w"]
    node = helper.make_node("ConvTranspose", inputs, ["y"], **attrs)
    inits = {"w": w, "b": b} if bias else {"w": w}
    (got,) = run(tmp_path, [node], {"x": x}, inits)
    close(got, np_conv_transpose(x, w, b, **attrs))


@pytest.mark.parametrize("xs,ws,attrs", [
    ((2, 4, 9), (4, 3, 4), dict(strides=[2], pads=[1, 1])),
    ((1, 8, 7), (8, 2, 16), dict(strides=[8], pads=[4, 4])),  # a vocoder's upsampler
    ((1, 3, 1), (3, 5, 3), dict(strides=[3], output_padding=[2])),
    ((1, 4, 5), (4, 1, 3), dict(group=4, dilations=[2])),
])
def test_conv_transpose_1d_matches_the_specification(tmp_path, xs, ws, attrs):
    x, w, b = rand(*xs), rand(*ws), rand(ws[1] * attrs.get("group", 1))
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    (got,) = run(tmp_path, [node], {"x": x}, {"w": w, "b": b})
    close(got, np_conv_transpose(x, w, b, **attrs))


def total_pads(xs, ws, strides, out, output_padding=(0, 0)):
    return [s * (i - 1) + op + k - o for i, k, s, o, op in zip(xs[2:], ws[2:], strides, out, output_padding)]


@pytest.mark.parametrize("auto_pad,output_shape", [
    ("NOTSET", [9, 12]), ("SAME_UPPER", [9, 12]), ("SAME_LOWER", [9, 12]),
    ("SAME_UPPER", None), ("SAME_LOWER", None), ("VALID", None)])
def test_conv_transpose_output_shape_and_auto_pad_set_the_pads(tmp_path, auto_pad, output_shape):
    # The specification: total = s (in - 1) + output_padding + k - out, SAME_UPPER puts the
    # smaller half first, every other mode the larger; auto_pad SAME without output_shape
    # means out = in x stride.
    xs, ws, strides = (1, 3, 5, 6), (3, 2, 3, 4), [2, 2]
    x, w = rand(*xs), rand(*ws)
    attrs = dict(strides=strides, auto_pad=auto_pad)
    if output_shape:
        attrs["output_shape"] = output_shape
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs)
    (got,) = run(tmp_path, [node], {"x": x}, {"w": w})
    if auto_pad == "VALID":
        pads = [0, 0, 0, 0]
    else:
        out = output_shape or [xs[2] * 2, xs[3] * 2]
        total = total_pads(xs, ws, strides, out)
        first = [t // 2 if auto_pad == "SAME_UPPER" else t - t // 2 for t in total]
        pads = first + [t - f for t, f in zip(total, first)]
    close(got, np_conv_transpose(x, w, strides=strides, pads=pads))


@pytest.mark.parametrize("attrs,why", [
    (dict(strides=[2, 2], output_padding=[2, 0]), "output_padding must be >= 0 and less than"),
    (dict(pads=[3, 0, 3, 0]), "output would be empty"),
    (dict(strides=[2, 2], output_shape=[30, 30]), "negative padding is not supported"),
    (dict(kernel_shape=[2, 2]), "kernel_shape does not match the weight"),
    (dict(group=2), "must equal the input's"),
    (dict(auto_pad="SAME"), "unknown auto_pad 'SAME'"),
    (dict(strides=[2]), "strides must have 2 entries"),
])
def test_conv_transpose_it_cannot_honour_is_refused_naming_the_node(tmp_path, attrs, why):
    x, w = rand(1, 3, 4, 4), rand(3, 2, 3, 3)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct", **attrs)
    refused(tmp_path, node, x, {"w": w}, why)


def test_conv_transpose_of_run_time_weights_is_refused_naming_the_node(tmp_path):
    x, w = rand(1, 3, 4, 4), rand(3, 2, 3, 3)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct")
    refused(tmp_path, node, x, {}, "weights computed at run time", runtime=[("w", w)])


def test_conv_transpose_bias_it_cannot_take_is_refused_naming_the_node(tmp_path):
    x, w = rand(1, 3, 4, 4), rand(3, 2, 3, 3)
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="ct")
    refused(tmp_path, node, x, {"w": w}, "a bias computed at run time", runtime=[("b", rand(2))])
    refused(tmp_path, node, x, {"w": w, "b": rand(3)}, "bias must have one entry per output channel")


CASES_3D = {
    # 3-D U-Nets' up-convolutions (k = s = 2), the k3 s2 p1 op1 form, per-axis strides, groups,
    # dilation, and a (1, k, k) kernel that upsamples frames only in space
    "unet3d_k2_s2": ((1, 4, 3, 5, 2), (4, 3, 2, 2, 2), dict(strides=[2, 2, 2])),
    "k3_s2_p1_op1": ((1, 2, 3, 4, 5), (2, 3, 3, 3, 3), dict(strides=[2, 2, 2], pads=[1, 1, 1, 1, 1, 1],
                                                            output_padding=[1, 1, 1])),
    "per_axis": ((2, 3, 4, 3, 5), (3, 2, 3, 2, 3), dict(strides=[1, 2, 3], pads=[1, 0, 1, 0, 1, 2])),
    "groups_dilated": ((1, 4, 3, 3, 4), (4, 1, 2, 2, 3), dict(strides=[2, 1, 2], dilations=[2, 2, 1],
                                                              group=2)),
    "spatial_only": ((1, 3, 2, 4, 4), (3, 2, 1, 3, 3), dict(strides=[1, 2, 2], pads=[0, 1, 1, 0, 1, 1],
                                                            output_padding=[0, 1, 1])),
}


@pytest.mark.parametrize("case", CASES_3D.keys())
def test_conv_transpose_3d_matches_the_specification(tmp_path, case):
    xs, ws, attrs = CASES_3D[case]
    x, w, b = rand(*xs), rand(*ws), rand(ws[1] * attrs.get("group", 1))
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], **attrs)
    (got,) = run(tmp_path, [node], {"x": x}, {"w": w, "b": b})
    close(got, np_conv_transpose(x, w, b, **attrs), 1e-4)


def test_conv_transpose_4d_is_refused_naming_the_node(tmp_path):
    x, w = rand(1, 2, 2, 2, 2, 2), rand(2, 2, 2, 2, 2, 2)
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="ct")
    refused(tmp_path, node, x, {"w": w}, "only 1-D, 2-D and 3-D transposed convolutions")


def np_depth_to_space(x, b, mode):
    n, c, h, w = x.shape
    if mode == "DCR":
        t = x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        t = x.reshape(n, c // (b * b), b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return t.reshape(n, c // (b * b), h * b, w * b)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
@pytest.mark.parametrize("b,shape", [(2, (2, 8, 3, 5)), (3, (1, 9, 1, 7))])
def test_depth_to_space_in_both_modes(tmp_path, mode, b, shape):
    x = rand(*shape)
    node = helper.make_node("DepthToSpace", ["x"], ["y"], blocksize=b, mode=mode)
    (got,) = run(tmp_path, [node], {"x": x})
    close(got, np_depth_to_space(x, b, mode), 0)


def test_space_to_depth_inverts_depth_to_space_dcr(tmp_path):
    x = rand(2, 3, 6, 4)
    nodes = [helper.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2),
             helper.make_node("DepthToSpace", ["y"], ["z"], blocksize=2)]
    y, z = run(tmp_path, nodes, {"x": x}, outputs=("y", "z"))
    n, c, h, w = x.shape
    want = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * 4, h // 2, w // 2)
    close(y, want, 0)
    close(z, x, 0)


@pytest.mark.parametrize("op,shape,attrs,why", [
    ("DepthToSpace", (1, 6, 2, 2), {}, "not a multiple of blocksize^2"),
    ("SpaceToDepth", (1, 2, 5, 4), {}, "must be multiples of blocksize"),
    ("DepthToSpace", (1, 8, 2, 2), {"mode": "RDC"}, "unknown mode 'RDC'"),
    ("SpaceToDepth", (1, 2, 4, 4), {"blocksize": 0}, "blocksize must be between 1 and 2^20"),
])
def test_pixel_shuffles_it_cannot_honour_are_refused(tmp_path, op, shape, attrs, why):
    node = helper.make_node(op, ["x"], ["y"], name="ct", **{"blocksize": 2, **attrs})
    refused(tmp_path, node, rand(*shape), {}, why)


def test_list_counts_the_model_weights_not_the_rearranged_ones(tmp_path):
    # The graph holds the kernel as a 2x2 convolution's with 4 phases (and zero taps); the model
    # has 3 x 2 x 3 x 3 weights and 2 biases.
    import onnx
    from onnx import TensorProto, numpy_helper
    node = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], strides=[2, 2], pads=[1, 1, 1, 1])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(rand(3, 2, 3, 3), "w"), numpy_helper.from_array(rand(2), "b")])
    path = tmp_path / "ct.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    out = cuvil("list", "--model", str(path)).stdout
    assert " 56 parameters " in out, out


@pytest.mark.parametrize("image,block,strides,dilations,pads", [
    ([5, 7], [2, 3], [1, 1], [1, 1], [0, 0, 0, 0]),
    ([9, 8], [3, 3], [2, 2], [1, 1], [1, 1, 1, 1]),    # overlapping, padded
    ([7, 6], [2, 2], [2, 2], [1, 1], [0, 0, 0, 0]),    # a last row no block reaches
    ([11, 9], [3, 2], [2, 3], [2, 1], [1, 0, 2, 1]),   # dilated, asymmetric pads
    ([4, 4], [4, 4], [4, 4], [1, 1], [0, 0, 0, 0]),    # one block
])
def test_col2im_against_pytorch_fold(tmp_path, image, block, strides, dilations, pads):
    # Opset 18's Col2Im, what PyTorch 2 writes for nn.Fold (PyTorch 1.13 cannot export it).
    # F.fold takes symmetric padding: an asymmetric case pads the image beyond it and crops.
    n, c = 2, 3
    big = [image[d] + pads[d] + pads[d + 2] for d in range(2)]
    blocks = blocks_along(image, block, strides, dilations, pads)
    cols = torch.randn(n, c * block[0] * block[1], blocks[0] * blocks[1])
    full = torch.nn.functional.fold(cols, big, block, dilation=dilations, stride=strides)
    want = full[:, :, pads[0]:pads[0] + image[0], pads[1]:pads[1] + image[1]].numpy()
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=strides,
                            dilations=dilations, pads=pads)
    (got,) = run(tmp_path, [node], {"x": cols.numpy()},
                 {"image": np.array(image, np.int64), "block": np.array(block, np.int64)}, opset=18)
    close(got, want, 1e-5)


@pytest.mark.parametrize("shape,image,block,why", [
    ((1, 7, 20), [5, 7], [2, 3], "input channels 7 are not a multiple of the block's 6 positions"),
    ((1, 6, 21), [5, 7], [2, 3], "the input has 21 blocks"),
    ((1, 6, 1), [2, 2], [3, 3], "a block is larger than the padded image"),
    ((1, 6, 20), [5, 7, 1], [2, 3], "the same number"),
])
def test_col2im_it_cannot_honour_is_refused_naming_the_node(tmp_path, shape, image, block, why):
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], name="fold")
    refused(tmp_path, node, rand(*shape),
            {"image": np.array(image, np.int64), "block": np.array(block, np.int64)}, why, opset=18)


def blocks_along(image, block, strides, dilations, pads):
    """How many blocks fit along each axis of the padded image."""
    r = len(image)
    return [(image[d] + pads[d] + pads[d + r] - dilations[d] * (block[d] - 1) - 1) // strides[d] + 1
            for d in range(r)]


def np_col2im(cols, image, block, strides, dilations, pads):
    """ONNX Col2Im from its definition: each block's column added at its window's positions."""
    r = len(image)
    padded = [image[d] + pads[d] + pads[d + r] for d in range(r)]
    along = blocks_along(image, block, strides, dilations, pads)
    n, ck, _ = cols.shape
    c = ck // int(np.prod(block))
    out = np.zeros((n, c, *padded), np.float64)
    cols = cols.reshape(n, c, *block, *along)
    for tap in itertools.product(*[range(k) for k in block]):
        for pos in itertools.product(*[range(a) for a in along]):
            at = tuple(pos[d] * strides[d] + tap[d] * dilations[d] for d in range(r))
            out[(slice(None), slice(None), *at)] += cols[(slice(None), slice(None), *tap, *pos)]
    crop = tuple(slice(pads[d], pads[d] + image[d]) for d in range(r))
    return out[(slice(None), slice(None), *crop)].astype(np.float32)


@pytest.mark.parametrize("image,block,strides,dilations,pads", [
    ([11], [3], [2], [1], [1, 2]),                         # 1-D
    ([5, 4, 6], [2, 2, 3], [1, 2, 2], [1, 1, 1], [0, 1, 0, 0, 0, 1]),  # 3-D
])
def test_col2im_in_one_and_three_dimensions(tmp_path, image, block, strides, dilations, pads):
    along = blocks_along(image, block, strides, dilations, pads)
    cols = rand(2, 3 * int(np.prod(block)), int(np.prod(along)))
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=strides,
                            dilations=dilations, pads=pads)
    (got,) = run(tmp_path, [node], {"x": cols},
                 {"image": np.array(image, np.int64), "block": np.array(block, np.int64)}, opset=18)
    close(got, np_col2im(cols, image, block, strides, dilations, pads), 1e-5)
