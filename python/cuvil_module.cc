// cuvil._cuvil: the C++ half of the `cuvil` Python module (python/cuvil/ is the rest). A
// Session wraps bench::ModelSession: compiled once, called from any number of Python threads at
// once, each call on its own execution context with the GIL released for the plan's execution.
// cuvil's user errors surface as cuvil.CuvilError (a ValueError); nothing here aborts the
// interpreter on a user mistake.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "bench_suite/measure.h"
#include "bench_suite/model_session.h"
#include "gil_checker.h"
#include "stats/summary.h"

namespace py = pybind11;

namespace cuvil::python {

namespace {

using bench::ModelSession;

py::tuple shape_tuple(const ir::Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

py::list tensor_infos(const std::vector<bench::TensorInfo>& infos) {
  py::list out;
  for (const bench::TensorInfo& t : infos) {
    out.append(py::make_tuple(t.name, shape_tuple(t.shape),
                              t.dtype == ir::DType::i32 ? "int64" : "float32"));
  }
  return out;
}

// An output tensor handed to numpy without a copy: the capsule owns the floats.
py::array to_numpy(ir::Tensor&& t) {
  auto* data = new std::vector<float>(std::move(t.data));
  py::capsule owner(data, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return py::array_t<float>(t.shape, data->data(), owner);
}

bench::MeasureOptions measure_options(const py::dict& o) {
  bench::MeasureOptions m;
  for (const auto& [k, v] : o) {
    const std::string key = py::str(k);
    if (key == "warmup") {
      m.warmup_iterations = v.cast<int>();
    } else if (key == "warmup_time") {
      m.warmup_time_s = v.cast<double>();
    } else if (key == "min_samples") {
      m.min_samples = v.cast<int>();
    } else if (key == "max_samples") {
      m.max_samples = v.cast<int>();
    } else if (key == "min_time") {
      m.min_time_s = v.cast<double>();
    } else if (key == "max_noise") {
      m.max_noise = v.cast<double>() / 100.0;  // percent, as cuvil-bench run --max-noise
    } else if (key == "timeout") {
      m.timeout_s = v.cast<double>();
    } else {
      throw UserError("benchmark: unknown option '" + key +
                      "' (warmup, warmup_time, min_samples, max_samples, min_time, max_noise, "
                      "timeout)");
    }
  }
  m.validate();
  return m;
}

py::dict measurement_dict(const bench::Measurement& m) {
  const stats::Summary s = stats::summarize(m.real_ns);
  py::dict d;
  d["count"] = s.count;
  d["median_ms"] = s.median * 1e-6;
  d["mean_ms"] = s.mean * 1e-6;
  d["stddev_ms"] = s.stddev * 1e-6;
  d["cv"] = s.cv;
  d["min_ms"] = s.min * 1e-6;
  d["max_ms"] = s.max * 1e-6;
  d["p50_ms"] = s.p50 * 1e-6;
  d["p90_ms"] = s.p90 * 1e-6;
  d["p95_ms"] = s.p95 * 1e-6;
  d["p99_ms"] = s.p99 * 1e-6;
  d["p99.9_ms"] = s.p999 * 1e-6;
  d["median_ci_ms"] = py::make_tuple(s.median_ci.low * 1e-6, s.median_ci.high * 1e-6);
  d["noise"] = m.noise;
  d["noisy"] = m.noisy;
  d["drift_pct"] = m.drift_pct;
  d["stop_reason"] = bench::to_string(m.stop_reason);
  d["samples_ns"] = m.real_ns;
  d["warmup_ns"] = m.warmup_real_ns;
  if (m.turns > 0) {  // measured in turns: how many, and how many began with threads still busy
    d["turns"] = m.turns;
    d["unsettled_turns"] = m.unsettled_turns;
  }
  return d;
}

class Session {
 public:
  explicit Session(const bench::SessionSpec& spec)
      : s_(std::make_unique<ModelSession>(spec)), step_names_(s_->step_names()) {}

  ModelSession& session() { return *s_; }

  // arrays: C-contiguous float32 numpy arrays of the inputs' shapes (the Python layer converts
  // and checks; this re-checks what the pointers rely on).
  py::list run(const py::list& arrays, const py::object& hook) {
    const auto& infos = s_->inputs();
    if (arrays.size() != infos.size()) {
      throw UserError(s_->name() + ": expected " + std::to_string(infos.size()) +
                      " input arrays, got " + std::to_string(arrays.size()));
    }
    std::vector<py::array_t<float>> keep;
    std::vector<const float*> ptrs;
    for (size_t i = 0; i < infos.size(); ++i) {
      py::array a = arrays[i].cast<py::array>();
      if (!py::isinstance<py::array_t<float>>(a) || !(a.flags() & py::array::c_style)) {
        throw UserError("input '" + infos[i].name + "': expected a C-contiguous float32 array");
      }
      ir::Shape shape(a.shape(), a.shape() + a.ndim());
      if (shape != infos[i].shape) {
        throw UserError("input '" + infos[i].name + "': shape " + ir::to_string(shape) +
                        " given, " + ir::to_string(infos[i].shape) + " expected");
      }
      keep.push_back(a.cast<py::array_t<float>>());
      ptrs.push_back(keep.back().data());
    }
    std::vector<ir::Tensor> out;
    {
      GilChecker checker(s_->gil_check_steps(), hook, &step_names_);
      py::gil_scoped_release release;
      out = s_->run(ptrs, &checker);
    }
    py::list result;
    for (ir::Tensor& t : out) result.append(to_numpy(std::move(t)));
    return result;
  }

  py::dict verify(uint64_t seed) {
    bench::VerifyResult r;
    {
      py::gil_scoped_release release;
      r = s_->verify(seed);
    }
    py::dict d;
    py::dict outputs;
    py::list ill_conditioned;
    for (const bench::OutputCheck& o : r.outputs) {
      outputs[py::str(o.name)] = o.max_relative_error;
      if (o.ill_conditioned) ill_conditioned.append(py::str(o.name));
    }
    d["ok"] = r.ok();
    d["tolerance"] = r.tolerance;
    d["max_relative_error"] = outputs;
    d["ill_conditioned"] = ill_conditioned;
    return d;
  }

  // The harness cuvil-bench run uses (bench::measure) on random inputs.
  py::dict benchmark(const py::dict& options, uint64_t seed) {
    const bench::MeasureOptions m = measure_options(options);
    const std::vector<ir::Tensor> inputs = s_->random_inputs(seed);
    bench::Measurement result;
    GilChecker checker(s_->gil_check_steps(), py::none(), &step_names_);
    {
      py::gil_scoped_release release;
      std::vector<const float*> ptrs;
      for (const ir::Tensor& t : inputs) ptrs.push_back(t.data.data());
      result = bench::measure(bench::timed_sampler([&] { s_->run(ptrs, &checker); }), m);
    }
    py::dict d = measurement_dict(result);
    d["gil_checks"] = checker.checks();
    return d;
  }

 private:
  std::unique_ptr<ModelSession> s_;
  std::vector<std::string> step_names_;
};

// Workloads measured in turns by the harness (bench::measure_interleaved): a Session (its call
// runs without the GIL) or any Python callable (called with the GIL, e.g. a PyTorch module).
py::list measure_interleaved(const py::list& workloads, const py::dict& options, uint64_t seed) {
  const bench::MeasureOptions m = measure_options(options);
  std::vector<bench::Sampler> samplers;
  std::vector<std::vector<ir::Tensor>> inputs(workloads.size());
  std::vector<std::vector<const float*>> ptrs(workloads.size());
  for (size_t i = 0; i < workloads.size(); ++i) {
    py::object w = workloads[i];
    if (py::isinstance<Session>(w)) {
      Session* s = w.cast<Session*>();
      inputs[i] = s->session().random_inputs(seed);
      for (const ir::Tensor& t : inputs[i]) ptrs[i].push_back(t.data.data());
      samplers.push_back(bench::timed_sampler([s, &p = ptrs[i]] { s->session().run(p); }));
    } else {
      if (!PyCallable_Check(w.ptr()))
        throw UserError("measure_interleaved: workload " + std::to_string(i) + " is not callable");
      samplers.push_back(bench::timed_sampler([w] {
        py::gil_scoped_acquire gil;
        w();
      }));
    }
  }
  std::vector<bench::Measurement> results;
  {
    py::gil_scoped_release release;
    results = bench::measure_interleaved(samplers, m);
  }
  py::list out;
  for (const bench::Measurement& r : results) out.append(measurement_dict(r));
  return out;
}

}  // namespace

}  // namespace cuvil::python

PYBIND11_MODULE(_cuvil, m) {
  using namespace cuvil::python;
  m.doc() = "cuvil's C++ core: compiled sessions, the measurement harness";
  static py::exception<cuvil::UserError> error(m, "CuvilError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const cuvil::UserError& e) {
      PyErr_SetString(error.ptr(), e.what());
    } catch (const std::bad_alloc&) {
      PyErr_SetString(PyExc_MemoryError, "cuvil: out of memory");
    }
  });

