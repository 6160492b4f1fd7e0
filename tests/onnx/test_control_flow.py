"""Loop, Scan, If and the sequence operators, which the importer unrolls and resolves at import: ONNX
graphs built here against numpy written from the ONNX specification, PyTorch modules whose
exports hold them (split into lists, scripted loops, torchvision's MViT) against PyTorch, and
the cases that must be refused with the node named."""
from typing import List

import numpy as np
import onnx
import pytest
import torch
from onnx import TensorProto, helper, numpy_helper

from conftest import cuvil, infer
from test_op_semantics import close, rand, run

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def tensor(name, kind, shape=None):
    return helper.make_tensor_value_info(name, kind, shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value)))


def loop_body(nodes, inputs, outputs, name="body"):
    return helper.make_graph(nodes, name, inputs, outputs)


def test_loop_with_a_carried_value_and_a_scan_output(tmp_path):
    # acc_{i+1} = acc_i * 0.5 + x[i] (x read from the outer scope at the iteration number), and
    # each iteration's acc stacked as a scan output.
    x = rand(5, 3)
    body = loop_body(
        [helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
         helper.make_node("Mul", ["acc", "half"], ["scaled"]),
         helper.make_node("Add", ["scaled", "row"], ["acc_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Identity", ["acc_out"], ["scan"])],
        [tensor("i", I64, []), tensor("cond", B, []), tensor("acc", F, [3])],
        [tensor("cond_out", B, []), tensor("acc_out", F, [3]), tensor("scan", F, [3])])
    node = helper.make_node("Loop", ["trips", "", "acc0"], ["y", "stacked"], body=body)
    y, stacked = run(tmp_path, [node], {"x": x},
                     {"trips": np.array(5, np.int64), "acc0": np.zeros(3, np.float32),
                      "half": np.float32(0.5)}, outputs=("y", "stacked"))
    acc, rows = np.zeros(3, np.float32), []
    for i in range(5):
        acc = acc * 0.5 + x[i]
        rows.append(acc)
    close(y, acc)
    close(stacked, np.stack(rows))


def test_loop_stops_when_its_condition_turns_false(tmp_path):
    # A while loop: the body's condition is i + 1 < 3 (folds each iteration), M is absent.
    x = rand(4)
    body = loop_body(
        [const("one", np.int64(1)), const("three", np.int64(3)),
         helper.make_node("Add", ["i", "one"], ["next"]),
         helper.make_node("Less", ["next", "three"], ["cond_out"]),
         helper.make_node("Add", ["v", "x"], ["v_out"])],
        [tensor("i", I64, [1]), tensor("cond", B, [1]), tensor("v", F, [4])],
        [tensor("cond_out", B, [1]), tensor("v_out", F, [4])])
    node = helper.make_node("Loop", ["", "go", "x"], ["y"], body=body)
    (got,) = run(tmp_path, [node], {"x": x}, {"go": np.array(True)})
    close(got, x * 4)  # x + 3 iterations of + x


def test_nested_loops_unroll(tmp_path):
    # The inner loop adds x three times; the outer runs it twice on its carried value.
    x = rand(2, 3)
    inner = loop_body(
        [helper.make_node("Add", ["w", "x"], ["w_out"]),
         helper.make_node("Identity", ["c2"], ["c2_out"])],
        [tensor("j", I64, []), tensor("c2", B, []), tensor("w", F, [2, 3])],
        [tensor("c2_out", B, []), tensor("w_out", F, [2, 3])], "inner")
    outer = loop_body(
        [helper.make_node("Loop", ["three", "", "v"], ["v_out"], body=inner),
         helper.make_node("Identity", ["c"], ["c_out"])],
        [tensor("i", I64, []), tensor("c", B, []), tensor("v", F, [2, 3])],
        [tensor("c_out", B, []), tensor("v_out", F, [2, 3])], "outer")
    node = helper.make_node("Loop", ["two", "", "x"], ["y"], body=outer)
    (got,) = run(tmp_path, [node], {"x": x},
                 {"two": np.array(2, np.int64), "three": np.array(3, np.int64)})
    close(got, x * 7)


@pytest.mark.parametrize("rows", [1, 3])
def test_if_takes_the_branch_its_static_shape_condition_picks(tmp_path, rows):
    # PyTorch writes such Ifs around squeezes: a shape compared with a constant.
    x = rand(rows, 4)
    then_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["t"])], "then", [],
                                    [tensor("t", F, None)])
    else_branch = helper.make_graph([helper.make_node("Abs", ["x"], ["e"])], "else", [],
                                    [tensor("e", F, None)])
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Equal", ["n", "one"], ["is_one"]),
             helper.make_node("If", ["is_one"], ["y"], then_branch=then_branch,
                              else_branch=else_branch)]
    (got,) = run(tmp_path, nodes, {"x": x}, {"zero": np.int64(0), "one": np.int64(1)})
    close(got, -x if rows == 1 else np.abs(x))


