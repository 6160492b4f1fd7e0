#include "runtime/loop_balance.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace cuvil::runtime {

void BalancedCuts::fit(int64_t n, int parts) {
  CUVIL_CHECK(parts >= 1 && n >= parts, "BalancedCuts: fewer units than parts");
  if (this->parts() == parts && cut_.back() == n) return;
  cut_.resize(static_cast<size_t>(parts) + 1);
  for (int p = 0; p <= parts; ++p) cut_[static_cast<size_t>(p)] = n * p / parts;
  rate_.assign(static_cast<size_t>(parts), 0.0);
}

double BalancedCuts::predicted_seconds(const std::vector<int64_t>& cut) const {
  double longest = 0;
  for (size_t p = 0; p < rate_.size(); ++p) {
    longest = std::max(longest, static_cast<double>(cut[p + 1] - cut[p]) / rate_[p]);
  }
  return longest;
}

void BalancedCuts::record(const double* seconds) {
  for (size_t p = 0; p < rate_.size(); ++p) {
    if (seconds[p] < kBalanceMinPartSeconds) return;  // too short to tell the threads apart
  }
  double total = 0;
  for (size_t p = 0; p < rate_.size(); ++p) {
    const double rate = static_cast<double>(cut_[p + 1] - cut_[p]) / seconds[p];
    rate_[p] = rate_[p] > 0 ? (1 - kBalanceSmoothing) * rate_[p] + kBalanceSmoothing * rate : rate;
    total += rate_[p];
  }
  // Each part's share of the units in proportion to its thread's speed, at least one unit each.
  const int64_t n = cut_.back();
  const int parts = this->parts();
  next_.assign(cut_.size(), 0);
  double share = 0;
  for (int p = 1; p < parts; ++p) {
    share += rate_[static_cast<size_t>(p) - 1];
    const int64_t at = std::llround(static_cast<double>(n) * share / total);
    next_[static_cast<size_t>(p)] =
        std::clamp<int64_t>(at, next_[static_cast<size_t>(p) - 1] + 1, n - (parts - p));
  }
  next_.back() = n;
  if (predicted_seconds(next_) <= (1 - kBalanceMinGain) * predicted_seconds(cut_)) {
    cut_.swap(next_);
  }
}

}  // namespace cuvil::runtime
