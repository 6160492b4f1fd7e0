"""cuvil: compile a model through the Cuvil pipeline and call it from Python.

    import cuvil
    m = cuvil.compile("resnet18.onnx", opt_level="O3", threads=2)
    y = m(x)                       # numpy in, numpy out; safe from several threads at once
    cuvil.compare(torch_module, example_inputs)   # PyTorch eager / TorchScript / cuvil

A call releases the GIL while the plan runs; every `gil_check` steps (the python-binding pass's
parameter) it takes the GIL back to let Ctrl-C raise KeyboardInterrupt between steps and to call
the step hook, if one is set. Concurrent calls each run on an execution context of their own
(arena and threads), sharing the weights.
"""
import collections
import contextlib
import inspect
import os
import re
import tempfile
import threading
import warnings

import numpy as np

from . import _cuvil

__all__ = ["compile", "compare", "CompiledModel", "CuvilError", "ExportMismatchWarning",
           "TensorSpec", "OPT_LEVELS", "TARGETS"]

CuvilError = _cuvil.CuvilError
OPT_LEVELS = ("O0", "O1", "O2", "O3")
TARGETS = ("cpu",)
MAX_THREADS = 1024

TensorSpec = collections.namedtuple("TensorSpec", ["name", "shape", "dtype"])


class ExportMismatchWarning(UserWarning):
    """compile(module): the compiled model's outputs on the example inputs differ from the
    module's past the pipeline's bound (the graph torch.onnx.export wrote computes something
    else)."""


def _check_options(opt_level, threads, target):
    if opt_level not in OPT_LEVELS:
        raise ValueError(f"opt_level must be one of {', '.join(OPT_LEVELS)}, got {opt_level!r}")
    if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= MAX_THREADS:
        raise ValueError(f"threads must be an integer in 0..{MAX_THREADS} (0: every core), got {threads!r}")
    if target not in TARGETS:
        raise ValueError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")


def _bindings(inputs):
    """`inputs` of an ONNX file: {name: shape or example array} -> NAME:AxBxC strings."""
    if inputs is None:
        return []
    if not isinstance(inputs, dict):
        raise TypeError("inputs for an ONNX file must be a dict {input name: shape or array}, "
                        f"got {type(inputs).__name__}")
    out = []
    for name, v in inputs.items():
        shape = np.shape(v) if hasattr(v, "shape") else tuple(v)
        if not shape or not all(isinstance(d, (int, np.integer)) and d >= 1 for d in shape):
            raise ValueError(f"inputs[{name!r}]: expected a shape of positive integers or an array, "
                             f"got {v!r}")
        out.append(f"{name}:" + "x".join(str(int(d)) for d in shape))
    return out


def _zero_symbolic(g, self):
    """aten::zero (`t.zero_()`, which torchvision's Swin V2 applies to a slice of its qkv bias):
    zeros of the input's shape and dtype."""
    from torch.onnx import symbolic_opset9

    return symbolic_opset9.zeros_like(g, self)


# Symbolics for aten ops PyTorch's exporter lacks. Each is registered only after an export failed
# on exactly that op, so a symbolic the user registered, and one a later PyTorch ships, are never
# replaced. It stays registered for the process: PyTorch 1.13's unregister_custom_op_symbolic
# leaves an empty entry behind that fails every later export touching the op.
_EXPORT_FALLBACKS = {"aten::zero": _zero_symbolic}
_UNSUPPORTED_ATEN_OP = re.compile(r"operator '(aten::\w+)'")


def _export_with_fallbacks(torch, module, example, path, opset, names):
    registered = set()
    while True:
        try:
            torch.onnx.export(module, example, path, opset_version=opset, input_names=names)
            return
        except Exception as e:
            found = _UNSUPPORTED_ATEN_OP.search(str(e))
            op = found.group(1) if found else None
            if type(e).__name__ != "UnsupportedOperatorError" or op not in _EXPORT_FALLBACKS \
                    or op in registered:
                raise
            torch.onnx.register_custom_op_symbolic(op, _EXPORT_FALLBACKS[op], opset)
            registered.add(op)


def _export(module, example, opset=17):
    """A torch.nn.Module exported with torch.onnx.export to a temporary file."""
    import torch

    example = example if isinstance(example, tuple) else (example,)
    try:
        params = list(inspect.signature(module.forward).parameters)
    except (TypeError, ValueError):
        params = []
    names = [p if i < len(params) else f"input{i}" for i, p in enumerate(params[: len(example)])]
    names += [f"input{i}" for i in range(len(names), len(example))]
    directory = tempfile.mkdtemp(prefix="cuvil-export-")
    path = os.path.join(directory, type(module).__name__ + ".onnx")
    try:
        with _traced_mode(torch, module), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _export_with_fallbacks(torch, module, example, path, opset, names)
    except Exception as e:  # the exporter's own message, with the module's class
        raise ValueError(f"torch.onnx.export failed for {type(module).__name__}: "
                         f"{type(e).__name__}: {e}") from e
    return path, directory


