#include "tuner/sensitivity.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/error.h"

namespace cuvil::tuner {

namespace {

// Significant at 5% and at least 1% apart (the verdict rule of `cuvil-bench compare`).
const char* verdict(const TimeRatio& r) {
  if (r.p_value >= 0.05 || std::fabs(r.ratio - 1) < 0.01) return "same";
  return r.ratio > 1 ? "slower" : "faster";
}

void add_int_moves(const Dimension& d, const nlohmann::json& best, int64_t v,
                   std::vector<std::pair<std::string, int64_t>>& out) {
  int64_t up = v, down = v;
  if (!d.multiple_of.empty()) {
    const int64_t base = std::max<int64_t>(1, best.value(d.multiple_of, int64_t{1}));
    up = v + base;
    down = v - base;
    // Off the grid of `base` in range: no move (the sampler never produces it either).
    if (down < std::max<int64_t>(d.int_min, base * d.factor_min)) down = v;
    if (up > std::min(d.int_max, base * d.factor_max)) up = v;
  } else if (d.power_of_two || d.log_scale) {
    up = v * 2;
    down = v / 2;
  } else {
    up = v + d.step;
    down = v - d.step;
  }
  up = std::clamp(up, d.int_min, d.int_max);
  down = std::clamp(down, d.int_min, d.int_max);
  if (up != v) out.push_back({"up", up});
  if (down != v && down != up) out.push_back({"down", down});
}

void add_real_moves(const Dimension& d, double v,
                    std::vector<std::pair<std::string, double>>& out) {
  double up = v, down = v;
  if (d.log_scale) {
    up = v * 2;
    down = v / 2;
  } else {
    up = v + (d.real_max - d.real_min) / 10;
    down = v - (d.real_max - d.real_min) / 10;
  }
  up = std::clamp(up, d.real_min, d.real_max);
  down = std::clamp(down, d.real_min, d.real_max);
  if (up != v) out.push_back({"up", up});
  if (down != v && down != up) out.push_back({"down", down});
}

}  // namespace

std::vector<Neighbour> one_step_neighbours(const SearchSpace& space, const nlohmann::json& best) {
  std::vector<Neighbour> out;
  const nlohmann::json defaults = default_values(space);
  for (const Dimension* d : space.searched()) {
    if (!d->condition.empty() && !best.value(d->condition, true)) continue;  // its pass is off
    const nlohmann::json from = best.contains(d->name) ? best[d->name] : defaults[d->name];
    auto add = [&](const std::string& move, const nlohmann::json& to) {
      Neighbour n{d->name, move, from, to, best};
      n.values[d->name] = to;
      out.push_back(std::move(n));
    };
    switch (d->kind) {
      case Dimension::Kind::boolean:
        add("flip", !from.get<bool>());
        break;
      case Dimension::Kind::choice:
        for (const std::string& c : d->choices) {
          if (c != from.get<std::string>()) add("other", c);
        }
        break;
      case Dimension::Kind::integer: {
        std::vector<std::pair<std::string, int64_t>> moves;
        add_int_moves(*d, best, from.get<int64_t>(), moves);
        for (const auto& [move, v] : moves) add(move, v);
        break;
      }
      case Dimension::Kind::real: {
        std::vector<std::pair<std::string, double>> moves;
        add_real_moves(*d, from.get<double>(), moves);
        for (const auto& [move, v] : moves) add(move, v);
        break;
      }
    }
  }
  return out;
}

std::vector<SensitivityRow> sensitivity_sweep(
    const SearchSpace& space, const nlohmann::json& best, const SideBySideOptions& options,
    const std::function<void(const SensitivityRow&, size_t, size_t)>& progress) {
  const passes::PipelineConfig best_config = config_from_values(space, best, options.suite.name);
  const std::vector<Neighbour> neighbours = one_step_neighbours(space, best);
  std::vector<SensitivityRow> rows;
  for (size_t i = 0; i < neighbours.size(); ++i) {
    SensitivityRow row;
    row.neighbour = neighbours[i];
    try {
      const passes::PipelineConfig config =
          config_from_values(space, row.neighbour.values, options.suite.name);
      const SideBySideResult r = measure_side_by_side_isolated({best_config, config}, options);
      if (!r.failure[0].empty()) {
        row.failure = "the best configuration failed: " + r.failure[0];
      } else if (!r.failure[1].empty()) {
        row.failure = r.failure[1];
      } else {
        row.ratio = time_ratio(r.rungs[0], r.rungs[1], 1 + i);
      }
    } catch (const UserError& e) {
      row.failure = std::string("invalid configuration: ") + e.what();
    }
    rows.push_back(row);
    if (progress) progress(rows.back(), i, neighbours.size());
  }
  return rows;
}

nlohmann::json sensitivity_to_json(const std::vector<SensitivityRow>& rows) {
  nlohmann::json out = nlohmann::json::array();
  for (const SensitivityRow& r : rows) {
    nlohmann::json j = {{"param", r.neighbour.param},
                        {"move", r.neighbour.move},
                        {"from", r.neighbour.from},
                        {"to", r.neighbour.to}};
    if (!r.failure.empty()) {
      j["failure"] = r.failure;
    } else {
      j["time_ratio"] = r.ratio.ratio;
      j["ci95"] = {r.ratio.low, r.ratio.high};
      j["p_value"] = r.ratio.p_value;
      j["verdict"] = verdict(r.ratio);
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::string format_sensitivity(const std::vector<SensitivityRow>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof(line), "%-36s %-6s %-28s %8s %17s %8s %s\n", "parameter", "move",
                "best -> here", "time", "95% CI", "p", "verdict");
  out += line;
  for (const SensitivityRow& r : rows) {
    const std::string change = value_text(r.neighbour.from) + " -> " + value_text(r.neighbour.to);
    if (!r.failure.empty()) {
      std::snprintf(line, sizeof(line), "%-36s %-6s %-28s %8s %17s %8s failed: %s\n",
                    r.neighbour.param.c_str(), r.neighbour.move.c_str(), change.c_str(), "-", "-",
                    "-", r.failure.c_str());
    } else {
      char ci[48];
      std::snprintf(ci, sizeof(ci), "%.3f..%.3f", r.ratio.low, r.ratio.high);
      std::snprintf(line, sizeof(line), "%-36s %-6s %-28s %7.3fx %17s %8.2g %s\n",
                    r.neighbour.param.c_str(), r.neighbour.move.c_str(), change.c_str(),
                    r.ratio.ratio, ci, r.ratio.p_value, verdict(r.ratio));
    }
    out += line;
  }
  return out;
}

}  // namespace cuvil::tuner
