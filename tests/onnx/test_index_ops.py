"""Operators that compute with positions and integers at run time: ArgMax, ArgMin, TopK, casts
from float to integer, integer Div and Mod, the gathers, and ScatterND and ScatterElements into
run-time data (at constant or run-time indices). Single-node (or
short) ONNX graphs through `cuvil-bench infer`, against numpy written from the ONNX
specification; integer results come back as floats (fp32 storage) and must be exact."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from conftest import cuvil
from test_op_semantics import close, rand, refused, run

F = TensorProto.FLOAT


def exact(got, want):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want.astype(np.float32))


def np_arg(x, axis, keepdims, last, is_max):
    """ONNX ArgMax/ArgMin; NaN ranks above every number (as PyTorch's argmax and numpy's)."""
    v = np.flip(x, axis) if last else x
    i = np.argmax(v, axis) if is_max else np.argmin(v, axis)
    if last:
        i = x.shape[axis] - 1 - i
    return np.expand_dims(i, axis) if keepdims else i


@pytest.mark.parametrize("op", ["ArgMax", "ArgMin"])
@pytest.mark.parametrize("axis,keepdims,last", [(0, 1, 0), (1, 0, 0), (-1, 1, 1), (2, 0, 1)])
def test_arg_max_and_min_with_ties_on_every_axis(tmp_path, op, axis, keepdims, last):
    # Rounded values make ties, which select_last_index breaks either way.
    x = np.round(rand(3, 7, 17) * 2).astype(np.float32)
    node = helper.make_node(op, ["x"], ["y"], axis=axis, keepdims=keepdims, select_last_index=last)
    (got,) = run(tmp_path, [node], {"x": x}, int_outputs=("y",))
    exact(got, np_arg(x, axis, keepdims, last, op == "ArgMax"))


def test_arg_max_of_infinities_and_nan(tmp_path):
    x = np.array([[-np.inf, -np.inf, -np.inf], [1, np.nan, np.nan], [np.inf, 2, np.inf],
                  [np.nan, np.inf, 0]], np.float32)
    nodes = [helper.make_node("ArgMax", ["x"], ["y"], axis=1, keepdims=0),
             helper.make_node("ArgMin", ["x"], ["z"], axis=1, keepdims=0)]
    y, z = run(tmp_path, nodes, {"x": x}, outputs=("y", "z"), int_outputs=("y", "z"))
    exact(y, [0, 1, 0, 0])
    exact(z, [0, 1, 1, 0])  # numpy's argmin returns the first NaN too


def test_arg_max_of_run_time_token_ids_picks_a_row(tmp_path):
    # CLIP's text encoder pools at the end-of-text token: the argmax of the ids (an integer
    # input), flattened with the batch position, gathers one row per sequence.
    ids = np.array([[4, 9, 99, 0, 0], [5, 99, 0, 0, 0], [99, 1, 2, 3, 4]], np.int64)
    h = rand(3, 5, 6)
    nodes = [helper.make_node("ArgMax", ["ids"], ["at"], axis=-1, keepdims=0),
             helper.make_node("Mul", ["rows", "five"], ["base"]),
             helper.make_node("Add", ["base", "at"], ["flat_at"]),
             helper.make_node("Reshape", ["h", "flat_shape"], ["flat"]),
             helper.make_node("Gather", ["flat", "flat_at"], ["y"])]
    inits = {"rows": np.arange(3, dtype=np.int64), "five": np.int64(5),
             "flat_shape": np.array([15, 6], np.int64)}
    (got,) = run(tmp_path, nodes, {"ids": ids, "h": h}, inits)
    exact(got, h[np.arange(3), ids.argmax(-1)])


def np_top_k(x, k, axis, largest):
    # A stable sort of -x (or x) puts equal values in index order, as ONNX requires.
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis), idx


@pytest.mark.parametrize("k,axis,largest", [(1, -1, 1), (3, -1, 1), (5, 1, 0), (17, 2, 1), (2, 0, 0)])
def test_top_k_values_and_indices_with_ties(tmp_path, k, axis, largest):
    x = np.round(rand(3, 7, 17) * 2).astype(np.float32)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=axis, largest=largest)
    v, i = run(tmp_path, [node], {"x": x}, {"k": np.array([k], np.int64)}, outputs=("v", "i"),
               int_outputs=("i",))
    want_v, want_i = np_top_k(x, k, axis, largest)
    exact(v, want_v)
    exact(i, want_i)


def test_top_k_takes_each_position_once_among_infinities(tmp_path):
    x = np.array([[-np.inf, 3, -np.inf, -np.inf], [np.inf, np.inf, 1, np.inf]], np.float32)
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)
    v, i = run(tmp_path, [node], {"x": x}, {"k": np.array([4], np.int64)}, outputs=("v", "i"),
               int_outputs=("i",))
    exact(i, [[1, 0, 2, 3], [0, 1, 3, 2]])
    exact(v, np.take_along_axis(x, i.astype(np.int64), 1))


def test_top_k_of_run_time_integers_and_the_attribute_form(tmp_path):
    ids = np.array([[4, -9, 12, 4, 0, 7]], np.int64)
    node = helper.make_node("TopK", ["ids"], ["v", "i"], k=3, largest=0)
    nodes = [node, helper.make_node("Cast", ["v"], ["vf"], to=F)]
    vf, i = run(tmp_path, nodes, {"ids": ids}, opset=9, outputs=("vf", "i"), int_outputs=("i",))
    exact(vf, [[-9, 0, 4]])
    exact(i, [[1, 4, 0]])


@pytest.mark.parametrize("k,why", [(0, "k is 0 for an axis of 7"), (8, "k is 8 for an axis of 7")])
def test_top_k_beyond_the_axis_is_refused(tmp_path, k, why):
    node = helper.make_node("TopK", ["x", "k"], ["y", "i"], name="topk", axis=1)
    refused(tmp_path, node, rand(2, 7), {"k": np.array([k], np.int64)}, why)


def test_top_k_above_its_round_limit_is_refused(tmp_path):
    node = helper.make_node("TopK", ["x", "k"], ["y", "i"], name="topk", axis=1)
    refused(tmp_path, node, rand(1, 100), {"k": np.array([65], np.int64)}, "at most 64")


@pytest.mark.parametrize("to", [TensorProto.INT64, TensorProto.INT32, TensorProto.UINT8])
def test_cast_of_floats_to_integers_truncates_toward_zero(tmp_path, to):
    x = np.array([[-2.9, -2.5, -1.0, -0.4, 0.0, 0.4, 1.0, 2.5, 2.9, 250.7]], np.float32)
    if to == TensorProto.UINT8:
        x = np.abs(x)
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=to),
             helper.make_node("Cast", ["i"], ["y"], to=F)]
    (got,) = run(tmp_path, nodes, {"x": x})
    exact(got, np.trunc(x))


def test_cast_of_floats_to_integers_indexes_an_embedding(tmp_path):
    # A quantised-position lookup: (x.clamp(0, 1) * 15).long() picks table rows.
    x = np.array([[0.0, 0.33, 0.999, 1.0, 0.5]], np.float32)
    table = rand(16, 3)
    nodes = [helper.make_node("Mul", ["x", "fifteen"], ["s"]),
             helper.make_node("Cast", ["s"], ["at"], to=TensorProto.INT64),
             helper.make_node("Gather", ["table", "at"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x}, {"fifteen": np.float32(15), "table": table})
    exact(got, table[(x * np.float32(15)).astype(np.int64)])


SIGNED = np.array([[7, -7, 7, -7, 0, 6, -6, 16777215, -16777215, 5]], np.int64)
DIVISORS = np.array([[2, 2, -2, -2, 3, 3, 3, 3, 7, -1]], np.int64)


def test_integer_division_of_run_time_values_truncates_toward_zero(tmp_path):
    nodes = [helper.make_node("Div", ["a", "b"], ["q"]),
             helper.make_node("Cast", ["q"], ["y"], to=F)]
    (got,) = run(tmp_path, nodes, {"a": SIGNED, "b": DIVISORS})
    exact(got, np.trunc(SIGNED / DIVISORS))


@pytest.mark.parametrize("fmod", [0, 1])
def test_integer_mod_of_run_time_values_in_either_sign_rule(tmp_path, fmod):
    nodes = [helper.make_node("Mod", ["a", "b"], ["r"], fmod=fmod),
             helper.make_node("Cast", ["r"], ["y"], to=F)]
    (got,) = run(tmp_path, nodes, {"a": SIGNED, "b": DIVISORS})
    exact(got, np.fmod(SIGNED, DIVISORS) if fmod else np.mod(SIGNED, DIVISORS))


def test_fmod_of_run_time_floats_takes_the_dividends_sign(tmp_path):
    x = (rand(3, 17) * 4).astype(np.float32)
    d = np.array([0.7, -1.3, 2.5], np.float32)[:, None]
    node = helper.make_node("Mod", ["x", "d"], ["y"], fmod=1)
    (got,) = run(tmp_path, [node], {"x": x}, {"d": d})
    np.testing.assert_allclose(got, np.fmod(x, d), atol=1e-6)


def test_float_mod_without_fmod_is_refused(tmp_path):
    node = helper.make_node("Mod", ["x", "d"], ["y"], name="wrap")
    refused(tmp_path, node, rand(2, 3), {"d": np.float32(0.5)}, "fmod must be 1")


def np_scatter_nd(data, indices, updates, reduction):
    out = data.copy()
    k = indices.shape[-1]
    for t, idx in enumerate(indices.reshape(-1, k)):
        u = updates.reshape((-1,) + data.shape[k:])[t]
        at = tuple(idx)
        out[at] = {"none": lambda o: u, "add": lambda o: o + u, "mul": lambda o: o * u,
                   "max": lambda o: np.maximum(o, u), "min": lambda o: np.minimum(o, u)}[reduction](out[at])
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_of_constant_updates_into_run_time_data(tmp_path, reduction):
    # Repeated index tuples combine in order; with none the last one wins.
    x = rand(4, 3, 5)
    indices = np.array([[1, 2], [3, 0], [1, 2], [-4, 1]], np.int64)
    updates = rand(4, 5)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    (got,) = run(tmp_path, [node], {"x": x}, {"i": indices, "u": updates}, opset=18)
    want = np_scatter_nd(x, indices, updates, reduction)
    if reduction in ("add", "mul"):  # x + (u1 + u2) against numpy's (x + u1) + u2
        close(got, want, 1e-6)
    else:
        exact(got, want)


def test_scatter_nd_of_run_time_updates_into_run_time_data(tmp_path):
    # y[:, 0] = v traced into the graph: whole-row tuples of run-time updates.
    x, v = rand(3, 4, 2), rand(3, 2)
    indices = np.array([[[0, 0]], [[1, 0]], [[2, 0]]], np.int64)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"])
    (got,) = run(tmp_path, [node], {"x": x, "u": v.reshape(3, 1, 2)}, {"i": indices})
    want = x.copy()
    want[:, 0] = v
    exact(got, want)


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_reductions_of_run_time_updates_with_repeated_targets(tmp_path, reduction):
    # Row 1 receives three updates, row 3 one, rows 0 and 2 none.
    x, u = rand(4, 3), rand(4, 3)
    indices = np.array([[1], [3], [1], [-3]], np.int64)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    (got,) = run(tmp_path, [node], {"x": x, "u": u}, {"i": indices}, opset=18)
    close(got, np_scatter_nd(x, indices, u, reduction), 1e-6)


def test_scatter_of_more_repeats_than_it_unrolls_runs_in_index_order(tmp_path):
    # 17 run-time updates of one row at constant indices: past 16 layers the IR's scatter runs.
    x, u = rand(3, 2), rand(17, 2)
    indices = np.zeros((17, 1), np.int64)
    indices[::3] = 2
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="acc", reduction="add")
    (got,) = run(tmp_path, [node], {"x": x, "u": u}, {"i": indices}, opset=16)
    close(got, np_scatter_nd(x, indices, u, "add"), 1e-6)


def np_gather_elements(x, idx, axis):
    at = list(np.indices(idx.shape))
    at[axis] = np.where(idx < 0, idx + x.shape[axis], idx)
    return x[tuple(at)]


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_gather_elements_at_run_time_and_constant_indices(tmp_path, axis):
    # Indices may be shorter than the data on every axis; negative ones count from the end.
    x = rand(4, 5, 7)
    n = x.shape[axis]
    shape = [3, 4, 6]
    idx = np.random.default_rng(3).integers(-n, n, shape).astype(np.int64)
    nodes = [helper.make_node("GatherElements", ["x", "idx"], ["y"], axis=axis),
             helper.make_node("GatherElements", ["x", "cidx"], ["z"], axis=axis)]
    y, z = run(tmp_path, nodes, {"x": x, "idx": idx}, {"cidx": idx}, outputs=("y", "z"))
    exact(y, np_gather_elements(x, idx, axis))
    exact(z, np_gather_elements(x, idx, axis))


def test_gather_elements_index_out_of_range_at_run_time_is_an_error(tmp_path):
    x, idx = rand(2, 3), np.array([[0, 3, 1]], np.int64)
    node = helper.make_node("GatherElements", ["x", "idx"], ["y"], name="pick", axis=1)
    with pytest.raises(AssertionError, match=r"node 'pick' \(gather\): the index at position 1 is out of range"):
        run(tmp_path, [node], {"x": x, "idx": idx})


def test_gather_elements_constant_index_out_of_range_is_refused(tmp_path):
    node = helper.make_node("GatherElements", ["x", "idx"], ["y"], name="pick", axis=1)
    refused(tmp_path, node, rand(2, 3), {"idx": np.array([[0, -4, 1]], np.int64)},
            "index -4 is out of range for axis size 3")


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_one_hot_of_run_time_indices(tmp_path, axis):
    # Negative indices count from the end; those outside [-depth, depth) give a row of off.
    ids = np.array([[0, 3, -1], [4, -5, -6]], np.int64)
    node = helper.make_node("OneHot", ["ids", "depth", "values"], ["y"], axis=axis)
    inits = {"depth": np.int64(5), "values": np.array([-0.5, 2.0], np.float32)}
    (got,) = run(tmp_path, [node], {"ids": ids}, inits)
    wrapped = np.where(ids < 0, ids + 5, ids)
    want = np.where(wrapped[..., None] == np.arange(5), 2.0, -0.5).astype(np.float32)
    exact(got, np.moveaxis(want, -1, axis))


def np_scatter_elements(data, idx, updates, axis, reduction):
    out = data.copy()
    for p in np.ndindex(*idx.shape):
        at = list(p)
        at[axis] = idx[p] + (data.shape[axis] if idx[p] < 0 else 0)
        at, u = tuple(at), updates[p]
        out[at] = {"none": u, "add": out[at] + u, "mul": out[at] * u,
                   "max": max(out[at], u), "min": min(out[at], u)}[reduction]
    return out


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
@pytest.mark.parametrize("axis", [1, -1])
def test_scatter_elements_of_constant_indices_into_run_time_data(tmp_path, reduction, axis):
    # x.scatter(axis, index, src): index shorter than the data, negative, repeated.
    x, upd = rand(3, 4, 5), rand(2, 3, 4)
    idx = np.random.default_rng(5).integers(-4, 4, (2, 3, 4)).astype(np.int64)
    nodes = [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis, reduction=reduction),
             helper.make_node("ScatterElements", ["x", "i", "ru"], ["z"], axis=axis)]
    y, z = run(tmp_path, nodes, {"x": x, "ru": upd}, {"i": idx, "u": upd}, opset=18,
               outputs=("y", "z"))
    close(y, np_scatter_elements(x, idx, upd, axis, reduction), 1e-6)
    exact(z, np_scatter_elements(x, idx, upd, axis, "none"))


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_of_run_time_indices(tmp_path, reduction, axis):
    # x.scatter(axis, index, src) with a computed index: shorter than the data on every axis,
    # negative, repeated (with none the last write in index order wins); run-time and constant
    # updates.
    x, upd = rand(3, 7, 5), rand(2, 5, 4)
    n = x.shape[axis]
    idx = np.random.default_rng(7).integers(-n, n, (2, 5, 4)).astype(np.int64)
    nodes = [helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=axis,
                              reduction=reduction),
             helper.make_node("ScatterElements", ["x", "i", "cu"], ["z"], axis=axis,
                              reduction=reduction)]
    y, z = run(tmp_path, nodes, {"x": x, "i": idx, "u": upd}, {"cu": upd}, opset=18,
               outputs=("y", "z"))
    want = np_scatter_elements(x, idx, upd, axis, reduction)
    exact(y, want)  # applied in index order, as numpy does: no reassociation
    exact(z, want)


def test_scatter_before_opset_11_of_run_time_indices(tmp_path):
    x, upd = rand(4, 3), rand(2, 3)
    idx = np.array([[3, 0, 1], [-1, 2, 1]], np.int64)
    node = helper.make_node("Scatter", ["x", "i", "u"], ["y"], axis=0)
    (got,) = run(tmp_path, [node], {"x": x, "i": idx, "u": upd}, opset=10)
    exact(got, np_scatter_elements(x, idx, upd, 0, "none"))


def test_scatter_elements_index_out_of_range_at_run_time_is_an_error(tmp_path):
    x, idx, upd = rand(2, 3), np.array([[0, 3, 1]], np.int64), rand(1, 3)
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="put", axis=1)
    with pytest.raises(AssertionError, match=r"node 'put' \(scatter\): the index at position 1 is out of range"):
        run(tmp_path, [node], {"x": x, "i": idx, "u": upd})


def test_scatter_elements_of_run_time_indices_with_an_unknown_reduction_is_refused(tmp_path):
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="put", axis=1,
                            reduction="mean")
    vi = [helper.make_tensor_value_info("x", F, [2, 3]),
          helper.make_tensor_value_info("i", TensorProto.INT64, [2, 1]),
          helper.make_tensor_value_info("u", F, [2, 1])]
    graph = helper.make_graph([node], "g", vi, [helper.make_tensor_value_info("y", F, None)])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), str(path))
    r = cuvil("verify", "--model", str(path), check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "node 'put' (ScatterElements)" in r.stderr, r.stderr
    assert "reduction 'mean' is not one of none, add, mul, max, min" in r.stderr, r.stderr


def test_scatter_elements_of_float_run_time_indices_is_refused(tmp_path):
    node = helper.make_node("ScatterElements", ["x", "i", "u"], ["y"], name="put", axis=1)
    refused(tmp_path, node, rand(2, 3), {"u": rand(2, 1)},
            "indices must be integers", runtime=[("i", rand(2, 1))])


@pytest.mark.parametrize("data_shape,idx_shape", [
    ((4, 3, 5), (4, 2)),     # rows of a 3-D tensor
    ((4, 3, 5), (2, 3, 1)),  # slabs, a 2-D grid of tuples
    ((4, 3, 5), (7, 3)),     # elements, repeated
    ((17,), (7, 1)),         # elements of a vector
    ((1, 2, 8, 4), (3, 3)),  # a KV cache's positions
])
@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_nd_of_run_time_indices(tmp_path, data_shape, idx_shape, reduction):
    # index_put with computed positions; negative indices count from the end.
    x = rand(*data_shape)
    sizes = np.array(data_shape[:idx_shape[-1]])
    gen = np.random.default_rng(11)
    idx = (gen.integers(0, 1 << 20, idx_shape) % (2 * sizes) - sizes).astype(np.int64)
    u = rand(*(idx_shape[:-1] + data_shape[idx_shape[-1]:]))
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], reduction=reduction)
    (got,) = run(tmp_path, [node], {"x": x, "i": idx, "u": u}, opset=18)
    exact(got, np_scatter_nd(x, idx, u, reduction))


def test_scatter_nd_index_out_of_range_at_run_time_is_an_error(tmp_path):
    x, idx, u = rand(2, 3), np.array([[1, 2], [0, 3]], np.int64), rand(2)
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="put")
    with pytest.raises(AssertionError, match=r"node 'put' \(scatter\): the index at position \d+ is out of range"):
        run(tmp_path, [node], {"x": x, "i": idx, "u": u})


@pytest.mark.parametrize("shapes,why", [
    ([(2, 3), (2, 2), (2, 3)], "updates have shape [2, 3], expected [2]"),
    ([(2, 3), (2, 3), (2,)], "index tuples of 3 entries for data of rank 2"),
])
def test_scatter_nd_of_run_time_indices_it_cannot_honour_is_refused(tmp_path, shapes, why):
    node = helper.make_node("ScatterND", ["x", "i", "u"], ["y"], name="put")
    vi = [helper.make_tensor_value_info("x", F, list(shapes[0])),
          helper.make_tensor_value_info("i", TensorProto.INT64, list(shapes[1])),
          helper.make_tensor_value_info("u", F, list(shapes[2]))]
    graph = helper.make_graph([node], "g", vi, [helper.make_tensor_value_info("y", F, None)])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    r = cuvil("verify", "--model", str(path), check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "node 'put' (ScatterND)" in r.stderr and why in r.stderr, r.stderr


@pytest.mark.parametrize("op,shapes,why", [
    ("GatherElements", [(2, 3), (2, 3, 1)], "indices have rank 3, data 2"),
    ("GatherElements", [(2, 3), (3, 1)], "indices' axis 0 (3) is longer than the data's (2)"),
    ("ScatterElements", [(2, 3), (2, 1), (2, 2)], "updates have shape [2, 2], indices [2, 1]"),
    ("ScatterElements", [(2, 3), (3, 1), (3, 1)], "indices' axis 0 (3) is longer than the data's (2)"),
])
def test_element_index_shapes_that_do_not_fit_the_data_are_refused(tmp_path, op, shapes, why):
    inits = {"i": np.zeros(shapes[1], np.int64)}
    inputs = ["x", "i"]
    if op == "ScatterElements":
        inits["u"] = rand(*shapes[2])
        inputs.append("u")
    node = helper.make_node(op, inputs, ["y"], name="pick", axis=1)
    refused(tmp_path, node, rand(*shapes[0]), inits, why)


@pytest.mark.parametrize("depth,values,why", [
    (0, [0.0, 1.0], "depth is 0 (1 to 2^24)"),
    (4, [0.0, 1.0, 2.0], "values must hold [off, on]"),
])
def test_one_hot_depth_and_values_it_cannot_honour_are_refused(tmp_path, depth, values, why):
    node = helper.make_node("OneHot", ["x", "depth", "values"], ["y"], name="onehot")
    refused(tmp_path, node, rand(2, 3),
            {"depth": np.int64(depth), "values": np.array(values, np.float32)}, why)


def np_gather_nd(data, idx, b):
    """ONNX GatherND written from its specification: per batch, data at each index tuple."""
    batches = int(np.prod(data.shape[:b], dtype=np.int64))
    d = data.reshape((batches,) + data.shape[b:])
    tuples = idx.reshape((batches, -1, idx.shape[-1]))
    picked = [d[i][tuple(t)] for i in range(batches) for t in tuples[i]]
    return np.array(picked, data.dtype).reshape(idx.shape[:-1] + data.shape[b + idx.shape[-1]:])


@pytest.mark.parametrize("data_shape,idx_shape,b", [
    ((2, 2), (2, 2), 0),           # the specification's examples: elements,
    ((2, 2), (2, 1), 0),           # rows,
    ((2, 2, 2), (2, 1, 2), 0),     # slices of a 3-D tensor,
    ((2, 2, 2), (2, 1), 1),        # and per batch
    ((3, 7, 5), (17, 2), 0),       # odd sizes
    ((3, 7, 5), (3,), 0),          # one tuple: a scalar result
    ((3, 7, 5), (3, 4, 2), 1),
    ((2, 3, 7, 5), (2, 3, 1, 1), 2),
])
def test_gather_nd_at_run_time_and_constant_indices(tmp_path, data_shape, idx_shape, b):
    # TensorFlow converters' gather_nd; negative indices count from the end.
    x = rand(*data_shape)
    sizes = np.array(data_shape[b:b + idx_shape[-1]])
    gen = np.random.default_rng(5)
    idx = (gen.integers(0, 1 << 20, idx_shape) % (2 * sizes) - sizes).astype(np.int64)
    nodes = [helper.make_node("GatherND", ["x", "idx"], ["y"], batch_dims=b),
             helper.make_node("GatherND", ["x", "cidx"], ["z"], batch_dims=b)]
    y, z = run(tmp_path, nodes, {"x": x, "idx": idx}, {"cidx": idx}, outputs=("y", "z"), opset=13)
    exact(y, np_gather_nd(x, idx, b))
    exact(z, np_gather_nd(x, idx, b))


def test_gather_nd_index_out_of_range_at_run_time_is_an_error(tmp_path):
    x, idx = rand(2, 3), np.array([[1, 2], [0, 3]], np.int64)
    node = helper.make_node("GatherND", ["x", "idx"], ["y"], name="pick")
    with pytest.raises(AssertionError, match=r"node 'pick' \(gather\): the index at position \d+ is out of range"):
        run(tmp_path, [node], {"x": x, "idx": idx})


@pytest.mark.parametrize("idx,b,why", [
    (np.array([[0, -4]], np.int64), 0, "index -4 is out of range for axis size 3"),
    (np.array([[0, 1, 0]], np.int64), 0, "index tuples of 3 entries for data of rank 2"),
    (np.array([[0], [1]], np.int64), 2, "batch_dims 2 must be below the ranks"),
    (np.array([[0], [1], [0]], np.int64), 1, "batch axis 0: data has 2, indices 3"),
    (np.array([[0.5, 1.0]], np.float32), 0, "must be integers"),
])
def test_gather_nd_it_cannot_honour_is_refused_naming_the_node(tmp_path, idx, b, why):
    node = helper.make_node("GatherND", ["x", "idx"], ["y"], name="pick", batch_dims=b)
    refused(tmp_path, node, rand(2, 3), {"idx": idx}, why, opset=13)


def test_gather_elements_float_constant_indices_are_refused(tmp_path):
    node = helper.make_node("GatherElements", ["x", "idx"], ["y"], name="pick", axis=1)
    refused(tmp_path, node, rand(2, 3), {"idx": np.array([[0.5, 1.0, 2.0]], np.float32)},
            "indices must be integers")


def np_reverse_sequence(x, lens, time_axis):
    y = x.copy()
    for b, n in enumerate(lens):
        if time_axis == 0:
            y[:n, b] = x[:n, b][::-1]
        else:
            y[b, :n] = x[b, :n][::-1]
    return y


@pytest.mark.parametrize("time_axis,shape", [(0, (7, 3, 5)), (1, (3, 7, 5)), (0, (4, 1)),
                                              (1, (2, 17, 3, 2))])
def test_reverse_sequence_at_run_time_and_constant_lengths(tmp_path, time_axis, shape):
    # The first len steps of each batch entry reversed (0 and the whole axis included).
    x = rand(*shape)
    steps, batch = shape[time_axis], shape[1 - time_axis]
    lens = np.random.default_rng(9).integers(0, steps + 1, batch).astype(np.int64)
    lens[0] = steps
    attrs = dict(time_axis=time_axis, batch_axis=1 - time_axis)
    nodes = [helper.make_node("ReverseSequence", ["x", "lens"], ["y"], **attrs),
             helper.make_node("ReverseSequence", ["x", "clens"], ["z"], **attrs)]
    y, z = run(tmp_path, nodes, {"x": x, "lens": lens}, {"clens": lens}, outputs=("y", "z"),
               opset=13)
    exact(y, np_reverse_sequence(x, lens, time_axis))
    exact(z, np_reverse_sequence(x, lens, time_axis))


def test_reverse_sequence_length_past_the_axis_at_run_time_is_an_error(tmp_path):
    x = rand(3, 2, 4)  # batch 3, time 2
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], name="rev", time_axis=1,
                            batch_axis=0)
    with pytest.raises(AssertionError, match=r"node 'rev' \(gather\): the index at position \d+ is out of range"):
        run(tmp_path, [node], {"x": x, "lens": np.array([1, 5, 0], np.int64)})
    (got,) = run(tmp_path, [node], {"x": x, "lens": np.array([2, 1, 0], np.int64)})
    exact(got, np_reverse_sequence(x, [2, 1, 0], 1))


@pytest.mark.parametrize("attrs,lens,why", [
    ({"time_axis": 0, "batch_axis": 2}, [1, 2, 1], "must be 0 and 1, either way round"),
    ({}, [1, 2], "one length per batch entry (3) is needed"),
    ({}, [1, 2, 5], "sequence_lens[2] is 5 (0 to 2)"),
    ({}, [1, -1, 0], "sequence_lens[1] is -1"),
])
def test_reverse_sequence_it_cannot_honour_is_refused_naming_the_node(tmp_path, attrs, lens, why):
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], name="rev", **attrs)
    refused(tmp_path, node, rand(2, 3, 4), {"lens": np.array(lens, np.int64)}, why, opset=13)


@pytest.mark.parametrize("axis,condition", [(0, [1, 0, 1]), (1, [0, 1, 1, 0, 1]), (-1, [1]),
                                            (None, [0, 1, 0, 0, 1, 1, 0, 1]), (1, [1, 1, 1, 1, 1, 1, 1])])
def test_compress_with_a_constant_condition(tmp_path, axis, condition):
    x = rand(3, 7, 2)
    cond = np.array(condition, bool)
    attrs = {} if axis is None else {"axis": axis}
    node = helper.make_node("Compress", ["x", "c"], ["y"], **attrs)
    (got,) = run(tmp_path, [node], {"x": x}, {"c": cond}, opset=11)
    exact(got, np.compress(cond, x, axis=axis))


@pytest.mark.parametrize("condition,axis,why", [
    ([0, 0, 0], 0, "selects nothing"),
    ([1, 0, 1, 1], 0, "condition of 4 entries for 3 slices"),
    ([1, 0], 3, "axis 3"),
])
def test_compress_it_cannot_honour_is_refused_naming_the_node(tmp_path, condition, axis, why):
    node = helper.make_node("Compress", ["x", "c"], ["y"], name="pick", axis=axis)
    refused(tmp_path, node, rand(3, 2), {"c": np.array(condition, bool)}, why, opset=11)


def test_compress_with_a_run_time_condition_is_refused(tmp_path):
    node = helper.make_node("Compress", ["x", "c"], ["y"], name="pick", axis=0)
    refused(tmp_path, node, rand(3, 2), {}, "a run-time condition is not supported",
            runtime=[("c", rand(3))], opset=11)
