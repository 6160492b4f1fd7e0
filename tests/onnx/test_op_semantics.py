"""Operators with attributes and input forms exporters vary: single-node (or short) ONNX graphs
built with onnx.helper, run through `cuvil-bench infer`, against numpy written from the ONNX
specification. Each case names the behaviour it pins down."""
import math
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import cuvil, infer, max_relative_error

F = TensorProto.FLOAT
RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def run(tmp_path, nodes, inputs, initializers=(), opset=17, outputs=("y",), int_outputs=()):
    """Builds a graph of `nodes` with inputs {name: array} (float or int64), runs it, returns the
    outputs: float unless named in `int_outputs` (int64)."""
    vi = []
    for name, a in inputs.items():
        t = TensorProto.INT64 if a.dtype.kind in "iu" else F
        vi.append(helper.make_tensor_value_info(name, t, list(a.shape)))
    outs = [helper.make_tensor_value_info(o, TensorProto.INT64 if o in int_outputs else F, None)
            for o in outputs]
    inits = [numpy_helper.from_array(v, k) for k, v in dict(initializers).items()]
    graph = helper.make_graph(nodes, "g", vi, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    got = infer(path, inputs, tmp_path / "out")
    return [got[o] for o in outputs]


def refused(tmp_path, node, x, initializers, *fragments, runtime=(), opset=17):
    """A graph of `node` reading the float input "x" (and the float run-time inputs `runtime`,
    [(name, array)]) with `initializers` {name: array}: `cuvil-bench verify` refuses it, exit 2,
    naming the node and saying every fragment."""
    vi = [helper.make_tensor_value_info("x", F, list(x.shape))]
    vi += [helper.make_tensor_value_info(n, F, list(a.shape)) for n, a in runtime]
    inits = [numpy_helper.from_array(v, k) for k, v in dict(initializers).items()]
    graph = helper.make_graph([node], "g", vi, [helper.make_tensor_value_info("y", F, None)], inits)
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]), str(path))
    r = cuvil("verify", "--model", str(path), check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"node '{node.name}' ({node.op_type})" in r.stderr, r.stderr
    for f in fragments:
        assert f in r.stderr, (f, r.stderr)


def close(got, want, bound=1e-5):
    assert got.shape == want.shape, (got.shape, want.shape)
    assert max_relative_error(got, want) <= bound


@pytest.mark.parametrize("trans_a,trans_b,alpha,beta,c_shape",
                         [(0, 1, 1.0, 1.0, (5,)), (1, 0, 0.5, 2.0, (1, 5)), (0, 0, 1.5, 0.25, (3, 5)),
                          (1, 1, 1.0, 1.0, ())])
def test_gemm_transposes_alpha_beta_and_c_shapes(tmp_path, trans_a, trans_b, alpha, beta, c_shape):
    a = rand(4, 3) if trans_a else rand(3, 4)
    b = rand(5, 4) if trans_b else rand(4, 5)
    c = rand(*c_shape) if c_shape else np.float32(0.7)
    node = helper.make_node("Gemm", ["a", "b", "c"], ["y"], transA=trans_a, transB=trans_b,
                            alpha=alpha, beta=beta)
    want = alpha * (a.T if trans_a else a) @ (b.T if trans_b else b) + beta * c
    (got,) = run(tmp_path, [node], {"a": a}, {"b": b, "c": np.asarray(c, np.float32)})
    close(got, want.astype(np.float32))


def test_gemm_with_a_runtime_b(tmp_path):
    a, b = rand(3, 4), rand(5, 4)
    node = helper.make_node("Gemm", ["a", "b"], ["y"], transB=1, alpha=2.0)
    (got,) = run(tmp_path, [node], {"a": a, "b": b})
    close(got, 2.0 * a @ b.T)


def test_matmul_vectors_and_batches(tmp_path):
    a, v, w = rand(2, 3, 4), rand(4), rand(4, 6)
    nodes = [helper.make_node("MatMul", ["a", "v"], ["y1"]),  # [2,3,4] x [4] -> [2,3]
             helper.make_node("MatMul", ["v", "w"], ["y2"]),  # [4] x [4,6] -> [6]
             helper.make_node("MatMul", ["a", "w"], ["y3"])]
    y1, y2, y3 = run(tmp_path, nodes, {"a": a, "v": v}, {"w": w}, outputs=("y1", "y2", "y3"))
    close(y1, a @ v)
    close(y2, v @ w)
    close(y3, a @ w)


@pytest.mark.parametrize("opset", [10, 11, 13])
def test_clip_as_attributes_and_as_inputs(tmp_path, opset):
    x = rand(3, 7) * 4
    if opset < 11:
        node = helper.make_node("Clip", ["x"], ["y"], min=-1.0, max=2.5)
        inits = {}
    else:
        node = helper.make_node("Clip", ["x", "lo", "hi"], ["y"])
        inits = {"lo": np.float32(-1.0), "hi": np.float32(2.5)}
    (got,) = run(tmp_path, [node], {"x": x}, inits, opset=opset)
    close(got, np.clip(x, -1.0, 2.5))


def test_constant_value_forms_fold(tmp_path):
    x = rand(2, 3)
    nodes = [helper.make_node("Constant", [], ["f"], value_float=2.0),
             helper.make_node("Constant", [], ["fs"], value_floats=[1.0, 2.0, 3.0]),
             helper.make_node("Constant", [], ["t"], value=numpy_helper.from_array(np.full((2, 1), 0.5, np.float32))),
             helper.make_node("Mul", ["x", "f"], ["a"]),
             helper.make_node("Add", ["a", "fs"], ["b"]),
             helper.make_node("Sub", ["b", "t"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x})
    close(got, x * 2 + np.array([1, 2, 3], np.float32) - 0.5)


def test_shape_arithmetic_folds_into_a_reshape(tmp_path):
    # Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Equal/Where/ConstantOfShape/Expand as
    # exporters write for x.reshape(x.shape[0], -1) and a broadcast.
    x = rand(2, 3, 4)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
             helper.make_node("Reshape", ["x", "shape"], ["flat"]),
             helper.make_node("ConstantOfShape", ["two"], ["ones"],
                              value=numpy_helper.from_array(np.ones(1, np.int64))),
             helper.make_node("Equal", ["ones", "minus_ones"], ["eq"]),
             helper.make_node("Where", ["eq", "ones", "target"], ["bshape"]),
             helper.make_node("Expand", ["row", "bshape"], ["rows"]),
             helper.make_node("Add", ["flat", "rows"], ["y"])]
    inits = {"zero": np.array(0, np.int64), "axes0": np.array([0], np.int64),
             "minus1": np.array([-1], np.int64), "two": np.array([2], np.int64),
             "minus_ones": np.array([-1, -1], np.int64), "target": np.array([2, 12], np.int64),
             "row": rand(1, 12)}
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    close(got, x.reshape(2, -1) + inits["row"])


def test_reshape_zero_copies_and_minus_one_infers(tmp_path):
    x = rand(2, 3, 4)
    node = helper.make_node("Reshape", ["x", "s"], ["y"])
    (got,) = run(tmp_path, [node], {"x": x}, {"s": np.array([0, -1], np.int64)})
    close(got, x.reshape(2, 12))


@pytest.mark.parametrize("opset", [11, 13])
def test_squeeze_unsqueeze_attribute_and_input_forms(tmp_path, opset):
    x = rand(3, 1, 4)
    if opset < 13:
        nodes = [helper.make_node("Squeeze", ["x"], ["s"], axes=[1]),
                 helper.make_node("Unsqueeze", ["s"], ["y"], axes=[0, -1])]
        inits = {}
    else:
        nodes = [helper.make_node("Squeeze", ["x", "a1"], ["s"]),
                 helper.make_node("Unsqueeze", ["s", "a2"], ["y"])]
        inits = {"a1": np.array([1], np.int64), "a2": np.array([0, -1], np.int64)}
    (got,) = run(tmp_path, nodes, {"x": x}, inits, opset=opset)
    close(got, x.reshape(1, 3, 4, 1))


def test_slice_negative_clamped_axes(tmp_path):
    x = rand(4, 10, 6)
    node = helper.make_node("Slice", ["x", "st", "en", "ax"], ["y"])
    inits = {"st": np.array([-8, 1], np.int64), "en": np.array([2**40, -1], np.int64),
             "ax": np.array([1, -1], np.int64)}
    (got,) = run(tmp_path, [node], {"x": x}, inits)
    close(got, x[:, -8:, 1:-1])


@pytest.mark.parametrize("start,end,step", [(0, 10, 2), (1, 2**40, 3), (-1, -2**40, -1),
                                             (8, 1, -3), (0, 10, 2**62)])
def test_slice_with_steps_on_run_time_values_and_constants(tmp_path, start, end, step):
    # Strided and reversed slices (Swin's x[:, 0::2], a flip), ONNX's clamping at both ends.
    x, c = rand(4, 10), rand(4, 10)
    nodes = [helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="strided"),
             helper.make_node("Slice", ["c", "st", "en", "ax", "sp"], ["cs"], name="folded"),
             helper.make_node("Add", ["y", "cs"], ["z"])]
    inits = {"c": c, "st": np.array([start], np.int64), "en": np.array([end], np.int64),
             "ax": np.array([1], np.int64), "sp": np.array([step], np.int64)}
    z, y = run(tmp_path, nodes, {"x": x}, inits, outputs=("z", "y"))
    picked = slice(start, None if abs(end) >= 2**40 else end, step)
    close(y, x[:, picked])
    close(z, x[:, picked] + c[:, picked])


def test_empty_constant_slice_folds(tmp_path):
    # Swin's mask slices (0, -window) are empty when the window covers the map.
    x = rand(3, 4)
    nodes = [helper.make_node("Slice", ["c", "st", "en"], ["e"]),
             helper.make_node("Concat", ["e", "c"], ["cc"], axis=0),
             helper.make_node("Add", ["x", "cc"], ["y"])]
    inits = {"c": rand(3, 4), "st": np.array([0], np.int64), "en": np.array([-3], np.int64)}
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    close(got, x + inits["c"])


def test_slice_step_zero_is_refused(tmp_path):
    node = helper.make_node("Slice", ["x", "st", "en", "ax", "sp"], ["y"], name="zero_step")
    inits = {"st": np.array([0], np.int64), "en": np.array([10], np.int64),
             "ax": np.array([1], np.int64), "sp": np.array([0], np.int64)}
    with pytest.raises(AssertionError, match="step of axis 1 is 0"):
        run(tmp_path, [node], {"x": rand(4, 10)}, inits)