  py::class_<Session>(m, "Session")
      .def(py::init([](const std::string& suite, const std::string& model,
                       const std::vector<std::string>& inputs, const std::vector<int64_t>& batch,
                       const std::string& rung, const std::string& config,
                       const std::string& opt_level, int threads, const std::string& target) {
             cuvil::bench::SessionSpec spec;
             spec.workload.suite = suite;
             spec.workload.model = model;
             spec.workload.inputs = inputs;
             spec.workload.batch = batch;
             spec.rung = rung;
             spec.config = config;
             spec.opt_level = opt_level;
             spec.threads = threads;
             spec.target = target;
             py::gil_scoped_release release;  // compiling a large model takes a while
             return std::make_unique<Session>(spec);
           }),
           py::arg("suite") = "", py::arg("model") = "",
           py::arg("inputs") = std::vector<std::string>{},
           py::arg("batch") = std::vector<int64_t>{}, py::arg("rung") = "", py::arg("config") = "",
           py::arg("opt_level") = "O2", py::arg("threads") = 0, py::arg("target") = "cpu")
      .def_property_readonly("name", [](Session& s) { return s.session().name(); })
      .def_property_readonly("inputs",
                             [](Session& s) { return tensor_infos(s.session().inputs()); })
      .def_property_readonly("outputs",
                             [](Session& s) { return tensor_infos(s.session().outputs()); })
      .def_property_readonly("config", [](Session& s) { return s.session().config_text(); })
      .def_property_readonly("config_path", [](Session& s) { return s.session().config_path(); })
      .def_property_readonly("threads", [](Session& s) { return s.session().threads(); })
      .def_property_readonly("gil_check_steps",
                             [](Session& s) { return s.session().gil_check_steps(); })
      .def_property_readonly("tolerance", [](Session& s) { return s.session().tolerance(); })
      .def_property_readonly("contexts", [](Session& s) { return s.session().contexts(); })
      .def_property_readonly("closed", [](Session& s) { return s.session().closed(); })
      .def("plan_summary", [](Session& s) { return s.session().plan_summary(); })
      .def("run", &Session::run, py::arg("arrays"), py::arg("hook") = py::none())
      .def("verify", &Session::verify, py::arg("seed") = 1)
      .def("benchmark", &Session::benchmark, py::arg("options") = py::dict(), py::arg("seed") = 1)
      .def("close", [](Session& s) { s.session().close(); });

  m.def("measure_interleaved", &measure_interleaved, py::arg("workloads"),
        py::arg("options") = py::dict(), py::arg("seed") = 1);
}