@contextlib.contextmanager
def _traced_mode(torch, module):
    """The mode the export traces a module in: eval, gradients enabled, every floating-point
    parameter requiring them. In eval mode without gradients, nn.MultiheadAttention and
    nn.TransformerEncoderLayer take PyTorch's fused "fast path" (aten::_native_multi_head_attention,
    aten::_transformer_encoder_layer_fwd), which ONNX cannot express: every ViT and transformer
    encoder failed to export. They take the decomposed path while gradients are enabled and a
    parameter requires them (frozen parameters are unfrozen for the duration)."""
    was_training = module.training
    frozen = [p for p in module.parameters() if not p.requires_grad and p.is_floating_point()]
    module.eval()
    try:
        for p in frozen:
            p.requires_grad_(True)
        with torch.enable_grad():
            yield
    finally:
        for p in frozen:
            p.requires_grad_(False)
        module.train(was_training)


def _tensors(torch, value):
    """The tensors of a module's result in the order torch.onnx.export flattens them (tuples,
    lists and dict values, depth first; None and Python numbers dropped)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(torch, v)]
    return []


def _module_outputs(torch, module, example, traced):
    """The module's result on `example` as float64 arrays: in eval mode without gradients, or
    (traced) in the mode the export traced it in."""
    was_training = module.training
    mode = _traced_mode(torch, module) if traced else torch.no_grad()
    module.eval()
    try:
        with mode:
            result = _tensors(torch, module(*example))
    finally:
        module.train(was_training)
    return [t.detach().cpu().double().numpy() for t in result]


def _misses(ours, theirs, bound):
    """Per output past the bound: (index, error or None for a shape that differs)."""
    misses = []
    for i, (a, b) in enumerate(zip(ours, theirs)):
        e = _relative_error(np.asarray(a, np.float64), b) if a.shape == b.shape else None
        if e is None or not e <= bound:
            misses.append((i, e))
    return misses


def _check_export(torch, module, example, model):
    """Warns (ExportMismatchWarning) when the compiled model's outputs on the example inputs
    differ from the module's past the pipeline's bound: the graph torch.onnx.export wrote computes
    something else (an exporter bug, such as PyTorch 1.13's asymmetric circular padding,
    pytorch#86690), the module draws random numbers, or it rounds or selects (quantization,
    argmax), where a last-bit difference moves an output. The module runs without gradients
    first, and only on a miss again as the export traced it (the fused attention path PyTorch
    takes without gradients differs from the traced one at padded positions)."""
    name = type(module).__name__
    bound = model._session.tolerance
    arrays = [t.detach().cpu().numpy() for t in example]
    ours = model(*[a.astype(np.float32) if a.dtype.kind == "f" else a for a in arrays])
    theirs = _module_outputs(torch, module, example, traced=False)
    if len(theirs) == len(ours) and not _misses(ours, theirs, bound):
        return
    theirs = _module_outputs(torch, module, example, traced=True)
    if len(theirs) != len(ours):
        warnings.warn(f"cuvil.compile({name}): the export was not checked: the module returns "
                      f"{len(theirs)} tensor(s), its ONNX graph {len(ours)} output(s)",
                      ExportMismatchWarning, stacklevel=3)
        return
    misses = _misses(ours, theirs, bound)
    if not misses:
        return
    described = [f"output {i} ({model.outputs[i].name!r}): "
                 + (f"shape {tuple(ours[i].shape)}, the module's {tuple(theirs[i].shape)}"
                    if e is None else f"max relative error {e:.3g}") for i, e in misses]
    warnings.warn(
        f"cuvil.compile({name}): on the example inputs the compiled model differs from the module "
        f"past the bound {bound:g}: {'; '.join(described)}. cuvil computes the graph "
        "torch.onnx.export wrote; here it computes something else: an exporter bug (PyTorch "
        "1.13 pads 'circular' asymmetrically, pytorch#86690), random numbers drawn in forward, "
        "or rounding or selection (quantization, argmax) that a last-bit difference moves. "
        "compile(..., check=False) skips this check.", ExportMismatchWarning, stacklevel=3)


def compile(model, *, inputs=None, config=None, opt_level="O2", threads=0, target="cpu",
            check=True):
    """Compiles `model` and returns a CompiledModel.

    model: a path to an .onnx file (`inputs` may bind its dynamic axes: {name: shape}); a built-in
      "suite/rung" such as "resnet50/b1"; or a torch.nn.Module with `inputs` its example inputs
      (a tensor or a tuple), exported through torch.onnx.export.
    config: a .cuvilpass file (instead of opt_level). opt_level: O0 (no passes), O1 (folding,
      fusion, layout), O2 (the default pipeline), O3 (O2 with bf16 where the CPU has it).
    threads: intra-op threads per call (0: every core).
    check: for a torch.nn.Module, run it and the compiled model once on the example inputs and
      warn (ExportMismatchWarning) where their outputs differ past the pipeline's bound.
    """
    _check_options(opt_level, threads, target)
    if config is not None and not isinstance(config, (str, os.PathLike)):
        raise TypeError(f"config must be a .cuvilpass path, got {type(config).__name__}")
    config = os.fspath(config) if config is not None else ""
    common = dict(config=config, opt_level=opt_level, threads=threads, target=target)
    if isinstance(model, (str, os.PathLike)) and os.fspath(model).endswith(".onnx"):
        session = _cuvil.Session(model=os.fspath(model), inputs=_bindings(inputs), **common)
        return CompiledModel(session)
    if isinstance(model, str):
        suite, _, rung = model.partition("/")
        if inputs is not None:
            raise ValueError(f"inputs= applies to ONNX files and torch modules, not the built-in {model!r}")
        return CompiledModel(_cuvil.Session(suite=suite, rung=rung, **common))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(model, torch.nn.Module):
        if inputs is None:
            raise ValueError(f"compiling a {type(model).__name__} needs inputs=: example inputs to export it with")
        path, directory = _export(model, inputs)
        try:
            compiled = CompiledModel(_cuvil.Session(model=path, **common))
        finally:
            for f in os.listdir(directory):
                os.remove(os.path.join(directory, f))
            os.rmdir(directory)
        if check:
            _check_export(torch, model, inputs if isinstance(inputs, tuple) else (inputs,), compiled)
        return compiled
    raise TypeError("model must be an .onnx path, a built-in 'suite/rung' or a torch.nn.Module, "
                    f"got {type(model).__name__}")


class CompiledModel:
    """A compiled pipeline. Calls are thread-safe and run in parallel (one execution context per
    concurrent call, the weights shared); each releases the GIL while the plan runs."""

    def __init__(self, session):
        self._session = session
        self._hook = None
        self._lock = threading.Lock()
        self.inputs = [TensorSpec(n, tuple(s), d) for n, s, d in session.inputs]
        self.outputs = [TensorSpec(n, tuple(s), d) for n, s, d in session.outputs]

    name = property(lambda self: self._session.name)
    config = property(lambda self: self._session.config, doc="the .cuvilpass text")
    config_path = property(lambda self: self._session.config_path)
    threads = property(lambda self: self._session.threads)
    gil_check = property(lambda self: self._session.gil_check_steps,
                         doc="steps between GIL checks (python-binding.gil_check; 0: never)")
    contexts = property(lambda self: self._session.contexts,
                        doc="execution contexts made so far (the most calls that ran at once)")
    closed = property(lambda self: self._session.closed)

    def __repr__(self):
        return (f"<cuvil.CompiledModel {self.name} inputs={[tuple(i) for i in self.inputs]} "
                f"threads={self.threads}{' closed' if self.closed else ''}>")

    def _array(self, spec, value):
        a = np.asarray(value)
        if spec.dtype == "float32":
            if a.dtype != np.float32:
                raise TypeError(f"input {spec.name!r} expects float32, got {a.dtype} "
                                f"(convert with x.astype(numpy.float32))")
        elif a.dtype.kind not in "iub":
            raise TypeError(f"input {spec.name!r} expects integer ids, got {a.dtype}")
        if tuple(a.shape) != spec.shape:
            raise ValueError(f"input {spec.name!r} expects shape {spec.shape}, got {tuple(a.shape)}")
        if spec.dtype != "float32":
            if a.size and (a.min() < -(1 << 24) or a.max() > (1 << 24)):
                raise ValueError(f"input {spec.name!r}: ids beyond 2^24 are not exact in fp32 storage")
            return np.ascontiguousarray(a, dtype=np.float32)  # ids held as exact floats
        return a if a.flags["C_CONTIGUOUS"] else np.ascontiguousarray(a)  # float32: zero-copy

    def __call__(self, *arrays, **named):
        if self.closed:
            raise RuntimeError(f"{self.name}: the model is closed")
        expected = [i.name for i in self.inputs]
        if arrays and named:
            raise ValueError("give the inputs either by position or by name, not both")
        if named:
            unknown = sorted(set(named) - set(expected))
            if unknown:
                raise ValueError(f"unknown input(s) {unknown}; the model's inputs are {expected}")
            missing = [n for n in expected if n not in named]
            if missing:
                raise ValueError(f"missing input(s) {missing}; the model's inputs are {expected}")
            arrays = tuple(named[n] for n in expected)
        if len(arrays) != len(self.inputs):
            raise ValueError(f"expected {len(self.inputs)} input(s) {expected}, got {len(arrays)}")
        converted = [self._array(spec, a) for spec, a in zip(self.inputs, arrays)]
        try:
            return self._session.run(converted, self._hook)
        except CuvilError as e:
            if self.closed:
                raise RuntimeError(f"{self.name}: the model is closed") from e
            raise

    def set_step_hook(self, hook):
        """hook(step_index, node_name) is called with the GIL every `gil_check` steps of a call
        (None removes it). An exception it raises ends that call."""
        if hook is not None and not callable(hook):
            raise TypeError("the step hook must be callable or None")
        self._hook = hook

    def plan_summary(self):
        """The compiled plan, one step per line: kernel, node, output shape, declared GFLOP."""
        return self._session.plan_summary()

    def verify(self, seed=1):
        """Against the reference interpreter on random inputs: {'ok', 'tolerance',
        'max_relative_error': {output: error}}."""
        return self._session.verify(seed)

    def benchmark(self, seed=1, **options):
        """The harness `cuvil-bench run` uses, on random inputs. Options as its flags: warmup,
        warmup_time, min_samples, max_samples, min_time, max_noise (percent), timeout. Returns
        the statistics: median_ms, median_ci_ms, p50..p99.9_ms, cv, noisy, samples_ns, ..."""
        return self._session.benchmark(options, seed)

    def close(self):
        """Frees the execution contexts; later calls raise RuntimeError."""
        self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def compare(module, inputs, *, threads=0, opt_level="O2", verbose=True, **options):
    """PyTorch eager, TorchScript-frozen and cuvil on the same weights and inputs, the same
    thread count, measured by the same harness with their samples interleaved. Returns
    {'eager': stats, 'torchscript': stats, 'cuvil': stats, 'max_relative_error': {...}}; prints
    the table when verbose."""
    import torch

    _check_options(opt_level, threads, "cpu")
    example = inputs if isinstance(inputs, tuple) else (inputs,)
    # compare reports the error itself, so compile's own check of the export is skipped
    model = compile(module, inputs=example, opt_level=opt_level, threads=threads, check=False)
    n = model.threads
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    module.eval()
    try:
        with torch.no_grad():
            scripted = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(module, example)))
            eager_out = module(*example)
            ours = model(*[t.detach().numpy() for t in example])
            script_out = scripted(*example)
            errors = {"eager": _max_error(ours, eager_out), "torchscript": _max_error(ours, script_out)}
            stats = _cuvil.measure_interleaved(
                [model._session, lambda: module(*example), lambda: scripted(*example)], options)
    finally:
        torch.set_num_threads(previous)
    result = {"eager": stats[1], "torchscript": stats[2], "cuvil": stats[0],
              "max_relative_error": errors, "threads": n, "torch": torch.__version__}
    if verbose:
        c = stats[0]["median_ms"]
        print(f"{model.name}: {n} thread(s), torch {torch.__version__}")
        print(f"{'':14}{'median ms':>12}{'95% CI ms':>22}{'speed-up':>10}{'max rel err':>13}")
        for label, key in (("eager", "eager"), ("TorchScript", "torchscript"), ("cuvil", "cuvil")):
            s = result[key]
            lo, hi = s["median_ci_ms"]
            up = "" if key == "cuvil" else f"{s['median_ms'] / c:9.2f}x"
            err = "" if key == "cuvil" else f"{errors[key]:13.2e}"
            print(f"{label:14}{s['median_ms']:12.3f}{lo:11.3f}..{hi:<9.3f}{up:>10}{err}"
                  f"{'  NOISY' if s['noisy'] else ''}")
        busy = sum(result[k].get("unsettled_turns", 0) for k in ("eager", "torchscript", "cuvil"))
        if busy:
            print(f"warning: {busy} turn(s) began while threads of this process still ran "
                  "after 1 s of waiting: those samples may be slow")
    model.close()
    return result


def _relative_error(a, b):
    """cuvil's metric (ir::max_relative_error): max |a - b| / max(|b|, rms(b)), in float64."""
    if not b.size:
        return 0.0
    rms = np.sqrt(np.mean(b * b))
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), rms or 1.0)))


def _max_error(ours, theirs):
    theirs = theirs if isinstance(theirs, (tuple, list)) else (theirs,)
    worst = 0.0
    for a, b in zip(ours, theirs):
        b = b.detach().numpy().astype(np.float64)
        worst = max(worst, _relative_error(np.asarray(a, np.float64).reshape(b.shape), b))
    return worst