EINSUMS = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("B G H I D, B G H J D -> B G H I J", [(1, 2, 3, 4, 5), (1, 2, 3, 6, 5)]),  # MaxViT, spaced
    ("B G H I J, B G H J D -> B G H I D", [(1, 2, 3, 4, 6), (1, 2, 3, 6, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 7, 4), (2, 3, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 6)]),  # ellipsis broadcast, right-aligned
    ("ij,jk", [(3, 4), (4, 5)]),  # implicit output: ik
    # Implicit outputs with upper-case labels (by character code: "Jdij"); Debian's libonnx
    # corrupted memory on them in shape inference (fuzz_onnx found it).
    ("ij,Jd", [(3, 5), (5, 4)]),
    ("...ij,...Jd", [(1, 2, 3, 5), (1, 2, 5, 4)]),
    ("ij->ji", [(3, 4)]),
    ("ijk->ki", [(3, 4, 5)]),  # j summed
    ("i,j->ij", [(3,), (4,)]),  # outer product
    ("bi,bj->bij", [(2, 3), (2, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("bn,anm,bm->ba", [(2, 3), (5, 3, 4), (2, 4)]),  # bilinear
    ("ij,kj->ik", [(1, 4), (3, 4)]),
]


@pytest.mark.parametrize("equation,shapes", EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_matches_numpy(tmp_path, equation, shapes):
    arrays = {f"a{i}": rand(*s) for i, s in enumerate(shapes)}
    node = helper.make_node("Einsum", list(arrays), ["y"], equation=equation)
    (got,) = run(tmp_path, [node], arrays, opset=12)
    close(got, np.einsum(equation.replace(" ", ""), *arrays.values()).astype(np.float32), 1e-4)


@pytest.mark.parametrize("equation,shapes,message", [
    ("ii->i", [(3, 3)], "repeats label 'i' (a diagonal)"),
    ("ij,jk->ik", [(3, 4), (5, 6)], "label 'j' has size 4"),
    ("ij->ik", [(3, 4)], "output label 'k' is in no input term"),
    ("ijk->i", [(3, 4)], "has 3 labels for input 0 of rank 2"),
    ("ij;jk->ik", [(3, 4), (4, 5)], "the character ';'"),
])
def test_einsum_it_cannot_run_is_refused_with_the_reason(tmp_path, equation, shapes, message):
    arrays = {f"a{i}": rand(*s) for i, s in enumerate(shapes)}
    node = helper.make_node("Einsum", list(arrays), ["y"], equation=equation, name="e")
    with pytest.raises(AssertionError, match=re.escape(message)):
        run(tmp_path, [node], arrays, opset=12)


@pytest.mark.parametrize("fmod,want", [(0, [2, -2, -1, 1, 0]), (1, [-1, 1, -1, 1, 0])])
def test_mod_folds_with_either_sign_rule(tmp_path, fmod, want):
    x = rand(5)
    nodes = [helper.make_node("Mod", ["a", "b"], ["m"], fmod=fmod),
             helper.make_node("Cast", ["m"], ["mf"], to=F),
             helper.make_node("Add", ["x", "mf"], ["y"])]
    inits = {"a": np.array([-7, 7, -7, 7, 6], np.int64), "b": np.array([3, -3, -3, 3, 3], np.int64)}
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    close(got, x + np.array(want, np.float32))


def test_float_mod_folds_as_fmod(tmp_path):
    x = rand(3)
    a, b = np.array([-5.5, 5.5, 7.25], np.float32), np.array([2.0, -2.0, 3.0], np.float32)
    nodes = [helper.make_node("Mod", ["a", "b"], ["m"], fmod=1),
             helper.make_node("Add", ["x", "m"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x}, {"a": a, "b": b})
    close(got, x + np.fmod(a, b))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_folds_on_constants(tmp_path, reduction):
    x = rand(4, 3)
    data, updates = rand(4, 3), rand(2, 3)
    indices = np.array([[1], [-1]], np.int64)
    nodes = [helper.make_node("ScatterND", ["d", "i", "u"], ["s"], reduction=reduction),
             helper.make_node("Add", ["x", "s"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x}, {"d": data, "i": indices, "u": updates}, opset=18)
    want = data.copy()
    for row, u in zip([1, 3], updates):
        want[row] = {"none": u, "add": want[row] + u, "mul": want[row] * u,
                     "max": np.maximum(want[row], u), "min": np.minimum(want[row], u)}[reduction]
    close(got, x + want)


def test_scatter_nd_index_out_of_range_is_refused(tmp_path):
    nodes = [helper.make_node("ScatterND", ["d", "i", "u"], ["s"], name="sc"),
             helper.make_node("Add", ["x", "s"], ["y"])]
    inits = {"d": rand(4, 3), "i": np.array([[4]], np.int64), "u": rand(1, 3)}
    with pytest.raises(AssertionError, match="index 4 is out of range for axis 0 of size 4"):
        run(tmp_path, nodes, {"x": rand(4, 3)}, inits)


@pytest.mark.parametrize("ratio,ok", [(0.0, True), (0.1, False)])
def test_dropout_in_training_mode_is_the_identity_only_at_ratio_zero(tmp_path, ratio, ok):
    x = rand(2, 5)
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")
    inits = {"r": np.array(ratio, np.float32), "t": np.array(True)}
    if ok:
        (got,) = run(tmp_path, [node], {"x": x}, inits)
        close(got, x)
    else:
        with pytest.raises(AssertionError, match="training_mode is true with a ratio other than 0"):
            run(tmp_path, [node], {"x": x}, inits)


@pytest.mark.parametrize("opset", [11, 13])
def test_split_attribute_and_input_forms(tmp_path, opset):
    x = rand(2, 7)
    if opset < 13:
        node = helper.make_node("Split", ["x"], ["a", "b"], axis=1, split=[3, 4])
        inits = {}
    else:
        node = helper.make_node("Split", ["x", "sizes"], ["a", "b"], axis=1)
        inits = {"sizes": np.array([3, 4], np.int64)}
    a, b = run(tmp_path, [node], {"x": x}, inits, opset=opset, outputs=("a", "b"))
    close(a, x[:, :3])
    close(b, x[:, 3:])


def test_gather_scalar_vector_and_embedding(tmp_path):
    x = rand(2, 5, 3)
    table = rand(11, 4)
    ids = np.array([[3, 0, 10], [7, 7, 1]], np.int64)
    nodes = [helper.make_node("Gather", ["x", "i0"], ["pick"], axis=1),  # x[:, 2]
             helper.make_node("Gather", ["x", "iv"], ["many"], axis=1),  # x[:, [4, 0, 4]]
             helper.make_node("Gather", ["table", "ids"], ["emb"], axis=0)]
    inits = {"i0": np.array(2, np.int64), "iv": np.array([4, 0, -1], np.int64), "table": table}
    pick, many, emb = run(tmp_path, nodes, {"x": x, "ids": ids}, inits,
                          outputs=("pick", "many", "emb"))
    close(pick, x[:, 2])
    close(many, x[:, [4, 0, 4]])
    close(emb, table[ids])


def test_legacy_softmax_coerces_to_two_dimensions(tmp_path):
    # Before opset 13, Softmax(axis=1) on [2, 3, 4] normalises over 3 x 4 jointly.
    x = rand(2, 3, 4)
    (got,) = run(tmp_path, [helper.make_node("Softmax", ["x"], ["y"], axis=1)], {"x": x}, opset=11)
    flat = x.reshape(2, 12)
    e = np.exp(flat - flat.max(1, keepdims=True))
    close(got, (e / e.sum(1, keepdims=True)).reshape(2, 3, 4))


def test_log_softmax_and_reductions(tmp_path):
    x = rand(2, 3, 5)
    nodes = [helper.make_node("LogSoftmax", ["x"], ["ls"], axis=-1),
             helper.make_node("ReduceMean", ["x"], ["rm"], axes=[0, 2], keepdims=0),
             helper.make_node("ReduceMax", ["x"], ["rx"], axes=[1], keepdims=1),
             helper.make_node("ReduceSum", ["x", "ax"], ["rs"], keepdims=0)]
    ls, rm, rx, rs = run(tmp_path, nodes, {"x": x}, {"ax": np.array([-1], np.int64)}, opset=13,
                         outputs=("ls", "rm", "rx", "rs"))
    m = x.max(-1, keepdims=True)
    close(ls, x - m - np.log(np.exp(x - m).sum(-1, keepdims=True)))
    close(rm, x.mean((0, 2)))
    close(rx, x.max(1, keepdims=True))
    close(rs, x.sum(-1))


def np_pool(x, k, s, pads, is_max, include_pad=True, ceil=False):
    """Reference 2-D pooling over NCHW with [t, l, b, r] pads."""
    n, c, h, w = x.shape
    t, l, b, r = pads
    fill = -np.inf if is_max else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=fill)
    def size(dim, lo, hi, kk, ss):
        span = dim + lo + hi - kk
        o = (-(-span // ss) if ceil else span // ss) + 1
        if ceil and (o - 1) * ss >= dim + lo:
            o -= 1
        return o
    oh, ow = size(h, t, b, k[0], s[0]), size(w, l, r, k[1], s[1])
    y = np.zeros((n, c, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * s[0], j * s[1]
            win = xp[:, :, y0:y0 + k[0], x0:x0 + k[1]]
            if is_max:
                y[:, :, i, j] = win.max((2, 3))
            else:
                ones = np.pad(np.ones((h, w)), ((t, b), (l, r)))[y0:y0 + k[0], x0:x0 + k[1]]
                count = win.shape[2] * win.shape[3] if include_pad else ones.sum()
                y[:, :, i, j] = win.sum((2, 3)) / count
    return y


def test_max_pool_ceil_mode_and_asymmetric_pads(tmp_path):
    x = rand(1, 3, 9, 10)
    nodes = [helper.make_node("MaxPool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
             helper.make_node("MaxPool", ["x"], ["b"], kernel_shape=[2, 3], strides=[1, 2], pads=[0, 1, 1, 0])]
    a, b = run(tmp_path, nodes, {"x": x}, outputs=("a", "b"))
    close(a, np_pool(x, (3, 3), (2, 2), (0, 0, 0, 0), True, ceil=True))
    close(b, np_pool(x, (2, 3), (1, 2), (0, 1, 1, 0), True))


def test_average_pool_padding_in_or_out_of_the_divisor(tmp_path):
    x = rand(2, 3, 7, 6)
    nodes = [helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1], count_include_pad=0),
             helper.make_node("AveragePool", ["x"], ["b"], kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 1, 1], count_include_pad=1)]
    a, b = run(tmp_path, nodes, {"x": x}, outputs=("a", "b"))
    close(a, np_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), False, include_pad=False))
    close(b, np_pool(x, (3, 3), (2, 2), (1, 1, 1, 1), False, include_pad=True))


@pytest.mark.parametrize("k,s,pads,include_pad", [((2, 2), (2, 2), (0, 0, 0, 0), 1),
                                                  ((3, 3), (2, 2), (1, 1, 1, 1), 1),
                                                  ((3, 3), (2, 2), (1, 1, 1, 1), 0),
                                                  ((4, 2), (3, 2), (1, 0, 1, 0), 1),
                                                  ((2, 2), (2, 2), (1, 1, 1, 1), 0),
                                                  ((3, 2), (2, 3), (0, 1, 1, 0), 0)])
def test_average_pool_ceil_mode_windows_over_the_edge(tmp_path, k, s, pads, include_pad):
    # A ceil_mode window overhanging the input (and its padding) divides by the taps it covers,
    # padding counted or not, as PyTorch and the ONNX specification say; one that would start in
    # the end padding is dropped (libonnx 1.12's shape inference still counts it).
    x = rand(2, 3, 11, 13)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=list(k), strides=list(s),
                            pads=list(pads), ceil_mode=1, count_include_pad=include_pad)
    (got,) = run(tmp_path, [node], {"x": x})
    close(got, np_pool(x, k, s, pads, False, include_pad=bool(include_pad), ceil=True))


def test_average_pool_asymmetric_pads_out_of_the_divisor(tmp_path):
    x = rand(1, 2, 7, 8)
    node = helper.make_node("AveragePool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                            pads=[0, 2, 1, 0], count_include_pad=0)
    (got,) = run(tmp_path, [node], {"x": x})
    close(got, np_pool(x, (3, 3), (2, 2), (0, 2, 1, 0), False, include_pad=False))


def test_pool_window_starting_in_the_end_padding_is_dropped_downstream_too(tmp_path):
    x = rand(1, 3, 11, 11)
    nodes = [helper.make_node("MaxPool", ["x"], ["m"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[1, 1, 1, 1], ceil_mode=1),
             helper.make_node("AveragePool", ["m"], ["a"], kernel_shape=[2, 2], strides=[2, 2],
                              pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=0),
             helper.make_node("Relu", ["a"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x})
    m = np_pool(x, (2, 2), (2, 2), (1, 1, 1, 1), True, ceil=True)
    assert m.shape[2:] == (6, 6)
    close(got, np.maximum(np_pool(m, (2, 2), (2, 2), (1, 1, 1, 1), False, include_pad=False,
                                  ceil=True), 0))


@pytest.mark.parametrize("kwargs", [dict(kernel_size=2, ceil_mode=True),
                                    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True,
                                         count_include_pad=False),
                                    dict(kernel_size=2, padding=1, ceil_mode=True,
                                         count_include_pad=False)])
def test_pytorch_avg_pool_ceil_mode(compare, kwargs):
    import torch

    pool = torch.nn.AvgPool2d(**kwargs)
    assert compare(pool, torch.randn(2, 3, 11, 13), 17) <= 1e-5


@pytest.mark.parametrize("kwargs", [dict(kernel_size=3, stride=2, padding=1, dilation=2),
                                    dict(kernel_size=(2, 3), stride=1, padding=(1, 0), dilation=(3, 2)),
                                    dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True),
                                    dict(kernel_size=2, stride=3, dilation=4)])
def test_pytorch_dilated_max_pool(compare, kwargs):
    import torch

    assert compare(torch.nn.MaxPool2d(**kwargs), torch.randn(2, 3, 11, 13), 17) == 0
    one_d = {k: v if not isinstance(v, tuple) else v[1] for k, v in kwargs.items()}
    assert compare(torch.nn.MaxPool1d(**one_d), torch.randn(2, 3, 17), 13) == 0


def pool_with_indices(kwargs, dims):
    """A max pool returning its values and PyTorch's per-plane indices (the exporter writes ONNX's
    flattened Indices and subtracts each plane's start)."""
    import torch

    return (torch.nn.MaxPool1d if dims == 1 else torch.nn.MaxPool2d)(return_indices=True, **kwargs)


@pytest.mark.parametrize("opset", [13, 17])
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2, stride=2),  # SegNet's encoder
                                    dict(kernel_size=3, stride=2, padding=1),
                                    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=(2, 3), stride=1, padding=(1, 0), dilation=(3, 2))])
