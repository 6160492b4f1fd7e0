"""Several Python threads calling one model: throughput, latency and how much of the GIL the
model leaves to the rest of the program, for cuvil (one CompiledModel shared by the threads),
PyTorch eager and TorchScript-frozen, each with the same thread budget.

For P Python threads (default 1, 2, 4) each model gets intra-op threads = max(1, cores // P):
  - throughput (calls/s over all threads) and p50/p99 latency of calls during `--duration` s;
  - the GIL-held fraction's complement: the rate of a pure-Python counter thread while one
    Python thread runs the model with cores - 1 intra-op threads (a core left for the counter),
    over the counter's rate alone. 100%: the model never holds the GIL; PyTorch eager holds it
    for the Python between its operators.

usage: PYTHONPATH=build/python /usr/bin/python3 bench_suite/python/threads_bench.py
         [--model M.onnx | --suite resnet50/b1] [--torch-module M.pt] [--threads 1,2,4]
         [--duration 3] [--gil-check N] [--out results.json]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import warnings

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402

import cuvil  # noqa: E402


ROUNDS = 15  # alternating counter phases (alone, beside the model) per model
PHASE_S = 0.3


def percentile(xs, p):
    """Nearest rank (numpy's inverted CDF), as the harness's stats::nearest_rank_percentile."""
    return float(np.percentile(xs, p, method="inverted_cdf")) if xs else float("nan")


def drive(call, threads, duration):
    """`threads` Python threads calling `call()` for `duration` s: calls/s and latencies (ms)."""
    latencies = [[] for _ in range(threads)]
    start_gate = threading.Barrier(threads + 1)
    stop = [False]

    def worker(k):
        start_gate.wait()
        lat = latencies[k]
        while not stop[0]:
            t0 = time.perf_counter()
            call()
            lat.append((time.perf_counter() - t0) * 1e3)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    start_gate.wait()
    t0 = time.perf_counter()
    time.sleep(duration)
    stop[0] = True
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - t0
    all_lat = [x for lat in latencies for x in lat]
    return {"calls": len(all_lat), "throughput": len(all_lat) / elapsed,
            "p50_ms": percentile(all_lat, 50), "p99_ms": percentile(all_lat, 99)}


def counter_rate(duration, during=None, count=True):
    """Increments per second of a pure-Python loop (none when not `count`), alone or while
    `during()` runs in a thread; also the calls per second `during` made meanwhile."""
    stop = [False]
    calls = [0]
    runner = None
    if during is not None:
        def loop():
            while not stop[0]:
                during()
                calls[0] += 1
        runner = threading.Thread(target=loop)
        runner.start()
        time.sleep(0.05)  # let the model's thread get going
    n = 0
    c0 = calls[0]
    t0 = time.perf_counter()
    end = t0 + duration
    while time.perf_counter() < end:
        if count:
            for _ in range(1000):
                n += 1
        else:
            time.sleep(0.005)
    elapsed = time.perf_counter() - t0
    made = calls[0] - c0
    stop[0] = True
    if runner:
        runner.join()
    return n / elapsed, made / elapsed


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", help="an .onnx file (with --torch-module for the PyTorch rows)")
    p.add_argument("--suite", default=None, help="a built-in suite/rung (cuvil rows only)")
    p.add_argument("--torch-module", help="torch.save'd module for the PyTorch rows")
    p.add_argument("--threads", default="1,2,4")
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--gil-check", type=int, default=None,
                   help="python-binding.gil_check for cuvil (default: the config's)")
    p.add_argument("--opt-level", default="O2")
    p.add_argument("--out")
    a = p.parse_args()
    cores = os.cpu_count() or 1
    counts = [int(x) for x in a.threads.split(",")]

    if not a.model and not a.suite:
        # Default: torchvision ResNet-18, exported here with fixed-seed weights.
        import subprocess
        d = tempfile.mkdtemp(prefix="cuvil-threads-")
        here = os.path.dirname(os.path.abspath(__file__))
        subprocess.run([sys.executable, os.path.join(here, "export_torchvision.py"), "resnet18", d],
                       check=True, capture_output=True)
        a.model, a.torch_module = os.path.join(d, "resnet18.onnx"), os.path.join(d, "resnet18.pt")

    config = None
    if a.gil_check is not None:
        base = cuvil.compile(a.model or a.suite, opt_level=a.opt_level).config
        if "gil_check:" not in base:
            raise SystemExit("the pipeline has no python-binding pass to set gil_check on")
        import re
        text = re.sub(r"gil_check: \d+", f"gil_check: {a.gil_check}", base)
        fd, config = tempfile.mkstemp(suffix=".cuvilpass")
        os.write(fd, text.encode())
        os.close(fd)

    def cuvil_factory(intra):
        m = cuvil.compile(a.model or a.suite, threads=intra, config=config,
                          opt_level=a.opt_level if config is None else "O2")
        arrays = [np.random.default_rng(0).standard_normal(s.shape).astype(np.float32)
                  if s.dtype == "float32" else np.zeros(s.shape, np.int64) for s in m.inputs]
        m(*arrays)
        return m, (lambda: m(*arrays))

    factories = {"cuvil": cuvil_factory}
    if a.torch_module:
        import torch
        module = torch.load(a.torch_module).eval()
        probe = cuvil.compile(a.model, threads=1)
        example = tuple(torch.from_numpy(np.random.default_rng(0).standard_normal(s.shape).astype(np.float32))
                        for s in probe.inputs)
        with torch.no_grad():
            scripted = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.trace(module, example)))

        def torch_factory(fn):
            def make(intra):
                torch.set_num_threads(intra)
                def call():
                    with torch.no_grad():
                        fn(*example)
                call()
                return None, call
            return make

        factories["torch-eager"] = torch_factory(module)
        factories["torch-script"] = torch_factory(scripted)

    print(f"{a.model or a.suite}: {cores} cores, {a.duration:.1f} s per row, cuvil gil_check "
          f"{'config' if a.gil_check is None else a.gil_check}")
    rows = []
    header = f"{'model':14}{'threads':>9}{'intra-op':>9}{'calls/s':>10}{'x one':>8}{'p50 ms':>9}{'p99 ms':>9}"
    print(header)
    for name, factory in factories.items():
        one = None
        for n in counts:
            intra = max(1, cores // n)
            model, call = factory(intra)
            r = drive(call, n, a.duration)
            if one is None:
                one = r["throughput"]
            r.update(model=name, python_threads=n, intra_op_threads=intra,
                     speedup_vs_one=r["throughput"] / one)
            rows.append(r)
            print(f"{name:14}{n:9}{intra:9}{r['throughput']:10.1f}{r['speedup_vs_one']:8.2f}"
                  f"{r['p50_ms']:9.2f}{r['p99_ms']:9.2f}")
            if model is not None:
                model.close()
        # The same model with 1 Python thread x 1 intra-op thread: the base the 2 x 1 row is
        # compared with, where both rows use one intra-op thread per call.
        if 1 in counts and cores >= 2:
            model, call = factory(1)
            r = drive(call, 1, a.duration)
            r.update(model=name, python_threads=1, intra_op_threads=1)
            rows.append(r)
            two = [x for x in rows if x["model"] == name and x["python_threads"] == 2]
            ratio = two[0]["throughput"] / r["throughput"] if two else float("nan")
            print(f"{name:14}{1:9}{1:9}{r['throughput']:10.1f}{'':8}{r['p50_ms']:9.2f}{r['p99_ms']:9.2f}"
                  f"   (2 x 1 is {ratio:.2f}x this)")
            for x in two:
                x["speedup_vs_one_by_one"] = ratio
            if model is not None:
                model.close()
    print(f"\nPure-Python counter beside one Python thread running the model on {max(1, cores - 1)} "
          f"intra-op thread(s), against its rate alone (alternating {PHASE_S} s phases, {ROUNDS} of each; "
          f"median ratio and range):")
    print(f"  {'model':14} {'counter kept':>22} {'model calls/s kept':>26}")
    gil = {}
    for name, factory in factories.items():
        model, call = factory(max(1, cores - 1))
        kept, model_kept = [], []
        for _ in range(ROUNDS):
            alone, _ = counter_rate(PHASE_S)
            _, model_alone = counter_rate(PHASE_S, call, count=False)
            beside, model_beside = counter_rate(PHASE_S, call)
            kept.append(beside / alone)
            model_kept.append(model_beside / model_alone if model_alone else float("nan"))
        gil[name] = {"counter_median": statistics.median(kept), "counter_range": [min(kept), max(kept)],
                     "model_median": statistics.median(model_kept),
                     "model_range": [min(model_kept), max(model_kept)]}
        print(f"  {name:14} {100 * gil[name]['counter_median']:6.1f}% ({100 * min(kept):5.1f}..{100 * max(kept):5.1f})"
              f" {100 * gil[name]['model_median']:9.1f}% ({100 * min(model_kept):5.1f}..{100 * max(model_kept):5.1f})")
        if model is not None:
            model.close()
    print("counter kept: the counter's rate beside the model over its rate alone (the GIL the model "
          "leaves free); model calls/s kept: the model's rate beside the counter over its rate alone "
          "(what waiting for the GIL at its checks costs it).")
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"rows": rows, "counter_kept": gil, "cores": cores,
                       "model": a.model or a.suite, "gil_check": a.gil_check}, f, indent=2)


if __name__ == "__main__":
    main()
