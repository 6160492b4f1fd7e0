"""Model-local functions (ModelProto.functions) inlined by the importer: PyTorch's
export_modules_as_functions against PyTorch, and hand-made functions with attribute references,
omitted inputs and outputs, nesting, and the must-fail cases (a function calling itself, another
opset, a call with too many inputs, a blow-up of nodes, a call of an undefined function)."""
import numpy as np
import onnx
import pytest
import torch
from onnx import AttributeProto, TensorProto, helper

from conftest import FP32_BOUND, cuvil, infer, max_relative_error, randomise
from test_op_semantics import close, rand

F = TensorProto.FLOAT


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(12, 12)
        self.norm = torch.nn.LayerNorm(12)

    def forward(self, x):
        return self.norm(torch.relu(self.linear(x)) + x)


class TwoBlocks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = Block(), Block()

    def forward(self, x):
        return self.second(self.first(x))


def exported_with_functions(tmp_path, module, x, opset, modules):
    """cuvil's output and PyTorch's for `module` exported with `modules` as functions. PyTorch
    1.13 names a graph output that a function call produces by number, whatever output_names
    say: the graph's only output is read by its name."""
    path = tmp_path / "m.onnx"
    torch.onnx.export(module, (x,), str(path), opset_version=opset, input_names=["x"],
                      export_modules_as_functions=modules)
    model = onnx.load(str(path))
    assert model.functions, "the export wrote no functions"
    (output,) = [o.name for o in model.graph.output]
    got = infer(path, {"x": x.numpy()}, tmp_path / "out")
    with torch.no_grad():
        want = module(x).numpy()
    return got[output], want


@pytest.mark.parametrize("opset", [15, 17])
def test_modules_exported_as_nested_functions_match_pytorch(tmp_path, opset):
    # Block's function calls LayerNorm's (nested); both blocks call the same two functions.
    got, want = exported_with_functions(tmp_path, randomise(TwoBlocks()), torch.randn(2, 3, 12),
                                        opset, {Block, torch.nn.LayerNorm})
    assert max_relative_error(got, want) <= FP32_BOUND


@pytest.mark.parametrize("opset", [15, 17])
def test_transformer_encoder_layers_exported_as_functions_match_pytorch(tmp_path, opset):
    layer = torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0,
                                             batch_first=True)
    encoder = randomise(torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False))
    got, want = exported_with_functions(tmp_path, encoder, torch.randn(2, 7, 16), opset,
                                        {torch.nn.TransformerEncoderLayer})
    assert max_relative_error(got, want) <= FP32_BOUND


def ref_attribute(name, ref, kind):
    a = AttributeProto()
    a.name, a.ref_attr_name, a.type = name, ref, kind
    return a


def scaled_relu(opset=17):
    """custom::ScaledRelu(x, bias?) -> (y, negative): LeakyRelu(x + bias) with the call's `slope`,
    times the call's `gain`; `negative` is Neg(x)."""
    leaky = helper.make_node("LeakyRelu", ["s"], ["l"])
    leaky.attribute.append(ref_attribute("alpha", "slope", AttributeProto.FLOAT))
    gain = helper.make_node("Constant", [], ["g"])
    gain.attribute.append(ref_attribute("value_float", "gain", AttributeProto.FLOAT))
    nodes = [helper.make_node("Add", ["x", "bias"], ["s"]), leaky, gain,
             helper.make_node("Mul", ["l", "g"], ["y"]), helper.make_node("Neg", ["x"], ["negative"])]
    return helper.make_function("custom", "ScaledRelu", ["x", "bias"], ["y", "negative"], nodes,
                                [helper.make_opsetid("", opset)], ["slope", "gain"])


def model_with(nodes, functions, inputs, opset=17, outputs=("y",), initializers=()):
    vi = [helper.make_tensor_value_info(n, F, list(a.shape)) for n, a in inputs.items()]
    outs = [helper.make_tensor_value_info(o, F, None) for o in outputs]
    inits = [onnx.numpy_helper.from_array(v, k) for k, v in dict(initializers).items()]
    graph = helper.make_graph(nodes, "g", vi, outs, inits)
    return helper.make_model(graph, functions=functions,
                             opset_imports=[helper.make_opsetid("", opset),
                                            helper.make_opsetid("custom", 1)])


def test_attribute_references_bind_to_each_calls_attributes(tmp_path):
    x = rand(3, 5)
    bias = rand(5)
    calls = [helper.make_node("ScaledRelu", ["x", "b"], ["y", "n"], domain="custom", name="one",
                              slope=0.25, gain=2.0),
             # The second call leaves the bias out and reads only the first output.
             helper.make_node("ScaledRelu", ["y"], ["z"], domain="custom", name="two", slope=0.5,
                              gain=-1.0)]
    model = model_with(calls, [scaled_relu()], {"x": x}, outputs=("y", "n", "z"),
                       initializers={"b": bias})
    onnx.save(model, str(tmp_path / "m.onnx"))
    got = infer(tmp_path / "m.onnx", {"x": x}, tmp_path / "out")
    s = x + bias
    y = np.where(s >= 0, s, 0.25 * s) * 2.0
    close(got["y"], y)
    close(got["n"], -x)
    close(got["z"], np.where(y >= 0, y, 0.5 * y) * -1.0)


