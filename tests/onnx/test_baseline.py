"""`cuvil-bench run --model M --baseline torch`: PyTorch eager and TorchScript measured beside
cuvil on the same inputs, their rows in the run JSON with their output error against cuvil, and
the baseline's bad inputs (exit 2, one line)."""
import json

import torch

from conftest import cuvil, export
from small_models import Small
from test_bad_input import expect_user_error

QUICK = ["--no-db", "-q", "--warmup", "1", "--warmup-time", "0", "--min-samples", "3",
         "--min-time", "0", "--max-noise", "50"]


def small_model(tmp_path, script=False):
    torch.manual_seed(0)
    m = Small().eval()
    x = torch.randn(1, 3, 12, 12)
    export(m, (x,), tmp_path / "small.onnx", 17, ["x"], ["y"])
    if script:
        torch.jit.save(torch.jit.trace(m, x), str(tmp_path / "small.pt"))
    else:
        torch.save(m, str(tmp_path / "small.pt"))
    return tmp_path / "small.onnx"


def test_eager_and_script_rows_beside_cuvil(tmp_path):
    model = small_model(tmp_path)
    out = tmp_path / "run.json"
    r = cuvil("run", "--model", str(model), "--baseline", "torch", "--out", str(out), *QUICK)
    assert "PyTorch" in r.stdout and "speed-up" in r.stdout
    doc = json.loads(out.read_text())
    medians = {b["name"]: b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}
    assert set(medians) == {"small/b1_median", "small/b1/torch-eager_median",
                            "small/b1/torch-script_median"}
    for name in ("small/b1/torch-eager_median", "small/b1/torch-script_median"):
        extra = medians[name]["cuvil"]
        assert extra["max_rel_error_vs_cuvil"] <= 1e-4
        assert len(extra["real_ns"]) >= 3
    base = doc["context"]["cuvil"]["baseline"]
    assert base["framework"] == "torch" and base["version"] == torch.__version__
    assert base["threads"] >= 1 and base["blas"]
    assert base["module"].endswith("small.pt")  # found beside the model


def test_torchscript_file_has_no_eager_row_and_says_why(tmp_path):
    model = small_model(tmp_path, script=True)
    r = cuvil("run", "--model", str(model), "--baseline", "torch", *QUICK)
    assert "torch-script" in r.stdout
    assert "torch-eager: not measured" in r.stdout


def test_baseline_bad_input(tmp_path):
    model = small_model(tmp_path)
    (tmp_path / "small.pt").unlink()
    expect_user_error(["run", "--model", str(model), "--baseline", "torch", *QUICK],
                      "--baseline torch needs the PyTorch module")
    expect_user_error(["run", "--model", str(model), "--baseline", "torch", "--torch-module",
                       str(tmp_path / "missing.pt"), *QUICK], "missing.pt", "no such file")
    torch.save({"not": "a module"}, str(tmp_path / "dict.pt"))
    expect_user_error(["run", "--model", str(model), "--baseline", "torch", "--torch-module",
                       str(tmp_path / "dict.pt"), *QUICK], "not a torch.nn.Module")
    expect_user_error(["run", "--model", str(model), "--baseline", "torch", "--target", "cuda",
                       "--torch-module", str(tmp_path / "dict.pt"), *QUICK], "--target cuda")


def test_builtin_suite_reference_module_with_cuvils_weights(tmp_path):
    # torchvision's ResNet-50 loaded with the resnet50 graph's own weights by name: its outputs
    # agree with cuvil's, which checks the names and the topology together.
    out = tmp_path / "run.json"
    cuvil("run", "--suite", "resnet50", "--rungs", "b1", "--baseline", "torch", "--out", str(out),
          *QUICK)
    doc = json.loads(out.read_text())
    medians = {b["name"]: b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}
    assert medians["resnet50/b1/torch-script_median"]["cuvil"]["max_rel_error_vs_cuvil"] <= 1e-4
    assert medians["resnet50/b1/torch-eager_median"]["cuvil"]["max_rel_error_vs_cuvil"] <= 1e-4
    expect_user_error(["run", "--suite", "sdxl", "--rungs", "256px", "--baseline", "torch", *QUICK],
                      "no PyTorch reference module for suite 'sdxl'")