def test_pytorch_max_pool_with_indices(compare, kwargs, opset):
    import torch

    # Rounded values tie inside windows: the first maximum in row-major order wins, as in PyTorch.
    x = torch.randn(2, 3, 11, 13).mul(2).round()
    assert compare(pool_with_indices(kwargs, 2), x, opset, output_names=("y", "i")) == 0
    one_d = {k: v if not isinstance(v, tuple) else v[1] for k, v in kwargs.items()}
    assert compare(pool_with_indices(one_d, 1), x[:, :, 0], opset, output_names=("y", "i")) == 0


@pytest.mark.parametrize("kernel,stride,pads,size", [((2, 2), (2, 2), (0, 0, 0, 0), (8, 10)),
                                                     ((3, 3), (2, 2), (1, 1, 1, 1), (7, 9)),
                                                     ((2, 2), (2, 2), (0, 0, 0, 0), (7, 9)),
                                                     ((1, 3), (1, 3), (0, 0, 0, 0), (1, 17))])
def test_max_unpool_of_max_pool_indices_against_pytorch(tmp_path, kernel, stride, pads, size):
    # SegNet's decoder: each pooled value back at its maximum's position, zeros elsewhere. Odd
    # sizes need output_shape (the default size drops the rows no window ended on).
    import torch
    import torch.nn.functional as tf

    x = rand(2, 3, *size)
    attrs = dict(kernel_shape=list(kernel), strides=list(stride), pads=list(pads))
    default = [(((size[d] + pads[d] + pads[d + 2] - kernel[d]) // stride[d]) * stride[d] + kernel[d]
                - pads[d] - pads[d + 2]) for d in range(2)]
    unpool_inputs = ["v", "i"] if list(size) == default else ["v", "i", "shape"]
    nodes = [helper.make_node("MaxPool", ["x"], ["v", "i"], **attrs),
             helper.make_node("MaxUnpool", unpool_inputs, ["y"], **attrs)]
    inits = {} if len(unpool_inputs) == 2 else {"shape": np.array([2, 3, *size], np.int64)}
    y, i = run(tmp_path, nodes, {"x": x}, inits, outputs=("y", "i"), int_outputs=("i",))
    v_t, i_t = tf.max_pool2d(torch.from_numpy(x), kernel, stride, pads[:2], return_indices=True)
    want = tf.max_unpool2d(v_t, i_t, kernel, stride, pads[:2], output_size=size).numpy()
    planes = np.arange(6).reshape(2, 3, 1, 1) * size[0] * size[1]
    np.testing.assert_array_equal(i, i_t.numpy() + planes)
    np.testing.assert_array_equal(y, want)


def test_max_unpool_index_outside_the_output_is_an_error(tmp_path):
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool", kernel_shape=[2, 2],
                            strides=[2, 2])
    with pytest.raises(AssertionError, match=r"node 'unpool' \(scatter\): the index at position \d+ is out of range"):
        run(tmp_path, [node], {"x": rand(1, 1, 2, 2), "i": np.array([[[[0, 5], [16, 3]]]], np.int64)})


@pytest.mark.parametrize("op,inputs,inits,attrs,why", [
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 3, 3), np.float32)}, dict(kernel_shape=[2, 2]),
     "indices must be integers"),
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 2, 3), np.int64)}, dict(kernel_shape=[2, 2]),
     "indices have shape [1, 2, 2, 3], the input [1, 2, 3, 3]"),
    ("MaxUnpool", ["x", "i", "s"], {"i": np.zeros((1, 2, 3, 3), np.int64),
                                    "s": np.array([1, 4, 6, 6], np.int64)},
     dict(kernel_shape=[2, 2], strides=[2, 2]), "must keep the input's N and C"),
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 3, 3), np.int64)}, dict(kernel_shape=[2]),
     "kernel_shape must have 2 entries"),
    # Sizes whose element count overflows int64 (a fuzz finding: UBSan caught the product).
    ("MaxUnpool", ["x", "i", "s"], {"i": np.zeros((1, 2, 3, 3), np.int64),
                                    "s": np.array([1, 2, 7234313755125874693, 121424789660533],
                                                  np.int64)},
     dict(kernel_shape=[2, 2]), "positions above 2^24 are not exact"),
    # Window attributes are bounded as convolutions' and pools' are (window_attrs.h).
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 3, 3), np.int64)},
     dict(kernel_shape=[2, 2], strides=[2 ** 62, 1]),
     "strides entry 4611686018427387904 is above 2^31"),
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 3, 3), np.int64)},
     dict(kernel_shape=[2 ** 62, 2]),
     "kernel_shape entry 4611686018427387904 is above 2^31"),
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 3, 3), np.int64)}, dict(kernel_shape=[0, 2]),
     "kernel_shape entries must be >= 1"),
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 3, 3), np.int64)},
     dict(kernel_shape=[2, 2], pads=[2 ** 62, 0, 0, 0]),
     "pads entry 4611686018427387904 is above 2^31"),
    ("MaxUnpool", ["x", "i"], {"i": np.zeros((1, 2, 3, 3), np.int64)},
     dict(kernel_shape=[2, 2], pads=[-1, 0, 0, 0]), "negative pads are not supported"),
])
def test_max_unpool_it_cannot_honour_is_refused(tmp_path, op, inputs, inits, attrs, why):
    node = helper.make_node(op, inputs, ["y"], name="unpool", **attrs)
    refused(tmp_path, node, rand(1, 2, 3, 3), inits, why)


def test_max_unpool_whose_output_axis_passes_2_to_the_40_is_refused(tmp_path):
    # Within each attribute's bound, the input's extent times the stride is not.
    node = helper.make_node("MaxUnpool", ["x", "i"], ["y"], name="unpool", kernel_shape=[1, 1],
                            strides=[2 ** 31, 1])
    refused(tmp_path, node, rand(1, 1, 1000, 1), {"i": np.zeros((1, 1, 1000, 1), np.int64)},
            "more than 2^40 elements along an axis")


def test_indices_of_a_three_dimensional_max_pool_are_refused(tmp_path):
    x = helper.make_tensor_value_info("x", F, [1, 1, 4, 4, 4])
    outs = [helper.make_tensor_value_info("y", F, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None)]
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="pool3", kernel_shape=[2, 2, 2])
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph([node], "g", [x], outs),
                                opset_imports=[helper.make_opsetid("", 17)]), str(path))
    r = cuvil("verify", "--model", str(path), check=False)
    assert r.returncode == 2 and "node 'pool3' (MaxPool)" in r.stderr, r.stderr
    assert "the Indices output of a 3-D pool is not supported" in r.stderr, r.stderr


def test_dilated_max_pool_of_too_many_taps_is_refused(tmp_path):
    node = helper.make_node("MaxPool", ["x"], ["y"], name="huge", kernel_shape=[100, 100],
                            dilations=[2, 2], pads=[99, 99, 99, 99])
    refused(tmp_path, node, rand(1, 1, 4, 4), {}, "at most 4096 are supported")


