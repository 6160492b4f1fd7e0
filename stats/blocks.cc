#include "stats/blocks.h"

#include <algorithm>
#include <cmath>

#include "base/splitmix64.h"
#include "stats/order_statistics.h"

namespace cuvil::stats {

size_t run_block_count(size_t n) {
  const size_t blocks = std::min(kRunBlocks, n / kMinSamplesPerBlock);
  return blocks >= kMinRunBlocks ? blocks : 0;
}

BlockRange block_range(size_t n, size_t blocks, size_t i) {
  const size_t base = n / blocks, longer = n % blocks;
  return {i * base + std::min(i, longer), base + (i < longer ? 1 : 0)};
}

std::vector<double> block_medians(const std::vector<double>& samples, size_t blocks) {
  std::vector<double> out;
  if (blocks == 0 || blocks > samples.size()) return out;
  for (size_t i = 0; i < blocks; ++i) {
    const BlockRange b = block_range(samples.size(), blocks, i);
    const auto begin = samples.begin() + static_cast<std::ptrdiff_t>(b.begin);
    out.push_back(
        median_of(std::vector<double>(begin, begin + static_cast<std::ptrdiff_t>(b.size))));
  }
  return out;
}

double spread_pct(const std::vector<double>& medians) {
  if (medians.empty()) return 0;
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  return *lo > 0 ? (*hi / *lo - 1) * 100 : INFINITY;
}

namespace {

// How far the block medians sit from the median of all samples: the sum of |log ratio|. Every
// block counts, so a run whose machine wandered scores above one with a single block off by
// chance (the range, spread_pct, would not tell them apart).
double distance_from(const std::vector<double>& medians, double center) {
  double sum = 0;
  for (double m : medians) sum += std::fabs(std::log(m / center));
  return sum;
}

// Pettitt's change-point statistic on ranks: max over t of |2 * (sum of the first t ranks) -
// t * (n + 1)|, large when the run's early samples rank apart from its late ones (a neighbour
// started or stopped), wherever the change falls against the blocks' edges.
double change_point(const std::vector<double>& ranks) {
  const double n1 = static_cast<double>(ranks.size()) + 1;
  double sum = 0, best = 0;
  for (size_t t = 0; t + 1 < ranks.size(); ++t) {
    sum += ranks[t];
    best = std::max(best, std::fabs(2 * sum - static_cast<double>(t + 1) * n1));
  }
  return best;
}

// 1-based ranks, ties sharing their mean rank.
std::vector<double> ranks_of(const std::vector<double>& samples) {
  std::vector<size_t> order(samples.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return samples[a] < samples[b]; });
  std::vector<double> ranks(samples.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && samples[order[j + 1]] == samples[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) ranks[order[k]] = 0.5 * static_cast<double>(i + j) + 1;
    i = j + 1;
  }
  return ranks;
}

}  // namespace

BlockDrift block_drift(const std::vector<double>& samples, uint64_t seed) {
  BlockDrift d;
  d.blocks = run_block_count(samples.size());
  if (d.blocks == 0) return d;
  std::vector<double> values = samples;
  const std::vector<double> observed = block_medians(values, d.blocks);
  d.spread_pct = spread_pct(observed);
  if (!(*std::min_element(values.begin(), values.end()) > 0)) return d;  // no log of it
  const double center = median_of(values);
  std::vector<double> ranks = ranks_of(values);
  const double observed_distance = distance_from(observed, center);
  const double observed_change = change_point(ranks);
  SplitMix64 rng{seed};
  int distance_as_far = 1, change_as_far = 1;  // the observed order is one of the orders
  for (int i = 0; i < kDriftPermutations; ++i) {
    for (size_t j = values.size() - 1; j > 0; --j) {  // the same shuffle of values and ranks
      const size_t k = rng.below(j + 1);
      std::swap(values[j], values[k]);
      std::swap(ranks[j], ranks[k]);
    }
    distance_as_far += distance_from(block_medians(values, d.blocks), center) >= observed_distance;
    change_as_far += change_point(ranks) >= observed_change;
  }
  // Two statistics, so each p counts twice (Bonferroni).
  const double shuffles = kDriftPermutations + 1;
  d.p_value = std::min(1.0, 2 * std::min(distance_as_far, change_as_far) / shuffles);
  return d;
}

}  // namespace cuvil::stats
