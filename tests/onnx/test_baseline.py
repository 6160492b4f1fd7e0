"""`cuvil-bench run --model M --baseline torch`: PyTorch eager and TorchScript measured beside
cuvil on the same inputs, their rows in the run JSON with their output error against cuvil, and
the baseline's bad inputs (exit 2, one line); `verify --against torch`: the built-in suites'
reference modules against cuvil."""
import json
import os
import shutil
import subprocess

import pytest
import torch

from conftest import CUVIL_BENCH, SOURCE_DIR, cuvil, export
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
    assert "BEYOND BOUND" not in r.stdout
    doc = json.loads(out.read_text())
    medians = {b["name"]: b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}
    assert set(medians) == {"small/b1_median", "small/b1/torch-eager_median",
                            "small/b1/torch-script_median"}
    for name in ("small/b1/torch-eager_median", "small/b1/torch-script_median"):
        extra = medians[name]["cuvil"]
        assert extra["max_rel_error_vs_cuvil"] <= 1e-4
        assert len(extra["real_ns"]) >= 3
    # Every row was measured in turns, each after a settle (measure.h).
    for extra in (m["cuvil"] for m in medians.values()):
        turns = extra["turns"]
        assert turns["count"] >= 1 and 0 <= turns["unsettled"] <= turns["count"]
        assert turns["settle_s"] >= 0.02 * turns["count"]
    base = doc["context"]["cuvil"]["baseline"]
    assert base["framework"] == "torch" and base["version"] == torch.__version__
    assert base["threads"] >= 1 and base["blas"]
    assert base["module"].endswith("small.pt")  # found beside the model
    # The bars beside run.json (cuvil, eager, TorchScript with their intervals), in a browser.
    picture = tmp_path / "run.vs-torch.svg"
    assert f"wrote {picture}" in r.stdout
    check = subprocess.run(
        [os.path.join(SOURCE_DIR, "tests", "cli", "picture_browser_check.sh"), str(picture), "3",
         "median latency (ms)", "rung", "small/b1", "torch-eager", "torch-script",
         'class="interval"'], capture_output=True, text=True, timeout=180)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_baseline_beyond_the_pipelines_bound_is_flagged(tmp_path):
    # Must-fail: PyTorch given another model (other weights) than the one cuvil runs: its output
    # differs far beyond the f32 bound, and the table, a warning and the JSON say so.
    model = small_model(tmp_path)
    torch.manual_seed(1)
    torch.save(Small().eval(), str(tmp_path / "other.pt"))
    out = tmp_path / "run.json"
    r = cuvil("run", "--model", str(model), "--baseline", "torch", "--torch-module",
              str(tmp_path / "other.pt"), "--out", str(out), *QUICK)
    assert r.stdout.count("BEYOND BOUND") == 2, r.stdout
    assert "beyond this pipeline's f32 bound 1e-04" in r.stderr, r.stderr
    warnings = json.loads(out.read_text())["context"]["cuvil"]["warnings"]
    assert sum("beyond this pipeline's f32 bound" in w for w in warnings) == 2, warnings


def test_bf16_rows_beside_cuvil(tmp_path):
    # --torch-dtype bf16: the module and its input cast to bfloat16, rows named for it.
    model = small_model(tmp_path)
    out = tmp_path / "run.json"
    cuvil("run", "--model", str(model), "--baseline", "torch", "--torch-dtype", "bf16",
          "--opt-level", "O3", "--out", str(out), *QUICK)
    doc = json.loads(out.read_text())
    medians = {b["name"]: b for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}
    assert set(medians) == {"small/b1_median", "small/b1/torch-eager-bf16_median",
                            "small/b1/torch-script-bf16_median"}
    for name in ("small/b1/torch-eager-bf16_median", "small/b1/torch-script-bf16_median"):
        err = medians[name]["cuvil"]["max_rel_error_vs_cuvil"]
        assert 0 < err <= 1e-1  # bfloat16 rounding: not fp32's agreement, but the same model
        assert medians[name]["cuvil"]["reduced_precision_flops"] > 0
    assert doc["context"]["cuvil"]["baseline"]["dtype"] == "bf16"


def test_torch_dtype_bad_input(tmp_path):
    model = small_model(tmp_path)
    expect_user_error(["run", "--model", str(model), "--baseline", "torch", "--torch-dtype",
                       "fp16", *QUICK], "--torch-dtype", "fp16")
    expect_user_error(["run", "--model", str(model), "--torch-dtype", "bf16", *QUICK],
                      "--torch-dtype", "--baseline")


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
    expect_user_error(["run", "--suite", "sdxl", "--rungs", "256px", "--baseline", "torch",
                       "--target", "cuda", *QUICK], "--target cuda")


def verify_against_torch(*args, env=None):
    return subprocess.run([CUVIL_BENCH, "verify", "--against", "torch", *args], capture_output=True,
                          text=True, env=env)


def torch_rows(stdout):
    """The verify table's PyTorch rows: (rung, variant, output, error, result)."""
    rows = []
    for line in stdout.splitlines():
        f = line.split()
        if len(f) >= 6 and f[1] in ("torch-eager", "torch-script"):
            rows.append((f[0], f[1], f[3], float(f[4]), f[5]))
    return rows


@pytest.mark.parametrize("suite,rung", [("sdxl", "256px"), ("llama3-8b", "decode-ctx512"),
                                        ("llama3-8b", "prefill-128")])
def test_verify_against_reference_module_at_scaled_down_size(suite, rung):
    # The reference module built at the suite's toy size, loaded with cuvil's weights by name:
    # agreement checks names, topology and every op's semantics together.
    r = verify_against_torch("--suite", suite, "--rungs", rung)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = torch_rows(r.stdout)
    assert {v for _, v, _, _, _ in rows} == {"torch-eager", "torch-script"}, r.stdout
    assert all(err <= 1e-4 and result == "ok" for _, _, _, err, result in rows), r.stdout


def test_verify_against_torch_fails_on_a_wrong_reference(tmp_path):
    # Must-fail: the classic GEGLU mistake (value and gate swapped) in a copy of the reference
    # module: the comparison reports FAIL and exits 1.
    work = tmp_path / "python"
    shutil.copytree(os.path.join(SOURCE_DIR, "bench_suite", "python"), work)
    ref = work / "torch_reference.py"
    text = ref.read_text()
    assert "value, gate = self.proj(x).chunk(2, dim=-1)" in text
    ref.write_text(text.replace("value, gate = self.proj(x).chunk(2, dim=-1)",
                                "gate, value = self.proj(x).chunk(2, dim=-1)"))
    env = dict(os.environ, CUVIL_BENCH_PYTHON_DIR=str(work))
    r = verify_against_torch("--suite", "sdxl", "--rungs", "256px", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    rows = torch_rows(r.stdout)
    assert rows and all(result == "FAIL" for _, _, _, _, result in rows), r.stdout


def test_verify_against_torch_bad_input():
    expect_user_error(["verify", "--suite", "resnet50", "--against", "torch"], "--full-size")
    expect_user_error(["verify", "--suite", "sdxl", "--against", "jax"], "unknown framework 'jax'")
    expect_user_error(["verify", "--suite", "sdxl", "--against", "torch", "--target", "cuda"],
                      "cpu target only")