def test_dilated_average_pool_is_refused(tmp_path):
    node = helper.make_node("AveragePool", ["x"], ["y"], name="avg", kernel_shape=[2, 2],
                            dilations=[2, 2])
    refused(tmp_path, node, rand(1, 2, 7, 7), {}, "dilations other than 1", opset=19)


def np_conv(x, w, b, stride, pads, groups=1, dilations=(1, 1)):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    if dilations != (1, 1):  # the dilated kernel: the taps with zeros between them
        dh, dw = dilations
        sparse = np.zeros((o, cg, dh * (kh - 1) + 1, dw * (kw - 1) + 1), w.dtype)
        sparse[:, :, ::dh, ::dw] = w
        w, kh, kw = sparse, sparse.shape[2], sparse.shape[3]
    t, l, bt, r = pads
    xp = np.pad(x, ((0, 0), (0, 0), (t, bt), (l, r)))
    oh = (h + t + bt - kh) // stride[0] + 1
    ow = (wd + l + r - kw) // stride[1] + 1
    y = np.zeros((n, o, oh, ow), np.float64)
    og = o // groups
    for g in range(groups):
        for i in range(oh):
            for j in range(ow):
                win = xp[:, g * cg:(g + 1) * cg, i * stride[0]:i * stride[0] + kh, j * stride[1]:j * stride[1] + kw]
                y[:, g * og:(g + 1) * og, i, j] = np.einsum("nchw,ochw->no", win, w[g * og:(g + 1) * og])
    return (y + (b.reshape(1, -1, 1, 1) if b is not None else 0)).astype(np.float32)


def test_conv_asymmetric_pads_auto_pad_and_groups(tmp_path):
    x = rand(1, 4, 9, 8)
    w1, b1 = rand(6, 4, 3, 3), rand(6)
    w2 = rand(4, 2, 3, 3)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[0, 1, 2, 1], strides=[2, 1]),
             helper.make_node("Conv", ["x", "w2"], ["b"], auto_pad="SAME_UPPER", strides=[2, 2], group=2)]
    a, b = run(tmp_path, nodes, {"x": x}, {"w1": w1, "b1": b1, "w2": w2}, outputs=("a", "b"))
    close(a, np_conv(x, w1, b1, (2, 1), (0, 1, 2, 1)))
    # SAME_UPPER, stride 2: out = ceil(in / 2), total pad (out-1)*2+3-in with the odd one at the
    # end: H 9 -> 5 (1 + 1), W 8 -> 4 (0 + 1).
    close(b, np_conv(x, w2, None, (2, 2), (1, 0, 1, 1), groups=2))


def test_dilated_conv_with_pads_strides_groups_and_auto_pad(tmp_path):
    x = rand(2, 4, 17, 13)
    w1, b1 = rand(6, 4, 3, 3), rand(6)
    w2 = rand(4, 1, 3, 3)  # depthwise
    w3 = rand(6, 2, 3, 2)
    w4 = rand(3, 4, 1, 3)  # a 1-tap axis: its dilation changes nothing
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["a"], pads=[2, 3, 2, 3], dilations=[2, 3]),
             helper.make_node("Conv", ["x", "w2"], ["b"], pads=[3, 3, 3, 3], dilations=[3, 3], group=4),
             helper.make_node("Conv", ["x", "w3"], ["c"], auto_pad="SAME_UPPER", dilations=[2, 2],
                              strides=[2, 2], group=2),
             helper.make_node("Conv", ["x", "w4"], ["d"], pads=[0, 2, 0, 2], dilations=[5, 2])]
    a, b, c, d = run(tmp_path, nodes, {"x": x}, {"w1": w1, "b1": b1, "w2": w2, "w3": w3, "w4": w4},
                     outputs=("a", "b", "c", "d"))
    close(a, np_conv(x, w1, b1, (1, 1), (2, 3, 2, 3), dilations=(2, 3)))
    close(b, np_conv(x, w2, None, (1, 1), (3, 3, 3, 3), groups=4, dilations=(3, 3)))
    # SAME_UPPER over the dilated span (5 x 3), stride 2: H 17 -> 9, total pad 8*2+5-17 = 4
    # (2 + 2); W 13 -> 7, total 6*2+3-13 = 2 (1 + 1).
    close(c, np_conv(x, w3, None, (2, 2), (2, 1, 2, 1), groups=2, dilations=(2, 2)))
    close(d, np_conv(x, w4, None, (1, 1), (0, 2, 0, 2), dilations=(5, 2)))


@pytest.mark.parametrize("pads,dilations,strides", [
    ([24, 24, 24, 24], [24, 24], [1, 1]),   # DeepLab's atrous pyramid on a 14x14 map: a 1x1
    ([12, 12, 12, 12], [12, 12], [1, 1]),   # rate 12: the edge taps reach two rows and columns
    ([9, 0, 0, 7], [9, 7], [2, 1]),         # one-sided: only the top and right taps are dead
    ([20, 3, 20, 3], [10, 1], [3, 1]),      # strided: of 5 tap rows, the first and last are dead
])
def test_conv_taps_that_read_only_padding_are_dropped_exactly(tmp_path, pads, dilations, strides):
    x = rand(2, 5, 14, 11)
    kh = 5 if dilations[0] == 10 else 3
    w, b = rand(4, 5, kh, 3), rand(4)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=pads, dilations=dilations,
                            strides=strides)
    (got,) = run(tmp_path, [node], {"x": x}, {"w": w, "b": b})
    close(got, np_conv(x, w, b, tuple(strides), (pads[0], pads[1], pads[2], pads[3]),
                       dilations=tuple(dilations)))


def test_list_counts_the_dropped_padding_taps_beside_the_parameters(tmp_path):
    # 3x3 at rate 24 on 14x14: the 8 outer taps of each of the 128 x 128 filters read only padding.
    x = helper.make_tensor_value_info("x", F, [1, 128, 14, 14])
    y = helper.make_tensor_value_info("y", F, None)
    inits = [numpy_helper.from_array(rand(128, 128, 3, 3), "w")]
    node = helper.make_node("Conv", ["x", "w"], ["y"], pads=[24] * 4, dilations=[24, 24])
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "atrous.onnx"
    onnx.save(model, str(path))
    out = cuvil("list", "--model", str(path)).stdout
    assert " 16384 parameters" in out, out
    assert "and 131072 parameters of convolution taps that read only padding, dropped" in out, out
    # The work declared is a 1x1 convolution's, 2 * 14 * 14 * 128 * 128 FLOPs (3x3: 0.058).
    assert "0.006 GFLOP declared" in out, out


def test_dilated_one_dimensional_conv(tmp_path):  # WaveNet / TCN blocks
    x = rand(2, 3, 29)
    w, b = rand(5, 3, 2), rand(5)
    (got,) = run(tmp_path, [helper.make_node("Conv", ["x", "w", "b"], ["y"], dilations=[4], pads=[4, 0])],
                 {"x": x}, {"w": w, "b": b})
    want = np_conv(x[:, :, None, :], w[:, :, None, :], b, (1, 1), (0, 4, 0, 0), dilations=(1, 4))
    close(got, want[:, :, 0, :])


def test_one_dimensional_conv_and_batchnorm(tmp_path):
    x = rand(2, 3, 11)
    w, b = rand(5, 3, 3), rand(5)
    scale, bias, mean, var = rand(5), rand(5), rand(5), np.abs(rand(5)) + 0.5
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["y"], epsilon=1e-3)]
    (got,) = run(tmp_path, nodes, {"x": x}, {"w": w, "b": b, "s": scale, "bb": bias, "m": mean, "v": var})
    c = np_conv(x[:, :, None, :], w[:, :, None, :], b, (1, 1), (0, 1, 0, 1))[:, :, 0, :]
    want = (c - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-3) * scale[None, :, None] + bias[None, :, None]
    close(got, want.astype(np.float32))


def test_instance_and_layer_normalization(tmp_path):
    x = rand(2, 4, 3, 5)
    g, b = rand(4), rand(4)
    g2, b2 = rand(3, 5), rand(3, 5)
    nodes = [helper.make_node("InstanceNormalization", ["x", "g", "b"], ["i"], epsilon=1e-5),
             helper.make_node("LayerNormalization", ["x", "g2", "b2"], ["l"], axis=-2, epsilon=1e-5)]
    i, l = run(tmp_path, nodes, {"x": x}, {"g": g, "b": b, "g2": g2, "b2": b2}, outputs=("i", "l"))
    mu = x.mean((2, 3), keepdims=True)
    sd = np.sqrt(x.var((2, 3), keepdims=True) + 1e-5)
    close(i, ((x - mu) / sd) * g[None, :, None, None] + b[None, :, None, None])
    mu2 = x.mean((2, 3), keepdims=True)
    sd2 = np.sqrt(x.var((2, 3), keepdims=True) + 1e-5)
    close(l, (x - mu2) / sd2 * g2 + b2)


@pytest.mark.parametrize("mode", ["constant", "reflect", "edge"])
def test_pad_modes(tmp_path, mode):
    x = rand(1, 2, 4, 5)
    node = helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)
    pads = np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)
    (got,) = run(tmp_path, [node], {"x": x}, {"p": pads, "v": np.float32(0.5)})
    width = ((0, 0), (0, 0), (1, 2), (2, 1))
    want = np.pad(x, width, mode=mode, **({"constant_values": 0.5} if mode == "constant" else {}))
    close(got, want)


def np_pad_cropping(x, pads, mode, value=0.0):
    """ONNX Pad as its reference writes it: negative pads crop first, then numpy pads."""
    r = x.ndim
    x = x[tuple(slice(max(-pads[d], 0), x.shape[d] - max(-pads[d + r], 0)) for d in range(r))]
    width = [(max(pads[d], 0), max(pads[d + r], 0)) for d in range(r)]
    return np.pad(x, width, mode=mode, **({"constant_values": value} if mode == "constant" else {}))


CROP_AND_PAD = [0, 0, -1, 2, 0, 0, 2, -2]  # crop and pad on each spatial axis
CROP_ONLY = [0, -1, 0, 0, 0, 0, -3, 0]     # C and H cropped
WHOLE_AXES = [0, 0, 1, 3, 0, 0, 4, 5]      # pads as long as the axes (4 rows, 5 columns)


@pytest.mark.parametrize("mode,opset,pads", [
    *[(m, o, p) for m, o in [("constant", 17), ("reflect", 17), ("edge", 17), ("wrap", 19)]
      for p in (CROP_AND_PAD, CROP_ONLY)],
    ("constant", 19, WHOLE_AXES), ("edge", 19, WHOLE_AXES), ("wrap", 19, WHOLE_AXES),
])
def test_pad_crops_negative_pads_and_wraps(tmp_path, mode, opset, pads):
    x = rand(1, 2, 4, 5)
    node = helper.make_node("Pad", ["x", "p", "v"], ["y"], mode=mode)
    inits = {"p": np.array(pads, np.int64), "v": np.float32(0.5)}
    (got,) = run(tmp_path, [node], {"x": x}, inits, opset=opset)
    close(got, np_pad_cropping(x, pads, mode, 0.5), 0)


