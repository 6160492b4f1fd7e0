"""Writes the ONNX fuzz seeds (tests/fuzz/corpus/onnx/): a few tiny models, a few KB each, that
cover the importer's operator families. Run with Debian's python3 (python3-onnx, python3-torch):

    /usr/bin/python3 tests/fuzz/make_onnx_seeds.py tests/fuzz/corpus/onnx
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64


def save(out, name, nodes, inputs, outputs, inits=(), opset=17, functions=()):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              [numpy_helper.from_array(v, k) for k, v in dict(inits).items()])
    imports = [helper.make_opsetid("", opset)]
    imports += [helper.make_opsetid(d, 1) for d in sorted({f.domain for f in functions})]
    model = helper.make_model(graph, opset_imports=imports, producer_name="cuvil-fuzz-seed",
                              functions=list(functions))
    with open(os.path.join(out, name + ".onnx"), "wb") as f:
        f.write(model.SerializeToString())


def rand(*shape):
    return np.random.default_rng(0).standard_normal(shape).astype(np.float32)


def i64(*values):
    return np.array(values, np.int64)


def main(out):
    os.makedirs(out, exist_ok=True)
    # Elementwise with constants of every form and a dynamic batch axis.
    save(out, "elementwise", [
        helper.make_node("Constant", [], ["c"], value_float=2.0),
        helper.make_node("Mul", ["x", "c"], ["a"]),
        helper.make_node("Add", ["a", "bias"], ["b"]),
        helper.make_node("Clip", ["b"], ["cl"], min=-1.0, max=2.5),
        helper.make_node("Sigmoid", ["cl"], ["s"]),
        helper.make_node("Erf", ["s"], ["e"]),
        helper.make_node("Sub", ["e", "x"], ["y"]),
    ], [helper.make_tensor_value_info("x", F, ["batch", 4])],
        [helper.make_tensor_value_info("y", F, None)], {"bias": rand(4)}, opset=11)
    # The Shape -> Gather -> Concat -> Reshape chains exporters emit, folded at import.
    save(out, "shape_chain", [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
        helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"]),
        helper.make_node("Concat", ["n1", "minus1"], ["shape"], axis=0),
        helper.make_node("Reshape", ["x", "shape"], ["flat"]),
        helper.make_node("ConstantOfShape", ["two"], ["ones"],
                         value=numpy_helper.from_array(np.ones(1, np.int64))),
        helper.make_node("Expand", ["row", "ones"], ["rows"]),
        helper.make_node("Add", ["flat", "rows"], ["y"]),
    ], [helper.make_tensor_value_info("x", F, [2, 3, 4])],
        [helper.make_tensor_value_info("y", F, None)],
        {"zero": i64(0), "axes0": i64(0), "minus1": i64(-1), "two": i64(1), "row": rand(12)})
    # Convolution, normalization, pooling.
    save(out, "conv_pool", [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["n"]),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("GlobalAveragePool", ["p"], ["gp"]),
        helper.make_node("Flatten", ["gp"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ], [helper.make_tensor_value_info("x", F, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", F, None)],
        {"w": rand(4, 3, 3, 3), "b": rand(4), "g": rand(4), "beta": rand(4), "mean": rand(4),
         "var": np.abs(rand(4)) + 1, "fc": rand(2, 4), "fcb": rand(2)}, opset=13)
    # Attention-like: MatMul, Transpose, Softmax, LayerNormalization, Where, Slice, Split.
    save(out, "attention", [
        helper.make_node("LayerNormalization", ["x", "ln_g", "ln_b"], ["h"], axis=-1),
        helper.make_node("MatMul", ["h", "wq"], ["q"]),
        helper.make_node("Transpose", ["q"], ["kt"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["sc"]),
        helper.make_node("Softmax", ["sc"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", "q"], ["o"]),
        helper.make_node("Slice", ["o", "starts", "ends", "axes"], ["sl"]),
        helper.make_node("Split", ["sl", "split"], ["s1", "s2"], axis=2),
        helper.make_node("Concat", ["s2", "s1"], ["y"], axis=2),
    ], [helper.make_tensor_value_info("x", F, [1, "sequence", 8])],
        [helper.make_tensor_value_info("y", F, None)],
        {"ln_g": rand(8), "ln_b": rand(8), "wq": rand(8, 8), "starts": i64(0), "ends": i64(8),
         "axes": i64(2), "split": i64(3, 5)})
    # Resize, Pad, ReduceMean, Tile, Cast (opset 18: ReduceMean's axes as an input).
    save(out, "resize_pad", [
        helper.make_node("Resize", ["x", "", "scales"], ["up"], mode="nearest"),
        helper.make_node("Pad", ["up", "pads"], ["pd"]),
        helper.make_node("ReduceMean", ["pd", "raxes"], ["m"], keepdims=1),
        helper.make_node("Tile", ["m", "reps"], ["t"]),
        helper.make_node("Cast", ["t"], ["y"], to=F),
    ], [helper.make_tensor_value_info("x", F, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", F, None)],
        {"scales": np.array([1, 1, 2, 2], np.float32), "pads": i64(0, 0, 1, 1, 0, 0, 1, 1),
         "raxes": i64(3), "reps": i64(1, 1, 1, 2)}, opset=18)
    # Decoder ops: ConvTranspose (rearranged into a convolution and a pixel shuffle),
    # DepthToSpace, and activations composed of elementwise ops.
    save(out, "decoder", [
        helper.make_node("ConvTranspose", ["x", "wt", "bt"], ["up"], strides=[2, 2],
                         pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("PRelu", ["up", "slope"], ["pr"]),
        helper.make_node("Softplus", ["pr"], ["sp"]),
        helper.make_node("Elu", ["sp"], ["el"], alpha=0.5),
        helper.make_node("DepthToSpace", ["el"], ["y"], blocksize=2, mode="CRD"),
    ], [helper.make_tensor_value_info("x", F, [1, 3, 3, 3])],
        [helper.make_tensor_value_info("y", F, None)],
        {"wt": rand(3, 4, 3, 3), "bt": rand(4), "slope": rand(4, 1, 1)})
    # Positions and integers at run time: ArgMax feeding GatherElements and OneHot, TopK,
    # integer Div/Mod, a float-to-integer Cast, ScatterND into run-time data, GridSample.
    save(out, "positions", [
        helper.make_node("ArgMax", ["x"], ["am"], axis=3, keepdims=1),
        helper.make_node("GatherElements", ["x", "am"], ["picked"], axis=3),
        helper.make_node("TopK", ["x", "k"], ["tv", "ti"], axis=-1),
        helper.make_node("Mod", ["ti", "three"], ["tm"]),
        helper.make_node("Div", ["ti", "two"], ["td"]),
        helper.make_node("Add", ["tm", "td"], ["tsum"]),
        helper.make_node("OneHot", ["tsum", "depth", "onoff"], ["oh"]),
        helper.make_node("Cast", ["tv"], ["tvi"], to=I64),
        helper.make_node("ScatterND", ["x", "sidx", "supd"], ["sc"]),
        helper.make_node("GridSample", ["sc", "grid"], ["gs"], padding_mode="reflection"),
        helper.make_node("Resize", ["gs", "", "scales"], ["y"], mode="cubic"),
    ], [helper.make_tensor_value_info("x", F, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", F, None), helper.make_tensor_value_info("oh", F, None),
         helper.make_tensor_value_info("picked", F, None), helper.make_tensor_value_info("tvi", I64, None)],
        {"k": i64(2), "three": i64(3), "two": i64(2), "depth": i64(4),
         "onoff": np.array([0, 1], np.float32), "sidx": i64(0, 1).reshape(1, 2),
         "supd": rand(1, 4, 4), "grid": rand(1, 3, 3, 2), "scales": np.array([1, 1, 2, 2], np.float32)})
    # Model-local functions: Outer calls Leaky twice, Leaky's alpha a reference to the call's.
    leaky = helper.make_node("LeakyRelu", ["x"], ["y"])
    ref = leaky.attribute.add()
    ref.name, ref.ref_attr_name, ref.type = "alpha", "slope", ref.FLOAT
    opset17 = [helper.make_opsetid("", 17)]
    inner = helper.make_function("seed", "Leaky", ["x"], ["y"], [leaky], opset17, ["slope"])
    outer = helper.make_function("seed", "Outer", ["x", "b"], ["y"], [
        helper.make_node("Leaky", ["x"], ["h"], domain="seed", slope=0.5),
        helper.make_node("Add", ["h", "b"], ["s"]),
        helper.make_node("Leaky", ["s"], ["y"], domain="seed", slope=0.25),
    ], opset17, [])
    save(out, "functions", [helper.make_node("Outer", ["x", "b"], ["y"], domain="seed")],
         [helper.make_tensor_value_info("x", F, [2, 3])], [helper.make_tensor_value_info("y", F, None)],
         {"b": rand(3)}, functions=[inner, outer])
    # Opset 19's forms: Pad wrap with cropping and axes, Resize of listed axes keeping the
    # aspect ratio, GatherND with batch_dims, ReverseSequence, Compress.
    save(out, "opset19_index", [
        helper.make_node("Pad", ["x", "pads", "", "pad_axes"], ["p"], mode="wrap"),
        helper.make_node("Resize", ["p", "", "", "sizes"], ["r"], mode="linear", axes=[2, 3],
                         keep_aspect_ratio_policy="not_larger"),
        helper.make_node("GatherND", ["r", "nd"], ["g"], batch_dims=1),
        helper.make_node("ReverseSequence", ["g", "lens"], ["rs"], time_axis=1, batch_axis=0),
        helper.make_node("Compress", ["rs", "keep"], ["y"], axis=1),
    ], [helper.make_tensor_value_info("x", F, [1, 2, 4, 4])],
        [helper.make_tensor_value_info("y", F, None)],
        {"pads": i64(1, -1, 2, 1), "pad_axes": i64(2, 3), "sizes": i64(6, 9), "nd": i64(1, 0).reshape(1, 2, 1),
         "lens": i64(1), "keep": np.array([True, False]), }, opset=19)
    # Run-time indices: MaxPool's Indices into MaxUnpool, ScatterElements and ScatterND at
    # positions read from an input.
    save(out, "scatter_unpool", [
        helper.make_node("MaxPool", ["x"], ["v", "i"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["v", "i", "shape"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("ScatterElements", ["u", "at", "upd"], ["s"], axis=3, reduction="add"),
        helper.make_node("ScatterND", ["s", "rows", "row"], ["y"]),
    ], [helper.make_tensor_value_info("x", F, [1, 2, 5, 5]),
        helper.make_tensor_value_info("at", I64, [1, 2, 5, 1]),
        helper.make_tensor_value_info("rows", I64, [1, 3])],
        [helper.make_tensor_value_info("y", F, None)],
        {"shape": i64(1, 2, 5, 5), "upd": rand(1, 2, 5, 1), "row": rand(1, 5)}, opset=18)
    # What torch.onnx.export writes for a small CNN (when PyTorch is there).
    try:
        import torch
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "onnx"))
        from small_models import Small
        torch.manual_seed(0)
        torch.onnx.export(Small().eval(), torch.randn(1, 3, 8, 8),
                          os.path.join(out, "torch_small_cnn.onnx"), input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "batch"}}, opset_version=17)
    except ImportError:
        print("no torch: torch_small_cnn.onnx not written")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "onnx"))
