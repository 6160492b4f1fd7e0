"""Bad input to the importer and to `infer`: each is one line on stderr naming the file (and the
node, input or axis), exit status 2, and nothing written."""
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import cuvil


def save(model, path):
    onnx.save(model, str(path))
    return str(path)


def tiny_model(op="Relu", dtype=TensorProto.FLOAT, shape=(1, 3), extra_nodes=()):
    x = helper.make_tensor_value_info("x", dtype, list(shape))
    y = helper.make_tensor_value_info("y", dtype, None)
    nodes = [helper.make_node(op, ["x"], ["y"], name="first")] + list(extra_nodes)
    return helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                             opset_imports=[helper.make_opsetid("", 17)])


def expect_user_error(args, *fragments, out_dir=None):
    r = cuvil(*args, check=False)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    # The machine's own warnings (load, governor) may precede the error.
    lines = [l for l in r.stderr.splitlines() if l.strip() and not l.startswith("***WARNING***")]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("cuvil-bench: error: "), lines[0]
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    if out_dir is not None:
        assert not os.path.exists(out_dir) or not os.listdir(out_dir)
    return lines[0]


def infer_args(model, out_dir, *inputs):
    args = ["infer", "--model", model, "--out-dir", str(out_dir)]
    for i in inputs:
        args += ["--input", i]
    return args


def test_not_a_protobuf(tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(os.urandom(64) + b"\xff" * 64)
    expect_user_error(["verify", "--model", str(path)], str(path), "not an ONNX model")


def test_truncated_file(tmp_path):
    good = save(tiny_model(), tmp_path / "good.onnx")
    data = open(good, "rb").read()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    expect_user_error(["list", "--model", str(path)], str(path))


def test_empty_and_missing_files(tmp_path):
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    expect_user_error(["run", "--model", str(empty), "--no-db"], "empty file")
    expect_user_error(["run", "--model", str(tmp_path / "nope.onnx"), "--no-db"], "cannot open")
    expect_user_error(["run", "--model", str(tmp_path), "--no-db"], "is a directory")


def test_every_unsupported_operator_is_listed_with_counts(tmp_path):
    nodes = [helper.make_node("Unique", ["y"], ["z"], name="e1"),
             helper.make_node("Unique", ["z"], ["w"], name="e2"),
             helper.make_node("Det", ["w"], ["v"], name="c1")]
    m = tiny_model(extra_nodes=nodes)
    m.graph.output[0].name = "v"
    line = expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")],
                             "unsupported ONNX operators", "Det x1 (first: node 'c1')",
                             "Unique x2 (first: node 'e1')")
    assert "Relu" not in line


def test_an_unnamed_node_is_named_by_its_op_and_index(tmp_path):
    # Hand-built files often leave node names empty: the error names the node as the importer
    # does (op and index in the graph), and says the IR op once, not the node twice.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Softmax", ["x"], ["a"]),
             helper.make_node("Softmax", ["a"], ["y"], axis=5)]
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
    expect_user_error(["verify", "--model", save(m, tmp_path / "softmax.onnx")],
                      "unnamed node 'Softmax_1' (Softmax): axis 5")
    w = numpy_helper.from_array(np.zeros((4, 3, 3, 3), np.float32), "w")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6, 8, 8])
    conv = helper.make_node("Conv", ["x", "w"], ["y"], group=4)
    m = helper.make_model(helper.make_graph([conv], "g", [x], [y], initializer=[w]),
                          opset_imports=[helper.make_opsetid("", 17)])
    line = expect_user_error(["verify", "--model", save(m, tmp_path / "conv.onnx")],
                             "unnamed node 'Conv_0' (Conv): conv2d: groups 4 must be >= 1 and "
                             "divide the 6 input and 4 output channels")
    assert line.count("Conv_0") == 1, line
    unique = helper.make_node("Unique", ["y"], ["v"])
    m = tiny_model(extra_nodes=[unique])
    m.graph.output[0].name = "v"
    expect_user_error(["verify", "--model", save(m, tmp_path / "unique.onnx")],
                      "Unique x1 (the first unnamed)")