def test_pad_of_listed_axes_at_opset_18(tmp_path):
    x = rand(1, 2, 4, 5)
    node = helper.make_node("Pad", ["x", "p", "", "axes"], ["y"], mode="wrap")
    inits = {"p": np.array([1, -1, 2, 3], np.int64), "axes": np.array([2, -1], np.int64)}
    (got,) = run(tmp_path, [node], {"x": x}, inits, opset=19)
    close(got, np_pad_cropping(x, [0, 0, 1, -1, 0, 0, 2, 3], "wrap"), 0)


@pytest.mark.parametrize("mode,pads,why", [
    ("constant", [0, 0, -2, 0, 0, 0, -2, 0], "pads crop axis 2 of 4 to nothing"),
    ("constant", [0, 0, -(2 ** 63), 0, 0, 0, 0, 0], "pads crop axis 2 of 4 to nothing"),
    ("wrap", [0, 0, 0, 6, 0, 0, 0, 0], "wrap pads of 6 on axis 3 exceed its 5 elements"),
    ("circular", [0, 0, 1, 1, 0, 0, 1, 1], "pad mode 'circular' is not supported"),
])
def test_pad_it_cannot_honour_is_refused_naming_the_node(tmp_path, mode, pads, why):
    node = helper.make_node("Pad", ["x", "p"], ["y"], name="pd", mode=mode)
    refused(tmp_path, node, rand(1, 2, 4, 5), {"p": np.array(pads, np.int64)}, why, opset=19)


def np_center_crop_pad(x, shape, axes):
    """ONNX CenterCropPad as its reference writes it: crop or zero-pad each axis around its centre."""
    for a, want in zip(axes, shape):
        dim = x.shape[a]
        if want < dim:
            start = (dim - want) // 2
            x = np.take(x, range(start, start + want), axis=a)
        elif want > dim:
            width = [(0, 0)] * x.ndim
            width[a] = ((want - dim) // 2, want - dim - (want - dim) // 2)
            x = np.pad(x, width)
    return x


@pytest.mark.parametrize("shape,axes", [([3, 4], [1, 2]), ([8, 9], [-2, -1]), ([2, 1, 7, 6], None),
                                        ([5], [2])])
def test_center_crop_pad(tmp_path, shape, axes):
    x = rand(2, 5, 6, 3)
    attrs = {} if axes is None else {"axes": axes}
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], **attrs)
    (got,) = run(tmp_path, [node], {"x": x}, {"s": np.array(shape, np.int64)}, opset=18)
    close(got, np_center_crop_pad(x, shape, axes or range(4)), 0)


@pytest.mark.parametrize("shape,axes,why", [
    ([3], [1, 2], "shape has 1 entries for 2 axes"),
    ([0, 4], [1, 2], "shape entries must be >= 1"),
    ([3, 4], [1, 1], "an axis is repeated"),
])
def test_center_crop_pad_it_cannot_honour_is_refused_naming_the_node(tmp_path, shape, axes, why):
    node = helper.make_node("CenterCropPad", ["x", "s"], ["y"], name="ccp", axes=axes)
    refused(tmp_path, node, rand(2, 5, 6), {"s": np.array(shape, np.int64)}, why, opset=18)


def test_resize_nearest_integer_scale_and_tile(tmp_path):
    x = rand(1, 2, 3, 4)
    nodes = [helper.make_node("Resize", ["x", "", "sc"], ["r"], mode="nearest",
                              coordinate_transformation_mode="asymmetric", nearest_mode="floor"),
             helper.make_node("Tile", ["x", "rep"], ["t"])]
    r, t = run(tmp_path, nodes, {"x": x}, {"sc": np.array([1, 1, 2, 2], np.float32),
                                          "rep": np.array([1, 2, 1, 3], np.int64)}, outputs=("r", "t"))
    close(r, x.repeat(2, axis=2).repeat(2, axis=3))
    close(t, np.tile(x, (1, 2, 1, 3)))


def np_cubic_weights(f, a, taps, n, exclude_outside):
    """Keys' kernel at the four taps around a coordinate with fraction f (ONNX Resize cubic)."""
    def w(d):
        d = abs(d)
        if d <= 1:
            return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a if d < 2 else 0.0
    ws = np.array([w(f + 1), w(f), w(1 - f), w(2 - f)])
    if exclude_outside:
        ws = np.where([(0 <= t < n) for t in taps], ws, 0.0)
        ws /= ws.sum()
    return ws


def np_resize_axis(x, axis, out, scale, coord, mode="linear", a=-0.75, exclude_outside=0):
    """ONNX Resize mode linear or cubic along one axis, as the specification writes it: each
    output coordinate mapped back to the input, its neighbours read with edge padding."""
    n = x.shape[axis]
    rows = []
    for o in range(out):
        if coord == "align_corners":
            xo = 0.0 if out == 1 else o * (n - 1) / (out - 1)
        elif coord == "asymmetric":
            xo = o / scale
        elif coord == "pytorch_half_pixel" and out == 1:
            xo = 0.0
        else:
            xo = (o + 0.5) / scale - 0.5
        i0 = int(np.floor(xo))
        f = xo - i0
        def at(i):
            return np.take(x, min(max(i, 0), n - 1), axis=axis).astype(np.float64)
        if mode == "linear":
            rows.append(at(i0) * (1 - f) + at(i0 + 1) * f)
        else:
            taps = [i0 - 1, i0, i0 + 1, i0 + 2]
            ws = np_cubic_weights(f, a, taps, n, exclude_outside)
            rows.append(sum(wk * at(t) for wk, t in zip(ws, taps)))
    return np.stack(rows, axis=axis).astype(np.float32)


def np_resize(x, sizes, scales, coord, **kw):
    y = np_resize_axis(x, 2, sizes[2], scales[2], coord, **kw)
    return np_resize_axis(y, 3, sizes[3], scales[3], coord, **kw)


def resize_inputs(shape, scales, sizes):
    """Resize's inputs from either scales or sizes: (input names, initializers, the output
    sizes, the scales), the missing pair computed as ONNX does."""
    inits = {"roi": np.zeros(0, np.float32)}
    if scales is not None:
        inits["sc"] = np.array(scales, np.float32)
        return ["x", "roi", "sc"], inits, [int(np.floor(d * s)) for d, s in zip(shape, scales)], scales
    inits["sc"], inits["sz"] = np.zeros(0, np.float32), np.array(sizes, np.int64)
    return ["x", "roi", "sc", "sz"], inits, sizes, [o / i for o, i in zip(sizes, shape)]


@pytest.mark.parametrize("coord,scales,sizes", [
    ("half_pixel", [1, 1, 2, 3], None),            # F.interpolate(scale_factor=..., bilinear)
    ("half_pixel", [1, 1, 0.5, 0.75], None),       # downsampling (no antialias)
    ("pytorch_half_pixel", None, [2, 3, 1, 9]),    # one output row: PyTorch's special case
    ("align_corners", None, [2, 3, 7, 5]),
    ("align_corners", None, [2, 3, 1, 1]),
    ("asymmetric", [1, 1, 1.5, 2.5], None),
    ("half_pixel", None, [2, 3, 5, 4]),            # sizes equal to the input's: an identity
])
def test_resize_linear_in_every_coordinate_mode(tmp_path, coord, scales, sizes):
    x = rand(2, 3, 5, 4)
    inputs, inits, sizes, scales = resize_inputs(x.shape, scales, sizes)
    node = helper.make_node("Resize", inputs, ["y"], mode="linear",
                            coordinate_transformation_mode=coord)
    (got,) = run(tmp_path, [node], {"x": x}, inits)
    close(got, np_resize(x, sizes, scales, coord))


@pytest.mark.parametrize("coord,scales,sizes,a,exclude", [
    ("pytorch_half_pixel", [1, 1, 2, 2], None, -0.75, 0),   # F.interpolate(mode="bicubic")
    ("align_corners", None, [2, 3, 9, 7], -0.75, 0),        # bicubic, align_corners=True
    ("half_pixel", [1, 1, 0.5, 1.75], None, -0.5, 1),       # TensorFlow's a, taps inside only
    ("asymmetric", None, [2, 3, 3, 17], -0.75, 1),
])
def test_resize_cubic_in_every_coordinate_mode(tmp_path, coord, scales, sizes, a, exclude):
    x = rand(2, 3, 5, 4)
    inputs, inits, sizes, scales = resize_inputs(x.shape, scales, sizes)
    node = helper.make_node("Resize", inputs, ["y"], mode="cubic", cubic_coeff_a=a,
                            exclude_outside=exclude, coordinate_transformation_mode=coord)
    (got,) = run(tmp_path, [node], {"x": x}, inits)
    close(got, np_resize(x, sizes, scales, coord, mode="cubic", a=a, exclude_outside=exclude))


def test_upsample_bilinear_before_opset_10_is_asymmetric(tmp_path):
    x = rand(1, 2, 3, 4)
    node = helper.make_node("Upsample", ["x", "sc"], ["y"], mode="linear")
    (got,) = run(tmp_path, [node], {"x": x}, {"sc": np.array([1, 1, 2, 2], np.float32)}, opset=9)
    close(got, np_resize(x, [1, 2, 6, 8], [1, 1, 2, 2], "asymmetric"))


def np_nearest_sources(in_, out, scale, coord, rounding):
    o = np.arange(out, dtype=np.float64)
    x = {"half_pixel": (o + 0.5) / scale - 0.5,
         "pytorch_half_pixel": (o + 0.5) / scale - 0.5 if out > 1 else np.zeros(out),
         "align_corners": o * (in_ - 1) / (out - 1) if out > 1 else np.zeros(out),
         "asymmetric": o / scale,
         "tf_half_pixel_for_nn": (o + 0.5) / scale}[coord]
    half = x - np.floor(x) == 0.5
    i = {"floor": np.floor(x), "ceil": np.ceil(x),
         "round_prefer_floor": np.where(half, np.floor(x), np.round(x)),
         "round_prefer_ceil": np.where(half, np.ceil(x), np.round(x))}[rounding]
    return np.clip(i, 0, in_ - 1).astype(np.int64)


