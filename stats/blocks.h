// Contiguous blocks of one run's samples, the units of evidence when the machine drifts. Samples
// measured one after another share the machine's state of the moment (its clock, a neighbour's
// load), so they are not independent: an interval or test that treats them as independent is
// too sure of itself once that state changes during a run or between runs. Cut in the order
// measured, each block holds one stretch of time, and the blocks' medians show the drift.
// Used by the harness (a run that drifted is NOISY, bench_suite/stopping_rule.h) and by
// `cuvil-bench compare` (a change within the runs' own drift gets no verdict, reports/compare.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cuvil::stats {

// Up to kRunBlocks blocks of at least kMinSamplesPerBlock samples; fewer than kMinRunBlocks (the
// fewest whose rank test can reach p < 0.05 between two runs) is no cut at all.
inline constexpr size_t kRunBlocks = 8;
inline constexpr size_t kMinSamplesPerBlock = 3;
inline constexpr size_t kMinRunBlocks = 4;
// Shuffles of the samples against which block_drift judges the observed spread.
inline constexpr int kDriftPermutations = 400;

// The number of blocks n samples are cut into: 0 when too few.
size_t run_block_count(size_t n);

// Where block i of n samples cut into `blocks` near-equal contiguous parts begins, and its
// length (the first n % blocks parts one sample longer).
struct BlockRange {
  size_t begin = 0, size = 0;
};
BlockRange block_range(size_t n, size_t blocks, size_t i);

// Medians of the `blocks` parts of `samples` (block_range) in their order. Empty when blocks is 0
// or exceeds the sample count.
std::vector<double> block_medians(const std::vector<double>& samples, size_t blocks);

// How far apart medians are: max / min - 1, in percent (0 when empty; infinite when the smallest
// is not positive).
double spread_pct(const std::vector<double>& medians);

struct BlockDrift {
  size_t blocks = 0;      // run_block_count(samples); 0: too few samples to judge
  double spread_pct = 0;  // of the block medians
  // Permutation test of the time order: against shuffles of the same samples, how often the
  // block medians lie at least as far from the median of all samples (sum of |log ratio|: a
  // machine that wandered), and how often Pettitt's rank statistic for one change point is at
  // least as large (a neighbour that started or stopped); the smaller share, doubled for the
  // two tries, the observed order counting as one shuffle. Small when the machine drifted; 1 when
  // not cut (or a time is not positive).
  double p_value = 1;
};

// The drift of a run's samples, with kDriftPermutations shuffles from a generator seeded by
// `seed` (so the same samples always give the same p).
BlockDrift block_drift(const std::vector<double>& samples, uint64_t seed = 1);

}  // namespace cuvil::stats