def test_custom_domain_is_refused(tmp_path):
    m = tiny_model()
    m.graph.node[0].domain = "com.microsoft"
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    expect_user_error(["list", "--model", save(m, tmp_path / "m.onnx")], "com.microsoft::Relu")


def test_unsupported_input_dtype(tmp_path):
    path = save(tiny_model(dtype=TensorProto.DOUBLE), tmp_path / "m.onnx")
    expect_user_error(["verify", "--model", path], "input 'x'", "DOUBLE")


def test_unsupported_initializer_dtype(tmp_path):
    m = tiny_model(op="Add")
    m.graph.node[0].input.append("s")
    m.graph.initializer.append(helper.make_tensor("s", TensorProto.COMPLEX64, [1], [1.0 + 0.0j]))
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")], "initializer 's'",
                      "COMPLEX64")


def test_dynamic_axis_left_unbound_names_input_axis_and_binding(tmp_path):
    path = save(tiny_model(shape=("batch", 3)), tmp_path / "m.onnx")
    expect_user_error(["run", "--model", path, "--no-db"], "input 'x' axis 0 ('batch')",
                      "--input x:1x3", "--batch N")


def test_input_binding_for_a_missing_input(tmp_path):
    path = save(tiny_model(), tmp_path / "m.onnx")
    expect_user_error(["verify", "--model", path, "--input", "images:1x3"],
                      "no input 'images'", "its inputs: x")


def test_input_binding_against_a_fixed_axis(tmp_path):
    path = save(tiny_model(), tmp_path / "m.onnx")
    expect_user_error(["verify", "--model", path, "--input", "x:1x4"], "axis 1 is fixed at 3")
    expect_user_error(["verify", "--model", path, "--input", "x:1x3x5"], "rank 3 given")
    expect_user_error(["verify", "--model", path, "--input", "x:1xq"], "not a shape")


def test_missing_external_data_file(tmp_path):
    m = tiny_model(op="Add")
    m.graph.node[0].input.append("w")
    w = numpy_helper.from_array(np.ones((1, 3), np.float32), "w")
    m.graph.initializer.append(w)
    onnx.save(m, str(tmp_path / "ext.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="weights.bin", size_threshold=0)
    os.remove(tmp_path / "weights.bin")
    expect_user_error(["verify", "--model", str(tmp_path / "ext.onnx")], "initializer 'w'",
                      "weights.bin", "cannot be opened")


def test_external_data_outside_the_model_directory_is_refused(tmp_path):
    m = tiny_model(op="Add")
    m.graph.node[0].input.append("w")
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 3])
    t.data_location = TensorProto.EXTERNAL
    t.external_data.add(key="location", value="../../etc/passwd")
    m.graph.initializer.append(t)
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")],
                      "must be a relative path inside the model's directory")


def test_node_attribute_the_importer_cannot_honour(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    i = helper.make_tensor_value_info("i", TensorProto.INT64, None)
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="column_major", kernel_shape=[3, 3],
                            storage_order=1)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y, i]),
                          opset_imports=[helper.make_opsetid("", 17)])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")],
                      "node 'column_major' (MaxPool)",
                      "storage_order 1 (column-major Indices) is not supported")


@pytest.mark.parametrize("dilations,why", [([0, 1], "dilations must be >= 1"),
                                           ([2], "dilations must have 2 entries"),
                                           ([9, 1], "output would be empty")])
def test_malformed_conv_dilations_are_refused(tmp_path, dilations, why):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((2, 2, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="dilated", dilations=dilations)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y], [w]),
                          opset_imports=[helper.make_opsetid("", 17)])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")], "dilated", why)


def one_node_model(node, shape, initializers):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    return helper.make_model(helper.make_graph([node], "g", [x], [y], initializers),
                             opset_imports=[helper.make_opsetid("", 17)])


