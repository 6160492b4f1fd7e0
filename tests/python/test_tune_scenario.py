"""`cuvil-bench tune --scenario python`: trials measured through the cuvil module with Python
threads calling one model beside a pure-Python thread, so python-binding.gil_check is searched
(and only there) and each rung records how much of the GIL the calls left to the program."""
import json
import os
import subprocess

CUVIL_BENCH = os.environ.get("CUVIL_BENCH", "cuvil-bench")
QUICK = ["--min-time", "0", "--min-samples", "3", "--max-noise", "50", "--warmup", "1",
         "--warmup-time", "0", "--seed", "1"]


def tune(tmp_path, *args, env=None):
    return subprocess.run([CUVIL_BENCH, "tune", "--suite", "resnet50", "--study",
                           str(tmp_path / "s.db"), *args, *QUICK], capture_output=True, text=True,
                          cwd=str(tmp_path), env=env)


def trials(tmp_path):
    with open(tmp_path / "s.db.trials.jsonl") as f:
        return [json.loads(line) for line in f]


def test_python_scenario_searches_gil_check_and_records_the_gil(tmp_path):
    r = tune(tmp_path, "--scenario", "python", "--python-callers", "2", "--trials", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "through Python: 2 caller thread(s)" in r.stdout, r.stdout
    records = [t for t in trials(tmp_path) if t["state"] == "complete"]
    assert len(records) == 3, r.stdout
    # Searched: the baseline's 16 and the sampler's own draws.
    assert len({t["values"]["python-binding.gil_check"] for t in records}) >= 2, records
    for t in records:
        (rung,) = t["rungs"]
        assert 0 < rung["gil_free"] <= 1.5, rung
        assert len(rung["samples_ns"]) >= 3
    assert r.stdout.count("GIL free") == 3, r.stdout


def test_native_scenario_leaves_gil_check_at_its_default(tmp_path):
    r = tune(tmp_path, "--trials", "2")
    assert r.returncode == 0, r.stdout + r.stderr
    records = trials(tmp_path)
    assert all(t["values"].get("python-binding.gil_check", 16) == 16 for t in records), records
    assert all("gil_free" not in rung for t in records for rung in t["rungs"])
    assert "GIL free" not in r.stdout


def expect_exit_2(r, fragment):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert fragment in r.stderr, r.stderr


def test_python_scenario_bad_input(tmp_path):
    env = dict(os.environ, CUVIL_PYTHON_MODULE_DIR=str(tmp_path / "nowhere"))
    expect_exit_2(tune(tmp_path, "--scenario", "python", "--trials", "1", env=env),
                  "the cuvil Python module is not built")
    expect_exit_2(tune(tmp_path, "--scenario", "jython", "--trials", "1"), "--scenario")
    expect_exit_2(tune(tmp_path, "--scenario", "python", "--python-callers", "0", "--trials", "1"),
                  "--python-callers")
    assert not (tmp_path / "s.db").exists()  # refused before a study was made