def test_sequence_construct_insert_erase_at_and_length(tmp_path):
    a, b, c = rand(2, 3), rand(2, 3), rand(2, 3)
    nodes = [helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
             helper.make_node("SequenceInsert", ["s", "c", "zero"], ["s2"]),   # [c, a, b]
             helper.make_node("SequenceErase", ["s2", "minus_one"], ["s3"]),   # [c, a]
             helper.make_node("SequenceAt", ["s3", "minus_one"], ["last"]),    # a
             helper.make_node("SequenceAt", ["s3", "zero"], ["first"]),        # c
             helper.make_node("SequenceLength", ["s3"], ["n"]),
             helper.make_node("Cast", ["n"], ["nf"], to=F),
             helper.make_node("Sub", ["first", "last"], ["d"]),
             helper.make_node("Mul", ["d", "nf"], ["y"])]
    (got,) = run(tmp_path, nodes, {"a": a, "b": b, "c": c},
                 {"zero": np.int64(0), "minus_one": np.int64(-1)})
    close(got, (c - a) * 2)


@pytest.mark.parametrize("axis,new_axis", [(0, 0), (1, 0), (-1, 1), (0, 1), (2, 1)])
def test_concat_from_sequence(tmp_path, axis, new_axis):
    a, b, c = rand(2, 3), rand(2, 3), rand(2, 3)
    nodes = [helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=axis, new_axis=new_axis)]
    (got,) = run(tmp_path, nodes, {"a": a, "b": b, "c": c})
    want = np.stack([a, b, c], axis) if new_axis else np.concatenate([a, b, c], axis)
    close(got, want)


@pytest.mark.parametrize("split,axis,keepdims", [(None, 1, 1), (None, -1, 0), (2, 1, 1),
                                                 ([1, 4, 2], 1, 1), ([1, 4, 2], 1, 0), (3, 0, 1),
                                                 (1, 0, 0)])
def test_split_to_sequence_then_concatenate_in_reverse(tmp_path, split, axis, keepdims):
    x = rand(3, 7)
    inits = {} if split is None else {"split": np.array(split, np.int64)}
    pieces_in = ["x"] + ([] if split is None else ["split"])
    n = x.shape[axis] if split is None else (
        len(split) if isinstance(split, list) else -(-x.shape[axis] // split))
    nodes = [helper.make_node("SplitToSequence", pieces_in, ["s"], axis=axis, keepdims=keepdims)]
    names = []
    for k in range(n):
        nodes += [const(f"p{k}", np.int64(n - 1 - k)),
                  helper.make_node("SequenceAt", ["s", f"p{k}"], [f"e{k}"])]
        names.append(f"e{k}")
    stacked = keepdims == 0 and not isinstance(split, list)  # a list of sizes keeps the axis
    nodes += [helper.make_node("SequenceConstruct", names, ["r"]),
              helper.make_node("ConcatFromSequence", ["r"], ["y"], axis=axis,
                               new_axis=int(stacked))]
    (got,) = run(tmp_path, nodes, {"x": x}, inits)
    if split is None:
        bounds = list(range(1, x.shape[axis]))
    elif isinstance(split, list):
        bounds = list(np.cumsum(split)[:-1])
    else:
        bounds = list(range(split, x.shape[axis], split))
    pieces = np.split(x, bounds, axis)
    close(got, np.concatenate(pieces[::-1], axis))


def test_split_into_a_list_inside_a_loop_as_pytorch_writes_it(tmp_path):
    # The shape of torchvision MViT's pooling: a loop over constant bounds slicing the input into
    # a sequence, one element read back.
    x = rand(2, 10, 4)
    body = loop_body(
        [helper.make_node("Gather", ["bounds", "i"], ["lo"], axis=0),
         const("one", np.array([1], np.int64)),
         helper.make_node("Add", ["i", "one"], ["i1"]),
         helper.make_node("Gather", ["bounds", "i1"], ["hi"], axis=0),
         helper.make_node("Slice", ["x", "lo", "hi", "axis1"], ["piece"]),
         helper.make_node("SequenceInsert", ["seq", "piece"], ["seq_out"]),
         helper.make_node("Identity", ["cond"], ["cond_out"])],
        [tensor("i", I64, [1]), tensor("cond", B, []), tensor("seq", F, None)],
        [tensor("cond_out", B, []), tensor("seq_out", F, None)])
    body.input[2].type.CopyFrom(helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None)))
    body.output[1].type.CopyFrom(helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None)))
    nodes = [helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
             helper.make_node("Loop", ["trips", "go", "empty"], ["pieces"], body=body),
             helper.make_node("SequenceAt", ["pieces", "one_pos"], ["y"])]
    (got,) = run(tmp_path, nodes, {"x": x},
                 {"trips": np.array(3, np.int64), "go": np.array(True),
                  "bounds": np.array([0, 1, 6, 10], np.int64), "axis1": np.array([1], np.int64),
                  "one_pos": np.int64(1)})
    close(got, x[:, 1:6])