def test_an_attribute_the_call_leaves_unset_takes_the_ops_default(tmp_path):
    x = rand(4, 6)
    call = helper.make_node("ScaledRelu", ["x", "b"], ["y"], domain="custom", gain=1.0)
    model = model_with([call], [scaled_relu()], {"x": x}, initializers={"b": np.zeros(6, np.float32)})
    onnx.save(model, str(tmp_path / "m.onnx"))
    got = infer(tmp_path / "m.onnx", {"x": x}, tmp_path / "out")
    close(got["y"], np.where(x >= 0, x, 0.01 * x))  # LeakyRelu's default alpha


def with_attribute_defaults(function, **defaults):
    """`function` with IR 9's attribute_proto (FunctionProto field 11) holding `defaults`:
    Debian's onnx 1.12 predates the field, so its bytes are appended by hand (protobuf keeps
    unknown fields through parsing and saving)."""
    def varint(n):
        out = b""
        while True:
            low, n = n & 0x7F, n >> 7
            if not n:
                return out + bytes([low])
            out += bytes([low | 0x80])
    raw = function.SerializeToString()
    for name, value in defaults.items():
        attribute = helper.make_attribute(name, value).SerializeToString()
        raw += bytes([11 << 3 | 2]) + varint(len(attribute)) + attribute
    out = onnx.FunctionProto()
    out.ParseFromString(raw)
    return out


def test_an_attribute_the_call_leaves_unset_takes_the_functions_default(tmp_path):
    x = rand(4, 6)
    call = helper.make_node("ScaledRelu", ["x", "b"], ["y"], domain="custom", slope=0.2)
    function = with_attribute_defaults(scaled_relu(), gain=3.0, slope=0.7)
    model = model_with([call], [function], {"x": x}, initializers={"b": np.zeros(6, np.float32)})
    onnx.save(model, str(tmp_path / "m.onnx"))
    got = infer(tmp_path / "m.onnx", {"x": x}, tmp_path / "out")
    close(got["y"], np.where(x >= 0, x, 0.2 * x) * 3.0)  # the call's slope, the default gain


def refused(tmp_path, model, *fragments):
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    r = cuvil("verify", "--model", str(path), check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    for f in fragments:
        assert f in r.stderr, (f, r.stderr)


def test_a_function_that_calls_itself_is_refused(tmp_path):
    body = [helper.make_node("Loopy", ["x"], ["y"], domain="custom")]
    f = helper.make_function("custom", "Loopy", ["x"], ["y"], body, [helper.make_opsetid("", 17)], [])
    model = model_with([helper.make_node("Loopy", ["x"], ["y"], domain="custom")], [f],
                       {"x": rand(2)})
    refused(tmp_path, model, "function 'custom::Loopy' is called 32 calls deep (it calls itself)")


def test_a_function_of_another_opset_is_refused(tmp_path):
    call = helper.make_node("ScaledRelu", ["x", "x"], ["y"], domain="custom", slope=0.1, gain=1.0)
    model = model_with([call], [scaled_relu(opset=13)], {"x": rand(2)})
    refused(tmp_path, model, "function 'custom::ScaledRelu' is written for opset 13",
            "the model imports opset 17")


def test_a_call_with_too_many_inputs_is_refused(tmp_path):
    call = helper.make_node("ScaledRelu", ["x", "x", "x"], ["y"], domain="custom", name="c")
    model = model_with([call], [scaled_relu()], {"x": rand(2)})
    refused(tmp_path, model, "node 'c' calls function 'custom::ScaledRelu' with 3 inputs",
            "it takes 2 and 2")


def test_functions_that_multiply_their_nodes_beyond_the_bound_are_refused(tmp_path):
    # f0 calls f1 twice, f1 calls f2 twice, ...: 2^24 nodes once inlined, refused at 2^20.
    opset = [helper.make_opsetid("", 17)]
    functions = [helper.make_function("custom", "f24", ["x"], ["y"],
                                      [helper.make_node("Neg", ["x"], ["y"])], opset, [])]
    for k in range(23, -1, -1):
        body = [helper.make_node(f"f{k + 1}", ["x"], ["h"], domain="custom"),
                helper.make_node(f"f{k + 1}", ["h"], ["y"], domain="custom")]
        functions.append(helper.make_function("custom", f"f{k}", ["x"], ["y"], body, opset, []))
    model = model_with([helper.make_node("f0", ["x"], ["y"], domain="custom")], functions,
                       {"x": rand(2)})
    refused(tmp_path, model, "inlining the model's functions makes more than 1048576 nodes")


def test_a_call_of_an_undefined_function_is_refused_naming_it(tmp_path):
    model = model_with([helper.make_node("Missing", ["x"], ["y"], domain="custom")],
                       [scaled_relu()], {"x": rand(2)})
    refused(tmp_path, model, "operators outside the default ONNX domain are not supported",
            "custom::Missing")


def test_a_function_named_as_an_onnx_operator_does_not_replace_it(tmp_path):
    # A default-domain function called "Relu" (here: a negation) is not a call: Relu stays Relu.
    fake = helper.make_function("", "Relu", ["x"], ["y"], [helper.make_node("Neg", ["x"], ["y"])],
                                [helper.make_opsetid("", 17)], [])
    mine = helper.make_function("", "Twice", ["x"], ["y"], [helper.make_node("Add", ["x", "x"], ["y"])],
                                [helper.make_opsetid("", 17)], [])
    x = rand(2, 5)
    nodes = [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Twice", ["r"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, [2, 5])],
                              [helper.make_tensor_value_info("y", F, None)])
    model = helper.make_model(graph, functions=[fake, mine],
                              opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, str(tmp_path / "m.onnx"))
    got = infer(tmp_path / "m.onnx", {"x": x}, tmp_path / "out")
    close(got["y"], 2 * np.maximum(x, 0))
