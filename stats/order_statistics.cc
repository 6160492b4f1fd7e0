#include "stats/order_statistics.h"

#include <algorithm>
#include <cmath>

namespace cuvil::stats {

double median_in_place(std::vector<double>& v) {
  const size_t n = v.size();
  if (n == 0) return 0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(v.begin(), mid, v.end());
  if (n % 2) return *mid;
  const double upper = *mid;
  const double lower = *std::max_element(v.begin(), mid);
  return 0.5 * (lower + upper);
}

double median_of(std::vector<double> samples) {
  return median_in_place(samples);
}

double nearest_rank_percentile(const std::vector<double>& sorted, double percent) {
  const size_t n = sorted.size();
  if (n == 0) return 0;
  // Rank ceil(p/100 * n), computed with a small tolerance so that e.g. 90% of 10 is rank 9.
  const double exact = percent / 100.0 * static_cast<double>(n);
  int64_t rank = static_cast<int64_t>(std::ceil(exact - 1e-9));
  rank = std::clamp<int64_t>(rank, 1, static_cast<int64_t>(n));
  return sorted[static_cast<size_t>(rank - 1)];
}

double linear_quantile(const std::vector<double>& sorted, double q) {
  const size_t n = sorted.size();
  if (n == 0) return 0;
  const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(n - 1);
  const size_t below = static_cast<size_t>(position);
  if (below + 1 >= n) return sorted[n - 1];
  const double fraction = position - static_cast<double>(below);
  return sorted[below] * (1 - fraction) + sorted[below + 1] * fraction;
}

int64_t median_ci_rank(int64_t n, double level) {
  if (n <= 0) return 0;
  const double tail = (1.0 - level) / 2.0;
  // Largest k with P(Binomial(n, 1/2) <= k - 1) <= tail, summing the pmf in log space.
  double log_pmf = -static_cast<double>(n) * std::log(2.0);
  double cumulative = 0;
  int64_t k = 0;
  for (int64_t i = 0; i <= n / 2; ++i) {
    cumulative += std::exp(log_pmf);
    if (cumulative > tail) break;
    k = i + 1;
    log_pmf += std::log(static_cast<double>(n - i)) - std::log(static_cast<double>(i + 1));
  }
  return k;
}

Interval order_statistic_median_ci(std::vector<double> samples, double level) {
  const int64_t n = static_cast<int64_t>(samples.size());
  if (n == 0) return {};
  const int64_t k = std::max<int64_t>(median_ci_rank(n, level), 1);
  auto at_rank = [&](int64_t rank) {  // 1-based
    const auto it = samples.begin() + (rank - 1);
    std::nth_element(samples.begin(), it, samples.end());
    return *it;
  };
  const double low = at_rank(k);
  const double high = at_rank(n + 1 - k);
  return {low, high};
}

}  // namespace cuvil::stats
