"""The Python scenario of `cuvil-bench tune --scenario python` (tuner/python_scenario.cc): one
trial's rung compiled through the `cuvil` module with the trial's .cuvilpass, called by
`callers` Python threads at once while an application thread runs pure Python beside them.
Each call's latency is one harness sample, so the GIL's cost shows in the objective: every
python-binding.gil_check steps a call waits for the GIL, which the application thread holds for
up to the switch interval.

Protocol: one JSON object per line on stdin, one reply per line on stdout.
  {"op": "load", "model": "suite/rung", "config": PATH, "threads": N, "callers": P}
      -> {"ok", "gil_check_steps", "solo_rate"}   (the callers and the application thread start)
  {"op": "sample"}  -> {"ok", "real_ns", "cpu_ns"}   the next finished call, oldest first
  {"op": "stop"}    -> {"ok", "calls", "gil_free"}   the application thread's rate while the model
                                                      ran, over its rate alone
  {"op": "close"}
"""
import queue
import threading
import time

import numpy as np

import cuvil
import json_lines  # beside this script

SOLO_WINDOW_S = 0.3
SAMPLE_TIMEOUT_S = 600


def count_for(seconds, stop=None):
    """Pure-Python work: increments per second over `seconds` (or until `stop` is set)."""
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + seconds
    while True:
        for _ in range(1000):
            n += 1
        now = time.perf_counter()
        if now >= deadline or (stop is not None and stop.is_set()):
            return n / (now - t0)


def random_inputs(model):
    rng = np.random.default_rng(1)
    arrays = []
    for spec in model.inputs:
        if spec.dtype == "float32":
            arrays.append(rng.standard_normal(spec.shape).astype(np.float32))
        else:
            arrays.append(np.zeros(spec.shape, dtype=np.int64))  # id 0 is valid for every table
    return arrays


class Scenario:
    def __init__(self):
        self.model = None
        self.latencies = queue.Queue()
        self.stop_event = threading.Event()
        self.threads = []
        self.calls = 0
        self.app_rate = [0.0]
        self.solo_rate = 0.0

    def load(self, req):
        self.model = cuvil.compile(req["model"], config=req["config"], threads=int(req["threads"]))
        inputs = random_inputs(self.model)
        self.model(*inputs)  # first call outside the samples (arena, first-run bookkeeping)
        self.solo_rate = count_for(SOLO_WINDOW_S)

        def caller():
            while not self.stop_event.is_set():
                t0 = time.perf_counter_ns()
                self.model(*inputs)
                self.latencies.put(time.perf_counter_ns() - t0)

        def application():
            self.app_rate[0] = count_for(1e9, self.stop_event)

        self.threads = [threading.Thread(target=caller) for _ in range(int(req["callers"]))]
        self.threads.append(threading.Thread(target=application))
        self.started = time.perf_counter()
        for t in self.threads:
            t.start()
        return {"gil_check_steps": self.model._session.gil_check_steps, "solo_rate": self.solo_rate}

    def sample(self):
        ns = self.latencies.get(timeout=SAMPLE_TIMEOUT_S)
        self.calls += 1
        return {"real_ns": ns, "cpu_ns": 0}

    def stop(self):
        self.stop_event.set()
        for t in self.threads:
            t.join()
        return {"calls": self.calls,
                "gil_free": self.app_rate[0] / self.solo_rate if self.solo_rate > 0 else None}


def main():
    s = Scenario()
    try:
        json_lines.serve({"load": s.load, "sample": lambda req: s.sample(),
                          "stop": lambda req: s.stop()})
    finally:
        s.stop_event.set()


if __name__ == "__main__":
    main()
