// Comparing two runs benchmark by benchmark: the change of the median, a Mann-Whitney U test
// on the raw samples, and a verdict. Times are lower-is-better.
//
// Samples measured one after another share the machine's state of the moment (its clock, a
// neighbour's load), so the samples of one run are not independent, and a drift of the machine
// between two runs makes the pooled test significant at any sample count: two runs of the same
// build on a busy host come out "7% faster, p = 0.0000". So each run's samples, in the order
// measured, are also cut into contiguous blocks (stats/blocks.h), and a change gets a verdict only
// when the blocks show it too: the rank test of the old blocks' medians against the new ones'
// reaches alpha, and the change exceeds the drift each run showed by itself (the spread of its
// block medians). A significant change that fails either is "noisy": this pair of runs cannot
// resolve it; measure the two builds in alternation (`cuvil-bench confirm`).
#pragma once

#include <string>
#include <vector>

#include "reports/run_document.h"
#include "stats/mann_whitney.h"

namespace cuvil::reports {

struct CompareOptions {
  double alpha = 0.05;  // significance level of the two-sided test
  // A significant change smaller than this (in %) is still "same": with thousands of samples
  // the test detects differences far below what matters or what the machine can repeat.
  double min_change_pct = 1.0;
  // Judge the change against blocks of each run's samples (above). Off for samples that pool
  // several runs, whose spread between runs the caller judges itself (the dashboard's baseline).
  bool within_run_blocks = true;
};

// kInvalid: a median is zero, negative or not finite, so no ratio of medians means anything (a
// broken measurement, never "same"). kNoisy: the pooled samples differ significantly by at least
// the minimum change, but the runs' blocks do not resolve it.
enum class Verdict { kFaster, kSlower, kSame, kNoisy, kInvalid };
const char* verdict_name(Verdict verdict);

// Below this many samples on either side the test has little power; the row says so.
constexpr size_t kFewSamples = 5;

struct BenchmarkComparison {
  std::string name;
  size_t n_old = 0, n_new = 0;
  double old_median_ns = 0, new_median_ns = 0;
  double change_pct = 0;  // (new / old - 1) * 100: positive is slower; NaN when kInvalid
  stats::MannWhitneyResult test;
  bool significant = false;  // p < alpha
  bool low_power = false;    // too few samples to trust, or too few to ever reach alpha
  bool noisy = false;        // either run flagged this benchmark's measurement as noisy
  // Blocks of each run's samples (0: not cut, stats::run_block_count), the two-sided rank test of
  // their medians, and the larger of the two runs' drifts: max / min of its block medians - 1,
  // in percent.
  size_t blocks_old = 0, blocks_new = 0;
  double blocks_p = 1;
  double drift_pct = 0;
  Verdict verdict = Verdict::kSame;
};

struct Comparison {
  std::vector<BenchmarkComparison> rows;  // in the old run's order
  std::vector<std::string> only_in_old, only_in_new;
  // Geometric mean of new/old median ratios over the rows that are not kInvalid (1 when there
  // are none): below 1 the new run is faster overall.
  double geomean_ratio = 1;
  CompareOptions options;
};

Comparison compare_runs(const std::vector<BenchmarkSamples>& old_run,
                        const std::vector<BenchmarkSamples>& new_run,
                        const CompareOptions& options);

// Benchmarks significantly (p < alpha) slower by more than max_slowdown_pct, whatever
// min_change_pct says: the CI gate's own threshold decides. kInvalid rows fail the gate too; a
// slowdown the runs' blocks do not resolve does not (comparison_warnings names it).
std::vector<const BenchmarkComparison*> regressions(const Comparison& comparison,
                                                    double max_slowdown_pct);

// The comparison as a terminal table with the unmatched benchmarks and the geometric mean.
std::string format_comparison(const Comparison& comparison, const std::string& old_label,
                              const std::string& new_label);

// One line per caveat the reader must see (too few samples, noisy measurements); empty when
// there is none.
std::vector<std::string> comparison_warnings(const Comparison& comparison);

}  // namespace cuvil::reports