# ---- refused, naming the node ------------------------------------------------------------------

def refuse(tmp_path, nodes, inputs, initializers, node_text, *fragments):
    vi = [tensor(n, I64 if a.dtype.kind in "iu" else F, list(a.shape)) for n, a in inputs.items()]
    inits = [numpy_helper.from_array(v, k) for k, v in initializers.items()]
    graph = helper.make_graph(nodes, "g", vi, [tensor("y", F, None)], inits)
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    r = cuvil("verify", "--model", str(path), check=False)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert node_text in r.stderr, r.stderr
    for f in fragments:
        assert f in r.stderr, (f, r.stderr)


def add_loop_body():
    return loop_body([helper.make_node("Add", ["v", "v"], ["v_out"]),
                      helper.make_node("Identity", ["c"], ["c_out"])],
                     [tensor("i", I64, []), tensor("c", B, []), tensor("v", F, [3])],
                     [tensor("c_out", B, []), tensor("v_out", F, [3])])


def test_a_loop_whose_trip_count_is_known_only_at_run_time_is_refused(tmp_path):
    node = helper.make_node("Loop", ["n", "", "x"], ["y"], body=add_loop_body(), name="L")
    refuse(tmp_path, [node], {"x": rand(3), "n": np.array(2, np.int64)}, {},
           "node 'L' (Loop)", "trip count M (input 0) is known only at run time")


def test_a_loop_of_too_many_iterations_is_refused(tmp_path):
    node = helper.make_node("Loop", ["n", "", "x"], ["y"], body=add_loop_body(), name="L")
    refuse(tmp_path, [node], {"x": rand(3)}, {"n": np.array(1 << 40, np.int64)},
           "node 'L' (Loop)", "runs 1099511627776 iterations", "at most 4096")


def test_a_loop_without_count_or_condition_is_refused(tmp_path):
    node = helper.make_node("Loop", ["", "", "x"], ["y"], body=add_loop_body(), name="L")
    refuse(tmp_path, [node], {"x": rand(3)}, {}, "node 'L' (Loop)", "never ends")


def test_a_while_loop_whose_condition_never_turns_false_is_refused(tmp_path):
    node = helper.make_node("Loop", ["", "go", "x"], ["y"], body=add_loop_body(), name="L")
    refuse(tmp_path, [node], {"x": rand(3)}, {"go": np.array(True)}, "node 'L' (Loop)",
           "still holds after 4096 iterations")


def test_an_if_on_a_run_time_condition_is_refused(tmp_path):
    branch = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "b", [],
                               [tensor("t", F, None)])
    nodes = [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "zero"], ["pos"]),
             helper.make_node("If", ["pos"], ["y"], then_branch=branch, else_branch=branch,
                              name="I")]
    refuse(tmp_path, nodes, {"x": rand(3)}, {"zero": np.float32(0)}, "node 'I' (If)",
           "condition (input 0) is known only at run time")


def test_a_sequence_position_out_of_range_is_refused(tmp_path):
    nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
             helper.make_node("SequenceAt", ["s", "p"], ["y"], name="At")]
    refuse(tmp_path, nodes, {"x": rand(3)}, {"p": np.int64(2)}, "node 'At' (SequenceAt)",
           "position 2 is outside [-2, 1] for a sequence of 2")