def test_shape_arithmetic_that_overflows_names_the_node(tmp_path):
    # Pads near 2^62 on each side: the padded length overflows int64 (found by fuzz_onnx).
    pads = numpy_helper.from_array(np.array([0, 2**62, 0, 2**62], np.int64), "pads")
    m = one_node_model(helper.make_node("Pad", ["x", "pads"], ["y"], name="huge_pad"), (1, 3),
                       [pads])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")],
                      "node 'huge_pad' (Pad)", "overflows int64")


def test_float_read_as_an_integer_far_out_of_range_names_the_node(tmp_path):
    # A Resize scale of 1e30 is an integer-valued float; as an int64 it saturates and the
    # upsampled size overflows (found by fuzz_onnx: the float -> int64 cast was undefined).
    roi = numpy_helper.from_array(np.zeros(0, np.float32), "roi")
    scales = numpy_helper.from_array(np.array([1, 1, 1e30, 1e30], np.float32), "scales")
    m = one_node_model(helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="big",
                                        mode="nearest"), (1, 1, 2, 2), [roi, scales])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")],
                      "node 'big' (Resize)", "overflows int64")


@pytest.mark.parametrize("node", [
    helper.make_node("MaxPool", ["x"], ["y"], name="win", kernel_shape=[2, 2],
                     strides=[2**62, 1]),
    helper.make_node("MaxPool", ["x"], ["y"], name="win", kernel_shape=[2**62, 2],
                     ceil_mode=1),
    helper.make_node("AveragePool", ["x"], ["y"], name="win", kernel_shape=[2, 2],
                     pads=[0, 0, 2**62, 0]),
])
def test_window_attributes_past_the_bound_name_the_node(tmp_path, node):
    m = one_node_model(node, (1, 1, 4, 4), [])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")], "node 'win'",
                      "above 2^31")


def test_split_sizes_that_overflow_name_the_node(tmp_path):
    split = numpy_helper.from_array(np.array([2**62, 2**62, 2**62], np.int64), "split")
    node = helper.make_node("Split", ["x", "split"], ["a", "b", "c"], name="sp", axis=1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in "abc"]
    m = helper.make_model(helper.make_graph([node], "g", [x], outs, [split]),
                          opset_imports=[helper.make_opsetid("", 17)])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")], "node 'sp' (Split)",
                      "add up to more than")


def test_reshape_target_past_the_bound_names_the_node(tmp_path):
    shape = numpy_helper.from_array(np.array([2**40, 2**40, -1], np.int64), "shape")
    m = one_node_model(helper.make_node("Reshape", ["x", "shape"], ["y"], name="rs"), (2, 3),
                       [shape])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")], "node 'rs' (Reshape)",
                      "more than 2^40 elements")


def test_constant_that_does_not_broadcast_names_the_node(tmp_path):
    # A LayerNormalization scale of shape [5] for a normalised axis of 3 (found by fuzz_onnx).
    scale = numpy_helper.from_array(np.ones(5, np.float32), "scale")
    m = one_node_model(helper.make_node("LayerNormalization", ["x", "scale"], ["y"], name="ln"),
                       (2, 3), [scale])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")],
                      "node 'ln' (LayerNormalization)", "does not broadcast")


@pytest.mark.parametrize("folded", [False, True])
def test_clip_with_min_above_max_names_the_node(tmp_path, folded):
    # Run time and constant folding alike (folding it once handed unordered bounds to std::clamp).
    lo = numpy_helper.from_array(np.array(2.0, np.float32), "lo")
    hi = numpy_helper.from_array(np.array(1.0, np.float32), "hi")
    inits = [lo, hi]
    nodes = [helper.make_node("Clip", ["c" if folded else "x", "lo", "hi"], ["k"], name="clip")]
    if folded:
        inits.append(numpy_helper.from_array(np.ones((2, 3), np.float32), "c"))
    nodes.append(helper.make_node("Add", ["x", "k"], ["y"], name="add"))
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits),
                          opset_imports=[helper.make_opsetid("", 17)])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")], "node 'clip' (Clip)",
                      "min is greater than max")