@pytest.mark.parametrize("coord", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                   "tf_half_pixel_for_nn"])
@pytest.mark.parametrize("rounding", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("scales,sizes", [([1, 1, 3, 3], None), ([1, 1, 1.5, 0.5], None),
                                          (None, [2, 3, 1, 11]), (None, [2, 3, 7, 4])])
def test_resize_nearest_to_any_size_in_every_mode(tmp_path, coord, rounding, scales, sizes):
    # Integer factors where the rounding repeats each pixel run as upsample_nearest2d; the rest
    # gather source rows and columns (before: refused, and asymmetric x3 with round_prefer_floor
    # repeated pixels as floor would).
    x = rand(2, 3, 5, 4)
    if sizes is None:
        inputs = ["x", "", "sc"]
        inits = {"sc": np.array(scales, np.float32)}
        out = [int(np.floor(d * s)) for d, s in zip(x.shape, scales)]
        sc = scales
    else:
        inputs = ["x", "", "", "sz"]
        inits = {"sz": np.array(sizes, np.int64)}
        out, sc = sizes, [o / d for o, d in zip(sizes, x.shape)]
    node = helper.make_node("Resize", inputs, ["y"], mode="nearest", coordinate_transformation_mode=coord,
                            nearest_mode=rounding)
    (got,) = run(tmp_path, [node], {"x": x}, inits, opset=13)
    rows = np_nearest_sources(5, out[2], sc[2], coord, rounding)
    cols = np_nearest_sources(4, out[3], sc[3], coord, rounding)
    close(got, x[:, :, rows][:, :, :, cols], 0)


@pytest.mark.parametrize("attrs,scales,why", [
    ({"mode": "spline"}, [1, 1, 2, 2], "mode 'spline' is not supported"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2],
     "'tf_crop_and_resize' is not supported for mode linear"),
    ({"mode": "linear"}, [1, 2, 2, 2], "only the spatial axes may be resized"),
    ({"mode": "linear"}, [1, 1, 0, 2], "scales must be positive"),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.5, 0.5], "antialias is not supported"),
    ({"mode": "linear"}, [1, 1, 2, 1e9], "larger interpolation matrix"),
    ({"mode": "nearest", "nearest_mode": "sideways"}, [1, 1, 2, 2], "unknown nearest_mode 'sideways'"),
    ({"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2],
     "'tf_crop_and_resize' is not supported for mode nearest"),
    ({"mode": "nearest"}, [1, 2, 2, 2], "only the spatial axes may be resized"),
])
def test_resize_it_cannot_honour_is_refused_naming_the_node(tmp_path, attrs, scales, why):
    node = helper.make_node("Resize", ["x", "roi", "sc"], ["y"], name="rs", **attrs)
    refused(tmp_path, node, rand(1, 2, 3, 4),
            {"roi": np.zeros(0, np.float32), "sc": np.array(scales, np.float32)}, why, opset=18)


@pytest.mark.parametrize("attrs,sizes,why", [
    ({"axes": [2, -2]}, [2, 2], "an axis is repeated"),
    ({"axes": [4]}, [2], "axis 4"),
    ({"axes": [2, 3]}, [2, 2, 2], "sizes must have 2 entries"),
    ({"axes": [3]}, [2, 2], "sizes must have 1 entry"),
    ({"keep_aspect_ratio_policy": "fit"}, [1, 2, 6, 6], "keep_aspect_ratio_policy 'fit' is unknown"),
    # One scale for every axis listed: here N and C too, whose sizes then change.
    ({"keep_aspect_ratio_policy": "not_smaller"}, [1, 2, 6, 8], "only the spatial axes"),
    ({}, [1, 2, 0, 8], "sizes must be >= 1"),
    ({}, [1, 2, 6], "sizes must have 4 entries"),
])
def test_resize_sizes_it_cannot_honour_are_refused_naming_the_node(tmp_path, attrs, sizes, why):
    node = helper.make_node("Resize", ["x", "", "", "sz"], ["y"], name="rs", mode="linear", **attrs)
    refused(tmp_path, node, rand(1, 2, 3, 4), {"sz": np.array(sizes, np.int64)}, why, opset=18)


@pytest.mark.parametrize("mode,axes,scales,sizes", [
    ("linear", [2, 3], [2.0, 1.5], None),
    ("linear", [3, 2], [1.5, 2.0], None),       # listed in any order
    ("nearest", [-1], None, [11]),              # one axis, counted from the end
    ("linear", [2], None, [3]),
])
def test_resize_of_listed_axes_at_opset_18(tmp_path, mode, axes, scales, sizes):
    # Opset 18's `axes`: scales or sizes for the listed axes only, the others kept.
    x = rand(2, 3, 5, 7)
    full_scales, full_sizes = [1.0] * 4, list(x.shape)
    for k, a in enumerate(axes):
        if scales is not None:
            full_scales[a] = scales[k]
            full_sizes[a] = int(np.floor(x.shape[a] * scales[k]))
        else:
            full_sizes[a] = sizes[k]
            full_scales[a] = sizes[k] / x.shape[a]
    if scales is not None:
        inputs, inits = ["x", "", "sc"], {"sc": np.array(scales, np.float32)}
    else:
        inputs, inits = ["x", "", "", "sz"], {"sz": np.array(sizes, np.int64)}
    node = helper.make_node("Resize", inputs, ["y"], mode=mode, axes=axes,
                            coordinate_transformation_mode="half_pixel")
    (got,) = run(tmp_path, [node], {"x": x}, inits, opset=18)
    assert list(got.shape) == full_sizes
    if mode == "linear":
        close(got, np_resize(x, full_sizes, full_scales, "half_pixel"))
    else:
        rows = np_nearest_sources(5, full_sizes[2], full_scales[2], "half_pixel", "round_prefer_floor")
        cols = np_nearest_sources(7, full_sizes[3], full_scales[3], "half_pixel", "round_prefer_floor")
        close(got, x[:, :, rows][:, :, :, cols], 0)


@pytest.mark.parametrize("policy,sizes,want_hw", [
    ("not_larger", [9, 9], (6, 9)),     # scale min(9/5, 9/7): 5 * 9/7 = 6.43 rounds to 6
    ("not_smaller", [9, 9], (9, 13)),   # scale 9/5: 7 * 1.8 = 12.6 rounds to 13
    ("not_larger", [20, 7], (5, 7)),    # scale 1: the input's size
    ("not_smaller", [3, 2], (3, 4)),    # scale 3/5, downsampling: 7 * 0.6 = 4.2 rounds to 4
])
@pytest.mark.parametrize("mode", ["linear", "nearest"])
def test_resize_keeping_the_aspect_ratio(tmp_path, policy, sizes, want_hw, mode):
    # keep_aspect_ratio_policy: one scale for the listed axes, each size rounded half up from it,
    # and that scale (not size / input) maps the coordinates.
    x = rand(1, 2, 5, 7)
    node = helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode=mode, axes=[2, 3],
                            keep_aspect_ratio_policy=policy)
    (got,) = run(tmp_path, [node], {"x": x}, {"sz": np.array(sizes, np.int64)}, opset=18)
    assert got.shape[2:] == want_hw
    ratios = [sizes[0] / 5, sizes[1] / 7]
    s = min(ratios) if policy == "not_larger" else max(ratios)
    out = [1, 2, *want_hw]
    if mode == "linear":
        close(got, np_resize(x, out, [1, 1, s, s], "half_pixel"))
    else:
        rows = np_nearest_sources(5, out[2], s, "half_pixel", "round_prefer_floor")
        cols = np_nearest_sources(7, out[3], s, "half_pixel", "round_prefer_floor")
        close(got, x[:, :, rows][:, :, :, cols], 0)


def test_resize_keeping_the_aspect_ratio_of_every_axis(tmp_path):
    # Without `axes` the policy's scale is over N and C too (1 here): nothing changes. Debian's
    # libonnx 1.12 reads such sizes as given ([1, 2, 9, 9]); its inference must not overrule.
    x = rand(1, 2, 5, 7)
    node = helper.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear",
                            keep_aspect_ratio_policy="not_larger")
    (got,) = run(tmp_path, [node], {"x": x}, {"sz": np.array([1, 2, 9, 9], np.int64)}, opset=18)
    close(got, x)


def test_activations(tmp_path):
    x = rand(3, 8) * 3
    nodes = [helper.make_node("HardSigmoid", ["x"], ["hs"], alpha=0.2, beta=0.4),
             helper.make_node("HardSwish", ["x"], ["hw"]),
             helper.make_node("LeakyRelu", ["x"], ["lr"], alpha=0.1),
             helper.make_node("Tanh", ["x"], ["th"]),
             helper.make_node("Reciprocal", ["x"], ["rc"])]
    hs, hw, lr, th, rc = run(tmp_path, nodes, {"x": x}, outputs=("hs", "hw", "lr", "th", "rc"), opset=14)
    close(hs, np.clip(0.2 * x + 0.4, 0, 1))
    close(hw, x * np.clip(x + 3, 0, 6) / 6)
    close(lr, np.where(x >= 0, x, 0.1 * x))
    close(th, np.tanh(x), 1e-5)
    close(rc, 1 / x, 1e-5)


def np_softplus(x):
    return np.logaddexp(0, x.astype(np.float64))


def np_elu(x, alpha):
    return np.where(x > 0, x, alpha * np.expm1(x.astype(np.float64)))


def test_composed_activations(tmp_path):
    # Activations cuvil builds from elementwise ops (map_activation.cc); |x| up to 100, where a
    # naive log(1 + exp(x)) overflows.
    x = np.concatenate([rand(2, 3, 4, 4) * 3, np.full((2, 3, 4, 1), 100, np.float32),
                        np.full((2, 3, 4, 1), -100, np.float32)], axis=3)
    slope = rand(3, 1, 1)
    nodes = [helper.make_node("PRelu", ["x", "slope"], ["pr"]),
             helper.make_node("PRelu", ["x", "one_slope"], ["pr1"]),
             helper.make_node("Elu", ["x"], ["elu"], alpha=0.7),
             helper.make_node("Celu", ["x"], ["celu"], alpha=0.5),
             helper.make_node("Selu", ["x"], ["selu"]),
             helper.make_node("Softplus", ["x"], ["sp"]),
             helper.make_node("Softsign", ["x"], ["ss"]),
             helper.make_node("ThresholdedRelu", ["x"], ["tr"], alpha=0.4)]
    outs = ("pr", "pr1", "elu", "celu", "selu", "sp", "ss", "tr")
    got = dict(zip(outs, run(tmp_path, nodes, {"x": x}, {"slope": slope, "one_slope": np.float32([0.3])},
                             outputs=outs)))
    close(got["pr"], np.where(x >= 0, x, slope * x))
    close(got["pr1"], np.where(x >= 0, x, 0.3 * x))
    close(got["elu"], np_elu(x, 0.7))
    close(got["celu"], np.maximum(x, 0) + np.minimum(0, 0.5 * np.expm1(x.astype(np.float64) / 0.5)))
    alpha, gamma = 1.6732632423543772, 1.0507009873554805
    close(got["selu"], gamma * np_elu(x, alpha))
    close(got["sp"], np_softplus(x))
    close(got["ss"], x / (1 + np.abs(x)))
    close(got["tr"], np.where(x > 0.4, x, 0))


