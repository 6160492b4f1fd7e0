"""The PyTorch side of `cuvil-bench run --baseline torch`: loads a module, keeps PyTorch eager
and TorchScript-frozen variants of it, and runs them on request, timing each call itself (the
pipe's latency is not in the samples). The C++ harness (bench_suite/torch_baseline.cc) decides
how many samples to take and interleaves them with cuvil's.

Protocol: one JSON object per line on stdin, one reply per line on stdout.
  {"op": "load", "module": PATH | "builtin": SUITE, "weights_dir": D, "rung": {params},
   "scaled_down": bool (the suite's toy-size topology),
   "inputs": [{"path": .npy, "integer": bool}], "threads": N,
   "reserve_bytes": B (memory cuvil takes after the load; freezing must leave it),
   "dtype": "fp32" | "bf16" (module and floating inputs cast; variants get a "-bf16" suffix)}
      -> {"ok", "torch", "threads", "blas", "variants": [...], "unavailable": {variant: why}}
  {"op": "run", "variant": V, "count": K}   -> {"ok", "real_ns": [...], "cpu_ns": [...]}
  {"op": "outputs", "variant": V, "dir": D} -> {"ok", "files": [...]}
  {"op": "close"}
"""
import ctypes
import os
import sys
import time

# OpenBLAS picks its kernels from the CPU's model number; 0.3.21 does not know some recent ones
# (a Sapphire Rapids VM reads as "Prescott": SSE3 kernels, ~30 GFLOP/s instead of ~160). Before
# torch loads it, check what it chose and, where that is a generic fallback on a CPU with AVX-512
# or AVX2, start again with OPENBLAS_CORETYPE set, so the baseline is PyTorch at its best.
GENERIC_CORES = {"prescott", "core2", "katmai", "coppermine", "northwood", "penryn", "dunnington",
                 "nehalem", "atom", "banias"}
OPENBLAS_PATHS = ["/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0",
                  "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"]


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def openblas_core():
    for path in OPENBLAS_PATHS:
        if os.path.exists(path):
            try:
                lib = ctypes.CDLL(path)
                lib.openblas_get_corename.restype = ctypes.c_char_p
                return path, lib.openblas_get_corename().decode()
            except OSError:
                continue
    return None, None


BLAS_NOTE = ""
if "CUVIL_OPENBLAS_CHECKED" not in os.environ:
    path, core = openblas_core()
    os.environ["CUVIL_OPENBLAS_CHECKED"] = "1"
    if core and core.lower() in GENERIC_CORES and "OPENBLAS_CORETYPE" not in os.environ:
        flags = cpu_flags()
        forced = "SkylakeX" if "avx512f" in flags else "Haswell" if "avx2" in flags else ""
        if forced:
            os.environ["OPENBLAS_CORETYPE"] = forced
            os.environ["CUVIL_OPENBLAS_NOTE"] = f"OPENBLAS_CORETYPE={forced} (it detected {core})"
            os.execv(sys.executable, [sys.executable, "-u"] + sys.argv)
BLAS_NOTE = os.environ.get("CUVIL_OPENBLAS_NOTE", "")

import warnings  # noqa: E402

warnings.filterwarnings("ignore")
import numpy as np  # noqa: E402
import torch  # noqa: E402

import json_lines  # noqa: E402  (beside this script)


def available_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# Freezing inlines the weights as constants, a copy of them all (and optimize_for_inference
# converts the convolutions' again): made only with room for it and this much to spare.
FREEZE_HEADROOM = 1.25


def blas_description():
    """Which BLAS this process loaded, as PyTorch will use it."""
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                p = line.split()[-1]
                if "blas" in os.path.basename(p):
                    libs.add(os.path.realpath(p))
    except OSError:
        pass
    _, core = openblas_core()
    text = ", ".join(sorted(libs)) or "unknown"
    if core:
        text += f" (OpenBLAS core {core})"
    if BLAS_NOTE:
        text += f"; {BLAS_NOTE}"
    return text


