"""--model through the commands that take --suite: list, verify (with --each-pass and
--random-configs), run (a --batch ladder, the model's path and sha256 in the JSON), serve."""
import hashlib
import json

import torch
import torchvision

from conftest import cuvil, export, randomise

QUICK = ["--warmup", "1", "--warmup-time", "0", "--min-samples", "3", "--min-time", "0",
         "--max-noise", "50", "-q"]


def dynamic_cnn(tmp_path):
    m = randomise(torchvision.models.mobilenet_v3_small(num_classes=7))
    path = tmp_path / "mbv3.onnx"
    export(m, (torch.randn(1, 3, 32, 32),), path, 13, ["image"], ["logits"],
           dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    return path


def test_list_shows_interface_operators_and_work(tmp_path):
    path = dynamic_cnn(tmp_path)
    out = cuvil("list", "--model", str(path), "--batch", "1,2").stdout
    assert "image" in out and "FLOAT" in out and "batchx3x32x32" in out
    assert "HardSigmoid x" in out and "Conv x" in out
    assert "mbv3/b1:" in out and "mbv3/b2:" in out
    assert "input  image" in out and "[2, 3, 32, 32]" in out
    assert "GFLOP declared" in out and "parameters" in out


def test_verify_each_pass_and_random_configurations(tmp_path):
    path = dynamic_cnn(tmp_path)
    out = cuvil("verify", "--model", str(path), "--batch", "2", "--each-pass",
                "--random-configs", "3").stdout
    assert "without recognize-patterns" in out or "recognize-patterns" in out
    assert "random configurations never draw: int8" in out
    assert "verify: all outputs within tolerance" in out


def test_run_ladder_names_rungs_and_records_the_model(tmp_path):
    path = dynamic_cnn(tmp_path)
    out_json = tmp_path / "run.json"
    cuvil("run", "--model", str(path), "--batch", "1,3", "--no-db", "--out", str(out_json), *QUICK)
    doc = json.loads(out_json.read_text())
    names = {b["name"] for b in doc["benchmarks"] if b.get("aggregate_name") == "median"}
    assert names == {"mbv3/b1_median", "mbv3/b3_median"}
    model = doc["context"]["cuvil"]["model"]
    assert model["path"] == str(path)
    assert model["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert doc["context"]["cuvil"]["config"].endswith("configs/model.cpu.cuvilpass")


def test_ladder_file_binds_named_dimensions(tmp_path):
    path = dynamic_cnn(tmp_path)
    ladder = tmp_path / "ladder.yaml"
    ladder.write_text("suite: mbv3\nrungs:\n  - name: small\n    batch: 2\n")
    out = cuvil("list", "--model", str(path), "--ladder", str(ladder)).stdout
    assert "mbv3/small:" in out and "[2, 3, 32, 32]" in out
    ladder.write_text("rungs:\n  - name: bad\n    sequence: 2\n")
    r = cuvil("list", "--model", str(path), "--ladder", str(ladder), check=False)
    assert r.returncode == 2 and "ladder.yaml:3: rungs[0].sequence" in r.stderr


def test_serve_single_stream(tmp_path):
    path = dynamic_cnn(tmp_path)
    out = cuvil("serve", "--model", str(path), "--batch", "1", "--scenario", "single-stream",
                "--duration", "0.2", "--min-queries", "8", "-q").stdout
    assert "mbv3" in out


def test_model_options_need_a_model(tmp_path):
    r = cuvil("run", "--suite", "resnet50", "--batch", "2", "--no-db", check=False)
    assert r.returncode == 2
    r = cuvil("run", "--suite", "resnet50", "--model", "x.onnx", "--no-db", check=False)
    assert r.returncode == 2 and "excludes" in r.stderr


def test_tune_and_tune_gen_on_a_model(tmp_path):
    path = dynamic_cnn(tmp_path)
    study = tmp_path / "study.db"
    fast = ["--warmup", "0", "--warmup-time", "0", "--min-samples", "2", "--max-samples", "3",
            "--min-time", "0", "--trial-memory-mb", "4096"]
    out = cuvil("tune", "--model", str(path), "--batch", "1", "--trials", "3", "--study", str(study),
                "--sampler", "random", "--seed", "3", "-q", *fast).stdout
    assert "tune mbv3 on b1" in out and "best: trial" in out
    tuned = tmp_path / "mbv3.tuned.cuvilpass"
    import os
    import subprocess
    gen = subprocess.run([os.environ["CUVIL_TUNE_GEN"], "--study", str(study), "--model", str(path),
                          "--batch", "1", "--refits", "2", "--no-fanova", "-o", str(tuned)],
                         capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    assert "suite: mbv3" in tuned.read_text()
    out = cuvil("verify", "--model", str(path), "--batch", "1", "--config", str(tuned)).stdout
    assert "all outputs within tolerance" in out