def test_input_and_output_counts_are_checked_against_the_schema(tmp_path):
    # Where with one input of its three (found by fuzz_onnx: read past the node's inputs).
    m = one_node_model(helper.make_node("Where", ["x"], ["y"], name="short"), (2, 3), [])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m.onnx")],
                      "node 'short' (Where) has 1 inputs; Where (opset 17) takes 3")
    # Too many: Relu takes one input.
    m = one_node_model(helper.make_node("Relu", ["x", "x"], ["y"], name="two"), (2, 3), [])
    expect_user_error(["verify", "--model", save(m, tmp_path / "m2.onnx")],
                      "node 'two' (Relu) has 2 inputs", "takes 1")


def test_infer_npy_of_the_wrong_shape_or_dtype_writes_nothing(tmp_path):
    path = save(tiny_model(), tmp_path / "m.onnx")
    out = tmp_path / "out"
    np.save(tmp_path / "wrong_shape.npy", np.zeros((2, 3), np.float32))
    np.save(tmp_path / "wrong_dtype.npy", np.zeros((1, 3), np.float64))
    np.save(tmp_path / "ints.npy", np.zeros((1, 3), np.int64))
    expect_user_error(infer_args(path, out, f"x={tmp_path / 'wrong_shape.npy'}"), "axis 0 is fixed at 1",
                      out_dir=out)
    expect_user_error(infer_args(path, out, f"x={tmp_path / 'wrong_dtype.npy'}"), "float32", "<f8",
                      out_dir=out)
    expect_user_error(infer_args(path, out, f"x={tmp_path / 'ints.npy'}"), "float32", out_dir=out)


def test_infer_missing_unknown_and_unreadable_inputs(tmp_path):
    path = save(tiny_model(), tmp_path / "m.onnx")
    out = tmp_path / "out"
    np.save(tmp_path / "x.npy", np.zeros((1, 3), np.float32))
    expect_user_error(infer_args(path, out), "no array for x", out_dir=out)
    expect_user_error(infer_args(path, out, f"x={tmp_path / 'x.npy'}", f"z={tmp_path / 'x.npy'}"),
                      "no input 'z'", out_dir=out)
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    expect_user_error(infer_args(path, out, f"x={tmp_path / 'bad.npy'}"), "bad.npy", "not a .npy",
                      out_dir=out)


def test_infer_writes_float32_npy_numpy_reads(tmp_path):
    path = save(tiny_model(shape=("n", 3)), tmp_path / "m.onnx")
    x = np.array([[-1.0, 0.5, 2.0], [3.0, -4.0, 0.0]], np.float32)
    np.save(tmp_path / "x.npy", np.asfortranarray(x))  # Fortran order is read too
    cuvil(*infer_args(path, tmp_path / "out", f"x={tmp_path / 'x.npy'}"))
    y = np.load(tmp_path / "out" / "y.npy")
    assert y.dtype == np.float32 and y.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(y, np.maximum(x, 0))


def test_float16_and_external_initializers_load(tmp_path):
    # A float16 weight (held in int32_data) cast to float, and an external-data initializer.
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    half = np.array([[0.5, -1.25, 3.0]], np.float16)
    big = np.arange(6, dtype=np.float32).reshape(2, 3)
    nodes = [helper.make_node("Cast", ["h"], ["hf"], to=TensorProto.FLOAT),
             helper.make_node("Mul", ["x", "hf"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    # make_tensor stores float16 values as the low bits of int32_data (not raw_data).
    h = helper.make_tensor("h", TensorProto.FLOAT16, [1, 3], half.astype(np.float32).flatten().tolist())
    assert len(h.int32_data) == 3 and not h.raw_data
    b = numpy_helper.from_array(big, "b")
    m = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [h, b]),
                          opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(m, str(tmp_path / "m.onnx"), save_as_external_data=True, location="w.bin", size_threshold=16)
    xs = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", xs)
    cuvil(*infer_args(str(tmp_path / "m.onnx"), tmp_path / "out", f"x={tmp_path / 'x.npy'}"))
    np.testing.assert_allclose(np.load(tmp_path / "out" / "y.npy"), xs * half.astype(np.float32) + big,
                               rtol=1e-6)