class Baseline:
    def __init__(self):
        self.variants = {}
        self.unavailable = {}
        self.inputs = []

    def load(self, req):
        threads = int(req.get("threads", 1))
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass  # already set in this process
        self.inputs = []
        for spec in req["inputs"]:
            a = np.load(spec["path"])
            t = torch.from_numpy(np.ascontiguousarray(a))
            self.inputs.append(t.to(torch.int64) if spec.get("integer") else t.to(torch.float32))
        dtype = req.get("dtype", "fp32")
        if dtype not in ("fp32", "bf16"):
            raise ValueError(f"dtype: expected fp32 or bf16, got {dtype!r}")
        suffix = "" if dtype == "fp32" else "-" + dtype
        if dtype == "bf16":
            self.inputs = [t.to(torch.bfloat16) if t.is_floating_point() else t
                           for t in self.inputs]
        if req.get("builtin"):
            import torch_reference  # beside this script: the built-in suites' modules

            module = torch_reference.build(req["builtin"], req["weights_dir"], req.get("rung", {}),
                                           bool(req.get("scaled_down", False)))
        else:
            module = self._load_module(req["module"])
        if dtype == "bf16":
            module = module.to(torch.bfloat16)  # in place for an nn.Module: no fp32 copy stays
        with torch.no_grad():
            if isinstance(module, torch.jit.ScriptModule):
                self.unavailable["torch-eager"] = (
                    "the file is TorchScript; save the nn.Module with torch.save to time eager mode")
                scripted = module
            else:
                module.eval()
                self.variants["torch-eager"] = module
                scripted = torch.jit.trace(module, tuple(self.inputs), check_trace=False)
            weight_bytes = sum(t.numel() * t.element_size() for t in scripted.state_dict().values())
            room = available_bytes()
            if room is not None:
                room -= int(req.get("reserve_bytes", 0))  # what cuvil's plan takes after this
            if room is not None and weight_bytes * FREEZE_HEADROOM > room:
                self.unavailable["torch-script-frozen"] = (
                    f"not frozen: freezing copies the {weight_bytes / 1e9:.1f} GB of weights and "
                    f"{max(room, 0) / 1e9:.1f} GB of memory are left beside cuvil's plan; "
                    "torch-script is the traced module, sharing eager's weights")
                frozen = scripted
            else:
                try:
                    frozen = torch.jit.optimize_for_inference(torch.jit.freeze(scripted.eval()))
                except Exception as e:  # noqa: BLE001  (freezing is an optimisation: say why not)
                    self.unavailable["torch-script-frozen"] = f"freeze failed: {e}"
                    frozen = scripted
            self.variants["torch-script"] = frozen
            for name, f in self.variants.items():  # compile and warm the first call
                try:
                    f(*self.inputs)
                except RuntimeError as e:
                    if dtype == "fp32":
                        raise
                    raise ValueError(f"PyTorch cannot run this module in {dtype} ({name}): "
                                     f"{str(e).splitlines()[0]}") from None
        if suffix:
            self.variants = {name + suffix: f for name, f in self.variants.items()}
            self.unavailable = {name + suffix: why for name, why in self.unavailable.items()}
        return {"torch": torch.__version__, "threads": torch.get_num_threads(),
                "blas": blas_description(), "variants": sorted(self.variants),
                "unavailable": self.unavailable}

    @staticmethod
    def _load_module(path):
        try:
            return torch.jit.load(path, map_location="cpu")
        except Exception:  # noqa: BLE001  (not TorchScript: a pickled nn.Module)
            pass
        # A pickled module needs its class: look beside the file and in the working directory too.
        for d in (os.path.dirname(os.path.abspath(path)), os.getcwd()):
            if d not in sys.path:
                sys.path.append(d)
        try:
            m = torch.load(path, map_location="cpu")
        except (ModuleNotFoundError, AttributeError) as e:
            raise ValueError(f"{path}: cannot unpickle the module ({e}); its class must be importable "
                             "(PYTHONPATH), or save it as TorchScript with torch.jit.save") from None
        if not isinstance(m, torch.nn.Module):
            raise ValueError(f"{path} holds a {type(m).__name__}, not a torch.nn.Module "
                             "(save the module itself: torch.save(model, PATH))")
        return m

    def run(self, req):
        f = self.variants[req["variant"]]
        real, cpu = [], []
        with torch.no_grad():
            for _ in range(int(req.get("count", 1))):
                c0, t0 = time.process_time_ns(), time.perf_counter_ns()
                f(*self.inputs)
                t1, c1 = time.perf_counter_ns(), time.process_time_ns()
                real.append(t1 - t0)
                cpu.append(c1 - c0)
        return {"real_ns": real, "cpu_ns": cpu}

    def outputs(self, req):
        with torch.no_grad():
            out = self.variants[req["variant"]](*self.inputs)
        outs = out if isinstance(out, (tuple, list)) else [out]
        files = []
        for k, t in enumerate(outs):
            path = os.path.join(req["dir"], f"{req['variant']}_{k}.npy")
            np.save(path, t.detach().to(torch.float32).contiguous().numpy())
            files.append(path)
        return {"files": files}


def main():
    b = Baseline()
    json_lines.serve({"hello": lambda req: {"torch": torch.__version__}, "load": b.load,
                      "run": b.run, "outputs": b.outputs})


if __name__ == "__main__":
    main()
