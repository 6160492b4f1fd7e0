#include "gil_checker.h"

namespace cuvil::python {

namespace py = pybind11;

GilChecker::GilChecker(int steps, py::object hook, const std::vector<std::string>* names)
    : steps_(steps), hook_(std::move(hook)), names_(names) {}

void GilChecker::on_step_end(size_t step_index) {
  if (steps_ <= 0 || (step_index + 1) % static_cast<size_t>(steps_) != 0) return;
  ++checks_;
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  if (!hook_.is_none()) hook_(step_index, (*names_)[step_index]);
}

}  // namespace cuvil::python
