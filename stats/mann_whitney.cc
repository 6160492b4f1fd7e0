#include "stats/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace cuvil::stats {

namespace {

// Number of orderings of m a's and n b's with each value of U, u = 0 .. m*n, by the recurrence
// c(m, n, u) = c(m-1, n, u-n) + c(m, n-1, u) (the largest element is an a or a b). Only sums,
// so no cancellation; doubles hold C(100, 50) ~ 1e29 without overflow.
std::vector<double> u_counts(size_t m, size_t n) {
  // row[j] holds the distribution for (i, j) while sweeping i = 0 .. m.
  std::vector<std::vector<double>> row(n + 1, std::vector<double>{1.0});
  for (size_t i = 1; i <= m; ++i) {
    std::vector<std::vector<double>> next(n + 1);
    next[0] = {1.0};  // (i, 0): only U = 0
    for (size_t j = 1; j <= n; ++j) {
      std::vector<double> c(i * j + 1, 0.0);
      const std::vector<double>& a_last = row[j];  // (i-1, j), shifted by j
      for (size_t u = 0; u < a_last.size(); ++u) c[u + j] += a_last[u];
      const std::vector<double>& b_last = next[j - 1];  // (i, j-1)
      for (size_t u = 0; u < b_last.size(); ++u) c[u] += b_last[u];
      next[j] = std::move(c);
    }
    row = std::move(next);
  }
  return row[n];
}

struct ExactP {
  double two_sided, greater;
};

ExactP exact_p(double u, size_t m, size_t n) {
  const std::vector<double> counts = u_counts(m, n);
  const size_t k = static_cast<size_t>(std::llround(u));
  double total = 0, below = 0, above = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    total += counts[i];
    if (i <= k) below += counts[i];
    if (i >= k) above += counts[i];
  }
  return {std::min(1.0, 2.0 * std::min(below, above) / total), above / total};
}

// log C(n1 + n2, n1)
double log_choose(size_t n1, size_t n2) {
  return std::lgamma(static_cast<double>(n1 + n2 + 1)) - std::lgamma(static_cast<double>(n1 + 1)) -
         std::lgamma(static_cast<double>(n2 + 1));
}

}  // namespace

MannWhitneyResult mann_whitney_u(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitneyResult result;
  const size_t n1 = a.size(), n2 = b.size();
  if (n1 == 0 || n2 == 0) return result;

  // Midranks of the pooled sample; tie groups feed the variance correction.
  std::vector<std::pair<double, bool>> pooled;  // (value, from a)
  pooled.reserve(n1 + n2);
  for (double x : a) pooled.emplace_back(x, true);
  for (double x : b) pooled.emplace_back(x, false);
  std::sort(pooled.begin(), pooled.end(),
            [](const auto& l, const auto& r) { return l.first < r.first; });
  const size_t n = pooled.size();
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double midrank = 0.5 * static_cast<double>(i + 1 + j);  // ranks i+1 .. j
    const double t = static_cast<double>(j - i);
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    for (size_t k = i; k < j; ++k) {
      if (pooled[k].second) rank_sum_a += midrank;
    }
    i = j;
  }
  const double dn1 = static_cast<double>(n1), dn2 = static_cast<double>(n2);
  const double dn = static_cast<double>(n);
  result.u = rank_sum_a - dn1 * (dn1 + 1) / 2;

  if (!ties && n1 <= kMannWhitneyExactMaxN && n2 <= kMannWhitneyExactMaxN) {
    result.exact = true;
    const ExactP p = exact_p(result.u, n1, n2);
    result.p_value = p.two_sided;
    result.p_greater = p.greater;
    return result;
  }
  const double mean = dn1 * dn2 / 2;
  const double variance = dn1 * dn2 / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (variance <= 0) return result;  // every value equal: p = 1
  const double sd = std::sqrt(variance);
  const double z = std::max(0.0, std::abs(result.u - mean) - 0.5) / sd;
  result.p_value = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  // One-sided, continuity-corrected: P(U >= u) ~ P(Z >= (u - 0.5 - mean) / sd).
  result.p_greater = 0.5 * std::erfc((result.u - 0.5 - mean) / sd / std::sqrt(2.0));
  return result;
}

double mann_whitney_min_p(size_t n1, size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  return std::min(1.0, 2.0 * std::exp(-log_choose(n1, n2)));  // 2 / C(n1 + n2, n1), in logs
}

double mann_whitney_min_p_greater(size_t n1, size_t n2) {
  if (n1 == 0 || n2 == 0) return 1;
  return std::exp(-log_choose(n1, n2));
}

}  // namespace cuvil::stats