@pytest.mark.parametrize("op,opset,attrs,fn", [
    ("Mish", 18, {}, lambda x: x * np.tanh(np_softplus(x))),
    ("Gelu", 20, {"approximate": "tanh"},
     lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x.astype(np.float64) ** 3)))),
    ("Gelu", 20, {}, lambda x: 0.5 * x * (1 + np.vectorize(math.erf)(x / np.sqrt(2)))),
])
def test_activations_of_newer_opsets(tmp_path, op, opset, attrs, fn):
    x = rand(3, 17) * 4
    (got,) = run(tmp_path, [helper.make_node(op, ["x"], ["y"], **attrs)], {"x": x}, opset=opset)
    close(got, fn(x))


@pytest.mark.parametrize("node,opset,why", [
    (helper.make_node("Gelu", ["x"], ["y"], name="g", approximate="fast"), 20, "unknown approximate 'fast'"),
    (helper.make_node("Celu", ["x"], ["y"], name="g", alpha=0.0), 17, "alpha must not be 0"),
])
def test_activation_attributes_it_cannot_honour_are_refused_naming_the_node(tmp_path, node, opset, why):
    refused(tmp_path, node, rand(2, 3), {}, why, opset=opset)


@pytest.mark.parametrize("upper,k", [(1, 0), (1, 1), (0, 0), (0, -2), (1, -9)])
def test_trilu_at_run_time_and_folded(tmp_path, upper, k):
    # Causal masks: torch.triu of a -inf matrix must keep its zeros exact (no -inf * 0 = NaN).
    x = rand(2, 5, 7)
    x[0, 0, :] = -np.inf
    c = rand(5, 7)
    nodes = [helper.make_node("Trilu", ["x", "k"], ["t"], upper=upper),
             helper.make_node("Trilu", ["c", "k"], ["tc"], upper=upper),
             helper.make_node("Add", ["t", "tc"], ["y"])]
    inits = {"c": c, "k": np.array(k, np.int64)}
    t, y = run(tmp_path, nodes, {"x": x}, inits, outputs=("t", "y"), opset=14)
    tri = np.triu if upper else np.tril
    want = tri(x, k)
    assert np.array_equal(np.isinf(t), np.isinf(want)) and not np.isnan(t).any()
    finite = np.isfinite(want)
    close(t[finite], want[finite])
    close(y[finite], (want + tri(c, k))[finite])


def test_cast_of_a_run_time_integer_input_to_float_allows_arithmetic(tmp_path):
    # BERT's extended attention mask: (1.0 - mask.float()) * -10000.
    mask = np.array([[1, 1, 0, 0], [1, 0, 1, 0]], np.int64)
    nodes = [helper.make_node("Cast", ["mask"], ["m"], to=F),
             helper.make_node("Sub", ["one", "m"], ["inv"]),
             helper.make_node("Mul", ["inv", "big"], ["y"])]
    inits = {"one": np.float32(1.0), "big": np.float32(-10000.0)}
    (got,) = run(tmp_path, nodes, {"mask": mask}, inits)
    close(got, (1.0 - mask.astype(np.float32)) * -10000.0)


@pytest.mark.parametrize("op,fn", [("Equal", np.equal), ("Less", np.less),
                                   ("LessOrEqual", np.less_equal), ("Greater", np.greater),
                                   ("GreaterOrEqual", np.greater_equal)])
def test_comparisons_of_run_time_values_give_masks(tmp_path, op, fn):
    # Small integers make equal pairs; a NaN compares false; b broadcasts along the rows.
    a = RNG.integers(0, 3, (3, 7)).astype(np.float32)
    a[1, 2] = np.nan
    b = RNG.integers(0, 3, (7,)).astype(np.float32)
    nodes = [helper.make_node(op, ["a", "b"], ["m"]),
             helper.make_node("Cast", ["m"], ["y"], to=F)]
    (got,) = run(tmp_path, nodes, {"a": a, "b": b})
    assert np.array_equal(got, fn(a, b).astype(np.float32))


def test_logic_on_run_time_masks(tmp_path):
    a, b = rand(4, 5), rand(4, 5)
    nodes = [helper.make_node("Greater", ["a", "zero"], ["p"]),
             helper.make_node("Less", ["b", "zero"], ["q"]),
             helper.make_node("And", ["p", "q"], ["pq"]),
             helper.make_node("Or", ["p", "q"], ["p_or_q"]),
             helper.make_node("Xor", ["p", "q"], ["p_xor_q"]),
             helper.make_node("Not", ["pq"], ["n"])]
    nodes += [helper.make_node("Cast", [m], [m + "_f"], to=F) for m in ("p_or_q", "p_xor_q", "n")]
    (got_or, got_xor, got_not) = run(tmp_path, nodes, {"a": a, "b": b}, {"zero": np.float32(0)},
                                     outputs=("p_or_q_f", "p_xor_q_f", "n_f"))
    p, q = a > 0, b < 0
    assert np.array_equal(got_or, (p | q).astype(np.float32))
    assert np.array_equal(got_xor, (p ^ q).astype(np.float32))
    assert np.array_equal(got_not, (~(p & q)).astype(np.float32))


def test_padding_mask_from_an_integer_input(tmp_path):
    # nn.TransformerEncoder's src_key_padding_mask=(mask == 0), and mask.bool() of counts.
    mask = np.array([[1, 1, 0, 0], [2, 0, 1, 0]], np.int64)
    x = rand(2, 4)
    nodes = [helper.make_node("Equal", ["mask", "zero"], ["pad"]),
             helper.make_node("Where", ["pad", "ninf", "x"], ["y"]),
             helper.make_node("Cast", ["mask"], ["b"], to=TensorProto.BOOL),
             helper.make_node("Cast", ["b"], ["z"], to=F)]
    inits = {"zero": np.int64(0), "ninf": np.float32(-np.inf)}
    y, z = run(tmp_path, nodes, {"mask": mask, "x": x}, inits, outputs=("y", "z"))
    assert np.array_equal(y, np.where(mask == 0, np.float32(-np.inf), x))
    assert np.array_equal(z, (mask != 0).astype(np.float32))


@pytest.mark.parametrize("exclusive,reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum_at_run_time_and_folded(tmp_path, exclusive, reverse):
    x, c = rand(3, 7), rand(3, 7)

    def want(a):
        a = a[:, ::-1] if reverse else a
        s = np.cumsum(a, axis=1, dtype=np.float64)
        s = s - a if exclusive else s
        return (s[:, ::-1] if reverse else s).astype(np.float32)

    nodes = [helper.make_node("CumSum", ["x", "axis"], ["y"], exclusive=exclusive, reverse=reverse),
             helper.make_node("CumSum", ["c", "axis"], ["cs"], exclusive=exclusive, reverse=reverse),
             helper.make_node("Add", ["y", "cs"], ["z"])]
    y, z = run(tmp_path, nodes, {"x": x}, {"c": c, "axis": np.int64(-1)}, outputs=("y", "z"))
    close(y, want(x))
    close(z, want(x) + want(c))


def test_position_ids_counted_from_run_time_integers(tmp_path):
    # RoBERTa: m = (ids != pad); pos = cumsum(m) * m + pad, then an embedding lookup of pos.
    ids = np.array([[5, 7, 9, 1, 1], [4, 1, 6, 8, 2]], np.int64)
    table = rand(8, 3)
    nodes = [helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
             helper.make_node("Not", ["is_pad"], ["m_b"]),
             helper.make_node("Cast", ["m_b"], ["m"], to=TensorProto.INT32),
             helper.make_node("CumSum", ["m", "axis"], ["cs"]),
             helper.make_node("Mul", ["cs", "m"], ["pm"]),
             helper.make_node("Cast", ["pm"], ["pm64"], to=TensorProto.INT64),
             helper.make_node("Add", ["pm64", "pad"], ["pos"]),
             helper.make_node("Gather", ["table", "pos"], ["y"])]
    inits = {"pad": np.int64(1), "axis": np.int64(1), "table": table}
    (got,) = run(tmp_path, nodes, {"ids": ids}, inits)
    m = (ids != 1).astype(np.int64)
    close(got, table[np.cumsum(m, axis=1) * m + 1])


def test_sinusoids_of_constants_fold(tmp_path):
    # A position table built in forward from constants: Range * frequencies, then Sin and Cos.
    # (Range of float initializers also crashed libonnx's shape inference when the importer had
    # dropped their data from the copy it infers on.)
    x = rand(5, 4)
    freq = np.array([1.0, 0.1], np.float32)
    nodes = [helper.make_node("Range", ["zero", "five", "one"], ["pos"]),
             helper.make_node("Unsqueeze", ["pos", "ax1"], ["pos2"]),
             helper.make_node("Mul", ["pos2", "freq"], ["ang"]),
             helper.make_node("Sin", ["ang"], ["s"]),
             helper.make_node("Cos", ["ang"], ["c"]),
             helper.make_node("Concat", ["s", "c"], ["table"], axis=1),
             helper.make_node("Add", ["x", "table"], ["y"])]
    inits = {"zero": np.float32(0), "five": np.float32(5), "one": np.float32(1),
             "ax1": np.array([1], np.int64), "freq": freq}
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    ang = np.arange(5, dtype=np.float32)[:, None] * freq
    close(got, x + np.concatenate([np.sin(ang), np.cos(ang)], axis=1))


def test_timestep_embedding_of_a_run_time_input(tmp_path):
    # A diffusion UNet's timestep embedding: t[:, None] * freqs, then [sin, cos] (also rotary
    # tables computed from position ids given as an input).
    t = np.array([1.0, 17.0, 999.0], np.float32)
    freqs = np.exp(-np.log(10000.0) * np.arange(4, dtype=np.float32) / 4).astype(np.float32)
    nodes = [helper.make_node("Unsqueeze", ["t", "ax1"], ["t2"]),
             helper.make_node("Mul", ["t2", "freqs"], ["ang"]),
             helper.make_node("Sin", ["ang"], ["s"]),
             helper.make_node("Cos", ["ang"], ["c"]),
             helper.make_node("Concat", ["s", "c"], ["y"], axis=1)]
    (got,) = run(tmp_path, nodes, {"t": t}, {"ax1": np.array([1], np.int64), "freqs": freqs})
    ang = t[:, None].astype(np.float64) * freqs
    close(got, np.concatenate([np.sin(ang), np.cos(ang)], axis=1).astype(np.float32), 1e-4)


def group_norm_reference(x, groups, scale, bias, eps):
    n, ch = x.shape[:2]
    g = x.reshape(n, groups, -1).astype(np.float64)
    g = (g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)
    shape = (1, ch) + (1,) * (x.ndim - 2)
    return (g.reshape(x.shape) * scale.reshape(shape) + bias.reshape(shape)).astype(np.float32)


@pytest.mark.parametrize("opset,shape,groups", [(21, (2, 6, 5, 7), 3), (21, (1, 4, 9), 2),
                                                (18, (2, 6, 3, 4, 5), 2), (18, (3, 5, 7, 1), 5)])
def test_group_normalization_per_channel_and_per_group(tmp_path, opset, shape, groups):
    # Opset 21's scale and bias hold one value per channel; opset 18's one per group.
    x = rand(*shape) * 2 + 1
    ch = shape[1]
    n_params = ch if opset >= 21 else groups
    scale, bias = rand(n_params), rand(n_params)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=groups,
                            epsilon=1e-3)
    (got,) = run(tmp_path, [node], {"x": x}, {"s": scale, "b": bias}, opset=opset)
    per_channel = lambda p: p if opset >= 21 else np.repeat(p, ch // groups)
    close(got, group_norm_reference(x, groups, per_channel(scale), per_channel(bias), 1e-3), 1e-4)


def test_group_normalization_with_run_time_per_group_parameters(tmp_path):
    x, scale, bias = rand(2, 6, 4, 4), rand(3), rand(3)
    node = helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3)
    (got,) = run(tmp_path, [node], {"x": x, "s": scale, "b": bias}, opset=18)
    close(got, group_norm_reference(x, 3, np.repeat(scale, 2), np.repeat(bias, 2), 1e-5), 1e-4)


