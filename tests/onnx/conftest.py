"""Shared helpers for the ONNX importer's tests: export a PyTorch module, run it through
`cuvil-bench infer`, compare with PyTorch. CTest passes the cuvil-bench binary in CUVIL_BENCH."""
import os
import subprocess

import numpy as np
import pytest
import torch

CUVIL_BENCH = os.environ.get("CUVIL_BENCH", "cuvil-bench")
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# fp32 bound of the issue: outputs of the compiled pipeline within 1e-4 of PyTorch's.
FP32_BOUND = 1e-4


def max_relative_error(got, want):
    """cuvil's metric (ir::max_relative_error): |a - b| / max(|b|, rms(b))."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    assert got.shape == want.shape, f"shape {got.shape} vs {want.shape}"
    rms = np.sqrt(np.mean(want * want)) if want.size else 0.0
    denom = np.maximum(np.abs(want), rms if rms > 0 else 1.0)
    return float(np.max(np.abs(got - want) / denom)) if want.size else 0.0


def randomise(module, seed=0):
    """Untrained torchvision heads start at zero (ViT) and BatchNorm at identity: give every
    parameter and running statistic non-trivial values so a wrong import cannot hide."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * (0.5 / max(1, p[0].numel()) ** 0.5 if p.dim() > 1 else 0.2))
        for name, b in module.named_buffers():
            if name.endswith("running_var"):
                b.copy_(torch.rand(b.shape, generator=g) + 0.5)
            elif name.endswith("running_mean"):
                b.copy_(torch.randn(b.shape, generator=g) * 0.1)
    return module.eval()


def cuvil(*args, check=True):
    r = subprocess.run([CUVIL_BENCH, *args], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"cuvil-bench {' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def infer(model_path, inputs, out_dir, extra=()):
    """Runs `cuvil-bench infer` on named numpy arrays; returns the outputs by file stem."""
    args = ["infer", "--model", str(model_path), "--out-dir", str(out_dir), *extra]
    for name, array in inputs.items():
        path = os.path.join(str(out_dir), f"in_{name}.npy")
        os.makedirs(str(out_dir), exist_ok=True)
        np.save(path, array)
        args += ["--input", f"{name}={path}"]
    cuvil(*args)
    return {f[:-4]: np.load(os.path.join(str(out_dir), f)) for f in os.listdir(str(out_dir))
            if f.endswith(".npy") and not f.startswith("in_")}


def export(module, example, path, opset, input_names, output_names, **kwargs):
    torch.onnx.export(module, example, str(path), opset_version=opset, input_names=input_names,
                      output_names=output_names, **kwargs)
    return path


@pytest.fixture
def compare(tmp_path):
    """compare(module, example_inputs, opset, ...) exports, runs PyTorch and cuvil, and returns
    the worst relative error over the outputs."""

    def run(module, example, opset, input_names=("x",), output_names=("y",), **kwargs):
        example = example if isinstance(example, tuple) else (example,)
        path = export(module, example, tmp_path / f"model{opset}.onnx", opset, list(input_names),
                      list(output_names), **kwargs)
        with torch.no_grad():
            want = module(*example)
        want = want if isinstance(want, (tuple, list)) else (want,)
        got = infer(path, {n: t.numpy() for n, t in zip(input_names, example)}, tmp_path / "out")
        return max(max_relative_error(got[name], w.numpy()) for name, w in zip(output_names, want))

    return run
