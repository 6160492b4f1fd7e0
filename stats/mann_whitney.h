// The two-sided Mann-Whitney U test (Wilcoxon rank-sum): do two samples come from one
// distribution? Rank-based, so it suits timings, whose noise is skewed and heavy-tailed.
#pragma once

#include <cstddef>
#include <vector>

namespace cuvil::stats {

struct MannWhitneyResult {
  double u = 0;          // U of the first sample: pairs (a, b) with a > b, ties counting 1/2
  double p_value = 1;    // two-sided
  double p_greater = 1;  // one-sided: P(U >= u) under the null, small when a tends above b
  bool exact = false;    // from the exact null distribution rather than the normal approximation
};

// Samples this small or smaller (both sides) and free of ties get the exact distribution;
// larger ones, or any ties, get the normal approximation with tie and continuity corrections.
constexpr size_t kMannWhitneyExactMaxN = 50;

// Either sample empty: U = 0, p = 1 (no evidence either way).
MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b);

// The smallest two-sided p-value any data can give with these sizes (all of one sample below
// all of the other): when it is not below alpha, the test cannot call a difference at all.
double mann_whitney_min_p(size_t n1, size_t n2);
// The same for the one-sided p_greater: 1 / C(n1 + n2, n1).
double mann_whitney_min_p_greater(size_t n1, size_t n2);

}  // namespace cuvil::stats