def test_split_to_sequence_without_the_axis_needs_pieces_of_one(tmp_path):
    nodes = [helper.make_node("SplitToSequence", ["x", "two"], ["s"], keepdims=0, name="S"),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    refuse(tmp_path, nodes, {"x": rand(4, 3)}, {"two": np.int64(2)},
           "node 'S' (SplitToSequence)", "needs pieces of size 1; 'split' is 2")


@pytest.mark.parametrize("axis", [2, -3])
def test_split_to_sequence_on_an_axis_the_input_lacks_is_refused(tmp_path, axis):
    nodes = [helper.make_node("SplitToSequence", ["x"], ["s"], axis=axis, name="S"),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0)]
    refuse(tmp_path, nodes, {"x": rand(4, 3)}, {}, "node 'S' (SplitToSequence)",
           f"axis {axis} out of range for rank 2")


def test_stacking_on_an_axis_past_the_new_rank_is_refused(tmp_path):
    nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
             helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=3, new_axis=1, name="C")]
    refuse(tmp_path, nodes, {"x": rand(4, 3)}, {}, "node 'C' (ConcatFromSequence)",
           "axis 3 out of range for rank 3")


def test_a_sequence_where_a_tensor_belongs_is_refused(tmp_path):
    nodes = [helper.make_node("SequenceConstruct", ["x", "x"], ["s"]),
             helper.make_node("Relu", ["s"], ["y"], name="R")]
    refuse(tmp_path, nodes, {"x": rand(3)}, {}, "node 'R' (Relu)", "input 0 ('s') is a sequence")


def test_an_unsupported_operator_inside_a_loop_body_is_named_up_front(tmp_path):
    body = loop_body([helper.make_node("Unique", ["v"], ["v_out"], name="U"),
                      helper.make_node("Identity", ["c"], ["c_out"])],
                     [tensor("i", I64, []), tensor("c", B, []), tensor("v", F, [3])],
                     [tensor("c_out", B, []), tensor("v_out", F, [3])])
    node = helper.make_node("Loop", ["n", "", "x"], ["y"], body=body, name="L")
    vi = [tensor("x", F, [3])]
    graph = helper.make_graph([node], "g", vi, [tensor("y", F, None)],
                              [numpy_helper.from_array(np.array(2, np.int64), "n")])
    path = tmp_path / "bad.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    r = cuvil("verify", "--model", str(path), check=False)
    assert r.returncode == 2
    assert "unsupported ONNX operators: Unique x1 (first: node 'U')" in r.stderr, r.stderr


# ---- PyTorch modules whose exports hold loops, branches and sequences ----------------------------

@torch.jit.script
def reversed_chunks(x: torch.Tensor) -> torch.Tensor:
    # Scripted, a list's length is known only from shapes: SplitToSequence, a Loop over
    # SequenceLength inserting at the front, ConcatFromSequence (and new_axis for stack).
    out: List[torch.Tensor] = []
    for p in torch.split(x, 2, dim=1):
        out.insert(0, p * 2.0)
    rows = torch.unbind(x, 0)
    return torch.cat(out, dim=1) + torch.stack(rows, 0)


class SplitIntoList(torch.nn.Module):
    def forward(self, x):
        return reversed_chunks(x)


@torch.jit.script
def scripted_loop(x: torch.Tensor, n: int) -> torch.Tensor:
    acc = torch.zeros_like(x)
    for i in range(n):
        acc = acc * 0.5 + x * float(i)
    return acc


class ScriptedLoop(torch.nn.Module):
    def forward(self, x):
        return scripted_loop(x, 4)


@pytest.mark.parametrize("opset", [11, 13, 17])
@pytest.mark.parametrize("module", [SplitIntoList, ScriptedLoop])
def test_pytorch_lists_and_loops(compare, module, opset):
    # Opset 11 and 12 take Unsqueeze's and Squeeze's axes as attributes, 13 on as inputs.
    assert compare(module().eval(), torch.randn(3, 7), opset) <= 1e-5


