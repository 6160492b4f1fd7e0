#include "reports/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "reports/printable.h"
#include "stats/blocks.h"
#include "stats/order_statistics.h"

namespace cuvil::reports {

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::kFaster:
      return "faster";
    case Verdict::kSlower:
      return "slower";
    case Verdict::kSame:
      return "same";
    case Verdict::kNoisy:
      return "noisy";
    case Verdict::kInvalid:
      return "invalid";
  }
  return "same";
}

namespace {

// A median a ratio can be taken of.
bool valid_median(double ns) {
  return std::isfinite(ns) && ns > 0;
}

// Whether the runs' blocks show the row's change (see compare.h): their rank test reaches alpha
// where it can, and the change exceeds each run's own drift. Rows without blocks: yes.
bool blocks_resolve(const BenchmarkComparison& row, double alpha) {
  if (row.blocks_old == 0 || row.blocks_new == 0) return true;
  const bool rank_test_can_reach =
      stats::mann_whitney_min_p(row.blocks_old, row.blocks_new) < alpha;
  const bool ranks_agree = !rank_test_can_reach || row.blocks_p < alpha;
  // In log ratio, so that a speed-up and a slow-down of the same factor weigh the same.
  const double change = std::fabs(std::log(row.new_median_ns / row.old_median_ns));
  return ranks_agree && change > std::log1p(row.drift_pct / 100);
}

}  // namespace

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
    row.old_median_ns = stats::median_of(old_b.real_ns);
    row.new_median_ns = stats::median_of(new_b.real_ns);
    const bool valid = valid_median(row.old_median_ns) && valid_median(row.new_median_ns);
    if (valid) {
      row.change_pct = (row.new_median_ns / row.old_median_ns - 1) * 100;
      log_ratio_sum += std::log(row.new_median_ns / row.old_median_ns);
      ++log_ratio_count;
    } else {
      row.change_pct = std::numeric_limits<double>::quiet_NaN();
    }
    row.noisy = old_b.noisy || new_b.noisy;
    row.test = stats::mann_whitney_u(old_b.real_ns, new_b.real_ns);
    row.significant = row.test.p_value < options.alpha;
    row.low_power = std::min(row.n_old, row.n_new) < kFewSamples ||
                    stats::mann_whitney_min_p(row.n_old, row.n_new) >= options.alpha;
    if (options.within_run_blocks) {
      const size_t blocks_old = stats::run_block_count(row.n_old);
      const size_t blocks_new = stats::run_block_count(row.n_new);
      if (blocks_old > 0 && blocks_new > 0) {
        const std::vector<double> old_blocks = stats::block_medians(old_b.real_ns, blocks_old);
        const std::vector<double> new_blocks = stats::block_medians(new_b.real_ns, blocks_new);
        row.blocks_old = blocks_old;
        row.blocks_new = blocks_new;
        row.blocks_p = stats::mann_whitney_u(old_blocks, new_blocks).p_value;
        row.drift_pct = std::max(stats::spread_pct(old_blocks), stats::spread_pct(new_blocks));
      }
    }
    if (!valid) {
      row.verdict = Verdict::kInvalid;
    } else if (row.significant && std::abs(row.change_pct) >= options.min_change_pct) {
      // The medians' direction names the verdict; a significant shift with equal medians
      // has change 0 and stays "same" through min_change_pct > 0.
      row.verdict = !blocks_resolve(row, options.alpha) ? Verdict::kNoisy
                    : row.change_pct > 0                ? Verdict::kSlower
                                                        : Verdict::kFaster;
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
    if (row.verdict == Verdict::kInvalid || (row.significant && row.change_pct > max_slowdown_pct &&
                                             blocks_resolve(row, comparison.options.alpha))) {
      out.push_back(&row);
    }
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
    if (row.noisy && row.verdict != Verdict::kNoisy) verdict += " (noisy)";
    const std::string change =
        row.verdict == Verdict::kInvalid ? "n/a" : format("%+.2f%%", row.change_pct);
    out += format("%-*s %13s %13s %9s %9.4f %4zu/%-4zu  %s\n", w, row.name.c_str(),
                  time_text(row.old_median_ns).c_str(), time_text(row.new_median_ns).c_str(),
                  change.c_str(), row.test.p_value, row.n_old, row.n_new, verdict.c_str());
  }
  for (const auto& name : c.only_in_old) out += "only in old: " + name + "\n";
  for (const auto& name : c.only_in_new) out += "only in new: " + name + "\n";
  size_t faster = 0, slower = 0, unresolved = 0, invalid = 0;
  for (const auto& row : c.rows) {
    faster += row.verdict == Verdict::kFaster;
    slower += row.verdict == Verdict::kSlower;
    unresolved += row.verdict == Verdict::kNoisy;
    invalid += row.verdict == Verdict::kInvalid;
  }
  out += format(
      "geometric mean of new/old medians: %.4f (%+.2f%%) over %zu benchmark(s); "
      "%zu faster, %zu slower, %zu same",
      c.geomean_ratio, (c.geomean_ratio - 1) * 100, c.rows.size() - invalid, faster, slower,
      c.rows.size() - faster - slower - unresolved - invalid);
  if (unresolved) out += format(", %zu noisy", unresolved);
  if (invalid) out += format(", %zu invalid (a median that is not a positive time)", invalid);
  out += "\n";
  return out;
}

std::vector<std::string> comparison_warnings(const Comparison& c) {
  std::vector<std::string> few, noisy, invalid, unresolved;
  for (const auto& row : c.rows) {
    if (row.low_power) few.push_back(row.name);
    if (row.noisy) noisy.push_back(row.name);
    if (row.verdict == Verdict::kInvalid) invalid.push_back(row.name);
    if (row.verdict == Verdict::kNoisy) {
      unresolved.push_back(
          format("%s (%+.2f%%; the runs drifted %.1f%% by themselves, blocks p = "
                 "%.3g)",
                 printable(row.name).c_str(), row.change_pct, row.drift_pct, row.blocks_p));
    }
  }
  auto names = [](const std::vector<std::string>& list) {
    std::string out;
    for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + printable(list[i]);
    return out;
  };
  std::vector<std::string> lines;
  if (!invalid.empty()) {
    lines.push_back(names(invalid) +
                    ": a median is not a positive time (a broken measurement); no verdict");
  }
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
  if (!unresolved.empty()) {
    std::string list;
    for (size_t i = 0; i < unresolved.size(); ++i) list += (i ? ", " : "") + unresolved[i];
    lines.push_back(list +
                    ": the change is within what each run's own samples drifted over time (or "
                    "their blocks disagree), so these two runs cannot tell; no verdict. Run the "
                    "two builds alternately (old, new, old, new, ...) and judge those runs with "
                    "cuvil-bench confirm");
  }
  return lines;
}

}  // namespace cuvil::reports
