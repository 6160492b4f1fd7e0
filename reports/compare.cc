#include "reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "reports/sample_summary.h"

namespace cuvil::reports {

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kSame:
      return "same";
  }
  return "same";
}

Comparison compare_runs(const std::vector<BenchmarkSamples>& old_run,
                        const std::vector<BenchmarkSamples>& new_run,
                        const CompareOptions& options) {
  Comparison c;
  c.options = options;
  std::map<std::string, const BenchmarkSamples*> by_name;
  for (const BenchmarkSamples& b : new_run) by_name.emplace(b.name, &b);
  double log_ratio_sum = 0;
  size_t log_ratio_count = 0;
  for (const BenchmarkSamples& old_b : old_run) {
    const auto it = by_name.find(old_b.name);
    if (it == by_name.end()) {
      c.only_in_old.push_back(old_b.name);
      continue;
    }
    const BenchmarkSamples& new_b = *it->second;
    by_name.erase(it);
    BenchmarkComparison row;
    row.name = old_b.name;
    row.n_old = old_b.real_ns.size();
    row.n_new = new_b.real_ns.size();
    row.old_median_ns = summarize_samples(old_b.real_ns).median;
    row.new_median_ns = summarize_samples(new_b.real_ns).median;
    if (row.old_median_ns > 0) {
      row.change_pct = (row.new_median_ns / row.old_median_ns - 1) * 100;
      if (row.new_median_ns > 0) {
        log_ratio_sum += std::log(row.new_median_ns / row.old_median_ns);
        ++log_ratio_count;
      }
    }
    row.noisy = old_b.noisy || new_b.noisy;
    row.test = mann_whitney_u(old_b.real_ns, new_b.real_ns);
    row.significant = row.test.p_value < options.alpha;
    row.low_power = std::min(row.n_old, row.n_new) < kFewSamples ||
                    mann_whitney_min_p(row.n_old, row.n_new) >= options.alpha;
    if (row.significant && std::abs(row.change_pct) >= options.min_change_pct) {
      // The medians' direction names the verdict; a significant shift with equal medians
      // has change 0 and stays "same" through min_change_pct > 0.
      row.verdict = row.change_pct > 0 ? Verdict::kSlower : Verdict::kFaster;
    }
    c.rows.push_back(row);
  }
  for (const BenchmarkSamples& b : new_run) {
    if (by_name.count(b.name)) c.only_in_new.push_back(b.name);
  }
  if (log_ratio_count > 0) c.geomean_ratio = std::exp(log_ratio_sum / log_ratio_count);
  return c;
}

std::vector<const BenchmarkComparison*> regressions(const Comparison& comparison,
                                                    double max_slowdown_pct) {
  std::vector<const BenchmarkComparison*> out;
  for (const BenchmarkComparison& row : comparison.rows) {
    if (row.significant && row.change_pct > max_slowdown_pct) out.push_back(&row);
  }
  return out;
}

namespace {

std::string format(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof buf, fmt, args...);
  return buf;
}

// Milliseconds read well for the suites' rungs; tiny times switch to microseconds.
std::string time_text(double ns) {
  if (ns >= 1e5) return format("%.3f ms", ns * 1e-6);
  return format("%.3f us", ns * 1e-3);
}

}  // namespace

std::string format_comparison(const Comparison& c, const std::string& old_label,
                              const std::string& new_label) {
  std::string out = format(
      "comparing %s (old) -> %s (new): Mann-Whitney U, alpha %g, "
      "min change %g%%\n",
      old_label.c_str(), new_label.c_str(), c.options.alpha, c.options.min_change_pct);
  size_t width = 9;
  for (const auto& row : c.rows) width = std::max(width, row.name.size());
  const int w = static_cast<int>(width);
  out += format("%-*s %13s %13s %9s %9s %9s  %s\n", w, "benchmark", "old median", "new median",
                "change", "p-value", "n old/new", "verdict");
  for (const auto& row : c.rows) {
    std::string verdict = verdict_name(row.verdict);
    if (row.low_power) verdict += " (few samples)";
    if (row.noisy) verdict += " (noisy)";
    out += format("%-*s %13s %13s %+8.2f%% %9.4f %4zu/%-4zu  %s\n", w, row.name.c_str(),
                  time_text(row.old_median_ns).c_str(), time_text(row.new_median_ns).c_str(),
                  row.change_pct, row.test.p_value, row.n_old, row.n_new, verdict.c_str());
  }
  for (const auto& name : c.only_in_old) out += "only in old: " + name + "\n";
  for (const auto& name : c.only_in_new) out += "only in new: " + name + "\n";
  size_t faster = 0, slower = 0;
  for (const auto& row : c.rows) {
    faster += row.verdict == Verdict::kFaster;
    slower += row.verdict == Verdict::kSlower;
  }
  out += format(
      "geometric mean of new/old medians: %.4f (%+.2f%%) over %zu benchmark(s); "
      "%zu faster, %zu slower, %zu same\n",
      c.geomean_ratio, (c.geomean_ratio - 1) * 100, c.rows.size(), faster, slower,
      c.rows.size() - faster - slower);
  return out;
}

std::vector<std::string> comparison_warnings(const Comparison& c) {
  std::vector<std::string> few, noisy;
  for (const auto& row : c.rows) {
    if (row.low_power) few.push_back(row.name);
    if (row.noisy) noisy.push_back(row.name);
  }
  auto names = [](const std::vector<std::string>& list) {
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + list[i];
    return out;
  };
  std::vector<std::string> lines;
  if (!few.empty()) {
    lines.push_back(
        format("%s: fewer than %zu samples on a side, or too few to ever reach "
               "p < %g; the test has little power, so 'same' means 'not shown "
               "different' (measure more repetitions)",
               names(few).c_str(), kFewSamples, c.options.alpha));
  }
  if (!noisy.empty()) {
    lines.push_back(names(noisy) +
                    ": measured on a noisy machine (flagged in the run); verdicts may not repeat");
  }
  return lines;
}

}  // namespace cuvil::reports