@pytest.mark.parametrize("name", ["mvit_v2_s", "mvit_v1_b"])
def test_torchvision_mvit_at_a_small_size(tmp_path, name, monkeypatch):
    # MViT's pooling splits its tokens through a Loop of slices into a sequence and squeezes
    # behind an If; its relative positions scatter into the attention. 32 px, 4 frames keep the
    # export small (at 16 x 224 x 224 PyTorch 1.13's exporter itself needs more than 24 GB), and
    # the first four of its 16 blocks (two of its three pooling-stride and width changes) keep it
    # quick: PyTorch took 87 s to export all 16 of mvit_v2_s, 3 s to export these four.
    from torchvision.models.video import mvit

    build = mvit._mvit

    def small(**kw):
        kw.update(spatial_size=(32, 32), temporal_size=4, stochastic_depth_prob=0.0)
        kw["block_setting"] = kw["block_setting"][:4]
        return build(**kw)

    monkeypatch.setattr(mvit, "_mvit", small)
    torch.manual_seed(0)
    model = getattr(mvit, name)().eval()
    x = torch.randn(1, 3, 4, 32, 32)
    path = tmp_path / f"{name}.onnx"
    torch.onnx.export(model, x, str(path), opset_version=17, input_names=["x"],
                      output_names=["y"])
    got = infer(path, {"x": x.numpy()}, tmp_path / "out")["y"]
    with torch.no_grad():
        want = model(x).numpy()
    close(got, want, 1e-4)


def scan_body(nodes, inputs, outputs):
    return helper.make_graph(nodes, "scan_body", inputs, outputs)


@pytest.mark.parametrize("in_dir,in_axis,out_dir,out_axis", [(0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 1, 0),
                                                             (1, 1, 0, 1), (0, -1, 0, -1)])
def test_scan_running_sum_in_every_direction_and_axis(tmp_path, in_dir, in_axis, out_dir, out_axis):
    # The specification's example: a running sum over the scan input's slices, each step's sum
    # a scan output; with a second scan input multiplying each slice.
    x = {0: rand(4, 5, 3), 1: rand(5, 4, 3), -1: rand(5, 3, 4)}[in_axis]  # 4 positions
    body = scan_body([helper.make_node("Mul", ["row", "wrow"], ["weighted"]),
                      helper.make_node("Add", ["sum_in", "weighted"], ["sum_out"]),
                      helper.make_node("Identity", ["sum_out"], ["step"])],
                     [tensor("sum_in", F, None), tensor("row", F, None), tensor("wrow", F, None)],
                     [tensor("sum_out", F, None), tensor("step", F, None)])
    w_axis = 0 if in_axis != -1 else -1
    w = rand(4, 3) if w_axis == 0 else rand(3, 4)
    node = helper.make_node("Scan", ["init", "x", "w"], ["final", "steps"], body=body, num_scan_inputs=2,
                            scan_input_axes=[in_axis, w_axis], scan_input_directions=[in_dir, in_dir],
                            scan_output_axes=[out_axis], scan_output_directions=[out_dir])
    shape_slice = np.take(x, 0, axis=in_axis).shape
    init = np.zeros(shape_slice, np.float32)
    final, steps = run(tmp_path, [node], {"x": x}, {"w": w, "init": init}, opset=11,
                       outputs=("final", "steps"))
    n = x.shape[in_axis]
    order = range(n - 1, -1, -1) if in_dir else range(n)
    acc, rows = init.astype(np.float64), []
    for t in order:
        acc = acc + np.take(x, t, axis=in_axis) * np.take(w, t, axis=w_axis)
        rows.append(acc)
    if out_dir:
        rows = rows[::-1]
    close(final, acc.astype(np.float32))
    close(steps, np.stack(rows, axis=out_axis).astype(np.float32))


def test_scan_refusals_name_the_node(tmp_path):
    body = scan_body([helper.make_node("Add", ["s", "r"], ["o"])],
                     [tensor("s", F, None), tensor("r", F, None)], [tensor("o", F, None)])
    x = rand(3, 2)
    for inits, attrs, why in [({"init": np.zeros(2, np.float32), "x2": rand(4, 2)},
                               dict(num_scan_inputs=2), "the body takes 2 inputs"),
                              ({"init": np.zeros(2, np.float32)}, {}, "'num_scan_inputs' is required")]:
        names = ["init", "x"] + (["x2"] if "x2" in inits else [])
        node = helper.make_node("Scan", names, ["final"], name="scan", body=body, **attrs)
        graph = helper.make_graph([node], "g", [tensor("x", F, [3, 2])], [tensor("final", F, None)],
                                  [numpy_helper.from_array(v, k) for k, v in inits.items()])
        path = tmp_path / "bad.onnx"
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)]), str(path))
        r = cuvil("verify", "--model", str(path), check=False)
        assert r.returncode == 2 and "node 'scan' (Scan)" in r.stderr and why in r.stderr, r.stderr