def test_group_normalization_refusals_name_the_node(tmp_path):
    x, p3 = rand(2, 6, 4, 4), rand(3)
    node = lambda **kw: helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], name="gn", **kw)
    refused(tmp_path, node(), x, {"s": p3, "b": p3}, "num_groups", opset=21)
    refused(tmp_path, node(num_groups=4), x, {"s": rand(6), "b": rand(6)}, "must divide the 6", opset=21)
    refused(tmp_path, node(num_groups=3), x, {"s": rand(4), "b": rand(4)}, "scale must hold 6", opset=21)


TRIG = {"Tan": np.tan, "Asin": np.arcsin, "Acos": np.arccos, "Atan": np.arctan, "Sinh": np.sinh,
        "Cosh": np.cosh, "Asinh": np.arcsinh, "Acosh": np.arccosh, "Atanh": np.arctanh}


@pytest.mark.parametrize("op", sorted(TRIG))
def test_trigonometric_and_hyperbolic_at_run_time_and_folded(tmp_path, op):
    x = np.tanh(rand(3, 7)) * 0.95  # inside every domain but Acosh's
    if op == "Acosh":
        x = 1 + np.abs(x) * 3
    c = x[::-1].copy()
    nodes = [helper.make_node(op, ["x"], ["y"]), helper.make_node(op, ["c"], ["cy"]),
             helper.make_node("Add", ["y", "cy"], ["z"])]
    y, z = run(tmp_path, nodes, {"x": x}, {"c": c}, outputs=("y", "z"))
    f = TRIG[op]
    close(y, f(x.astype(np.float64)).astype(np.float32))
    close(z, (f(x.astype(np.float64)) + f(c.astype(np.float64))).astype(np.float32))


def test_floor_ceil_round_sign_at_run_time(tmp_path):
    x = np.array([[-2.5, -1.5, -0.5, 0.0, 0.5, 1.5, 2.5, 2.7, -2.7, np.nan]], np.float32)
    nodes = [helper.make_node(op, ["x"], [op.lower()]) for op in ("Floor", "Ceil", "Round", "Sign")]
    floor, ceil, round_, sign = run(tmp_path, nodes, {"x": x},
                                    outputs=("floor", "ceil", "round", "sign"))
    for got, want in ((floor, np.floor(x)), (ceil, np.ceil(x)), (round_, np.round(x)),
                      (sign, np.sign(x))):
        np.testing.assert_array_equal(got, want)  # np.round: halves to even, as ONNX


def test_sign_of_run_time_integers_stays_an_index(tmp_path):
    ids = np.array([[3, 0, 5]], np.int64)
    table = rand(2, 4)
    nodes = [helper.make_node("Sign", ["ids"], ["s"]),
             helper.make_node("Gather", ["table", "s"], ["y"])]
    (got,) = run(tmp_path, nodes, {"ids": ids}, {"table": table})
    close(got, table[np.sign(ids)])


@pytest.mark.parametrize("op,fn", [("ReduceL1", lambda x, k: np.abs(x).sum(1, keepdims=k)),
                                   ("ReduceL2", lambda x, k: np.sqrt((x * x).sum(1, keepdims=k))),
                                   ("ReduceSumSquare", lambda x, k: (x * x).sum(1, keepdims=k)),
                                   ("ReduceMin", lambda x, k: x.min(1, keepdims=k))])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_norm_and_min_reductions_at_run_time_and_folded(tmp_path, op, fn, keepdims):
    x, c = rand(3, 7, 2), rand(3, 7, 2)
    nodes = [helper.make_node(op, ["x"], ["y"], axes=[1], keepdims=keepdims),
             helper.make_node(op, ["c"], ["cy"], axes=[1], keepdims=keepdims),
             helper.make_node("Add", ["y", "cy"], ["z"])]
    y, z = run(tmp_path, nodes, {"x": x}, {"c": c}, opset=17, outputs=("y", "z"))
    close(y, fn(x, bool(keepdims)))
    close(z, fn(x, bool(keepdims)) + fn(c, bool(keepdims)))


@pytest.mark.parametrize("op,fn", [("ReduceMean", lambda x, a, k: x.mean(a, keepdims=k)),
                                   ("ReduceMax", lambda x, a, k: x.max(a, keepdims=k)),
                                   ("ReduceMin", lambda x, a, k: x.min(a, keepdims=k)),
                                   ("ReduceL2", lambda x, a, k: np.sqrt((x * x).sum(a, keepdims=k))),
                                   ("ReduceLogSumExp",
                                    lambda x, a, k: np.log(np.exp(x).sum(a, keepdims=k)))])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_opset_18_reductions_take_axes_as_an_input(tmp_path, op, fn, keepdims):
    # From opset 18 every reduction reads `axes` as its second input (PyTorch 2's exporter and
    # the RMSNorm of Llama exports write ReduceMean so); Debian's libonnx (1.12) knows only the
    # older schemas, whose single input the importer's arity check and libonnx's shape inference
    # would otherwise assume. An empty axes name reduces every axis; a Constant node holds axes too.
    x = rand(3, 7, 5)
    nodes = [helper.make_node("Constant", [], ["axes_c"],
                              value=helper.make_tensor("v", TensorProto.INT64, [2], [0, -1])),
             helper.make_node(op, ["x", "axes"], ["y"], keepdims=keepdims),
             helper.make_node(op, ["x", "axes_c"], ["z"], keepdims=keepdims),
             helper.make_node(op, ["x", ""], ["all"], keepdims=keepdims)]
    y, z, every = run(tmp_path, nodes, {"x": x}, {"axes": np.array([1], np.int64)}, opset=18,
                      outputs=("y", "z", "all"))
    k = bool(keepdims)
    close(y, fn(x, 1, k))
    close(z, fn(x, (0, 2), k))
    close(every, fn(x, None, k))


def test_rms_norm_at_opset_18(tmp_path):
    x, w = rand(2, 5, 16), rand(16)
    nodes = [helper.make_node("Mul", ["x", "x"], ["sq"]),
             helper.make_node("ReduceMean", ["sq", "axes"], ["ms"], keepdims=1),
             helper.make_node("Add", ["ms", "eps"], ["mse"]),
             helper.make_node("Sqrt", ["mse"], ["rms"]),
             helper.make_node("Div", ["x", "rms"], ["n"]),
             helper.make_node("Mul", ["n", "w"], ["y"])]
    inits = {"axes": np.array([-1], np.int64), "eps": np.float32(1e-6), "w": w}
    (got,) = run(tmp_path, nodes, {"x": x}, inits, opset=18)
    close(got, x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w)


def test_opset_18_reduction_with_run_time_axes_is_refused(tmp_path):
    x = rand(3, 4)
    node = helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean")
    refused(tmp_path, node, x, {}, "axes", runtime=[("axes", np.zeros(1, np.float32))], opset=18)


def test_is_nan_and_is_inf_in_every_detection_mode(tmp_path):
    x = np.array([[np.nan, np.inf, -np.inf, 0.0, -2.5, 3e38]], np.float32)
    nodes = [helper.make_node("IsNaN", ["x"], ["nan"]),
             helper.make_node("IsInf", ["x"], ["inf"]),
             helper.make_node("IsInf", ["x"], ["pos"], detect_negative=0),
             helper.make_node("IsInf", ["x"], ["neg"], detect_positive=0),
             helper.make_node("IsInf", ["x"], ["none"], detect_positive=0, detect_negative=0)]
    nodes += [helper.make_node("Cast", [n], [n + "_f"], to=F) for n in ("nan", "inf", "pos", "neg", "none")]
    got = run(tmp_path, nodes, {"x": x}, outputs=("nan_f", "inf_f", "pos_f", "neg_f", "none_f"))
    for g, want in zip(got, (np.isnan(x), np.isinf(x), np.isposinf(x), np.isneginf(x),
                                 np.zeros(x.shape, bool))):
        np.testing.assert_array_equal(g, want.astype(np.float32))


def test_clip_with_run_time_bounds_and_of_run_time_integers(tmp_path):
    x, lo, hi = rand(3, 5), rand(1, 5), rand(3, 1) + 1
    ids = np.array([[-3, 0, 4, 9]], np.int64)
    table = rand(6, 2)
    nodes = [helper.make_node("Clip", ["x", "lo", "hi"], ["y"]),
             helper.make_node("Clip", ["x", "", "hi"], ["upper"]),
             helper.make_node("Clip", ["ids", "zero", "five"], ["at"]),
             helper.make_node("Gather", ["table", "at"], ["rows"])]
    inits = {"zero": np.int64(0), "five": np.int64(5), "table": table}
    y, upper, rows = run(tmp_path, nodes, {"x": x, "lo": lo, "hi": hi, "ids": ids}, inits,
                         outputs=("y", "upper", "rows"))
    close(y, np.minimum(np.maximum(x, lo), hi))
    close(upper, np.minimum(x, hi))
    close(rows, table[np.clip(ids, 0, 5)])


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_log_sum_exp_with_infinite_rows(tmp_path, keepdims):
    x = rand(4, 6) * 30
    x[1] = -np.inf
    x[2, 3] = np.inf
    node = helper.make_node("ReduceLogSumExp", ["x"], ["y"], axes=[1], keepdims=keepdims)
    (got,) = run(tmp_path, [node], {"x": x})
    m = x.max(1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        want = np.log(np.exp(x.astype(np.float64) - m).sum(1, keepdims=True)) + m
    want = want if keepdims else want[:, 0]
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=1e-6)
