#include "reports/change_point.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "base/error.h"
#include "base/splitmix64.h"
#include "stats/order_statistics.h"

namespace cuvil::reports {

namespace {

struct Split {
  size_t at = 0;  // first index of the right part
  double q = 0;   // the scaled energy statistic of that split
};

// Sum of distances over unordered pairs, as the statistic's mean within a part needs it.
double pair_term(double sum, size_t n) {
  return n < 2 ? 0.0 : 2.0 * sum / (static_cast<double>(n) * static_cast<double>(n - 1));
}

// The split of `v` into [0, at) and [at, n) with both parts >= min_segment that maximises the
// E-divisive statistic Q = n1 n2 / n (2/(n1 n2) B - mean pair distance left - right), with the
// distance |x - y| (the energy exponent alpha = 1). Pair sums are updated as the split moves
// right, so one pass costs O(n^2) rather than O(n^3).
Split best_split(const std::vector<double>& v, size_t min_segment) {
  const size_t n = v.size();
  double within_left = 0, within_right = 0, between = 0;
  const size_t first = min_segment;
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double d = std::fabs(v[i] - v[j]);
      if (j < first) {
        within_left += d;
      } else if (i >= first) {
        within_right += d;
      } else {
        between += d;
      }
    }
  }
  Split best;
  best.q = -1;
  for (size_t at = first; at + min_segment <= n; ++at) {
    const double n1 = static_cast<double>(at), n2 = static_cast<double>(n - at);
    const double q =
        n1 * n2 / (n1 + n2) *
        (2.0 * between / (n1 * n2) - pair_term(within_left, at) - pair_term(within_right, n - at));
    if (q > best.q) best = {at, q};
    // Move point `at` from the right part to the left one.
    double to_left = 0, to_right = 0;
    for (size_t i = 0; i < at; ++i) to_left += std::fabs(v[at] - v[i]);
    for (size_t j = at + 1; j < n; ++j) to_right += std::fabs(v[at] - v[j]);
    within_left += to_left;
    within_right -= to_right;
    between += to_right - to_left;
  }
  return best;
}

// The share of random reorderings of `v` whose best split is at least as strong as the
// observed one: the permutation test's p-value, with the observed order counted as one of them.
double permutation_p_value(std::vector<double> v, double observed_q, size_t min_segment,
                           int permutations, double significance, uint64_t seed) {
  SplitMix64 rng{seed};
  // Guards against calling rounding noise "as strong" or "stronger" when all values are equal.
  const double tolerance = 1e-12 * std::max(1.0, std::fabs(observed_q));
  // Once this many reorderings are as strong, p can no longer fall below the significance:
  // stop early (a flat history, the common case, then costs a handful of permutations).
  const double enough = significance * (permutations + 1.0) - 1.0;
  int at_least_as_strong = 0;
  for (int p = 0; p < permutations; ++p) {
    for (size_t i = v.size() - 1; i > 0; --i) std::swap(v[i], v[rng.below(i + 1)]);
    if (best_split(v, min_segment).q >= observed_q - tolerance) ++at_least_as_strong;
    if (at_least_as_strong >= enough) return 1.0;
  }
  return (at_least_as_strong + 1.0) / (permutations + 1.0);
}

// change_point_min_runs stops running the detector at lengths where fewer reorderings than this
// are expected to rebuild a clean step (then none, in all but a rare case).
constexpr double kNegligibleReorderings = 0.01;

struct Found {
  size_t index;
  double p_value;
};

// Binary segmentation: test the best split of [begin, end); when significant, keep it and
// search both halves. Each segment's permutations are seeded from its bounds, so the answer
// does not depend on the order segments are visited in.
void segment(const std::vector<double>& series, size_t begin, size_t end,
             const ChangePointOptions& o, std::vector<Found>* found) {
  if (end - begin < 2 * o.min_segment) return;
  const std::vector<double> part(series.begin() + static_cast<std::ptrdiff_t>(begin),
                                 series.begin() + static_cast<std::ptrdiff_t>(end));
  const Split split = best_split(part, o.min_segment);
  const uint64_t seed = o.seed ^ (begin * 0x9e3779b97f4a7c15ULL) ^ (end * 0xc2b2ae3d27d4eb4fULL);
  const double p =
      permutation_p_value(part, split.q, o.min_segment, o.permutations, o.significance, seed);
  if (p >= o.significance) return;
  found->push_back({begin + split.at, p});
  segment(series, begin, begin + split.at, o, found);
  segment(series, begin + split.at, end, o, found);
}

double segment_median(const std::vector<double>& series, size_t begin, size_t end) {
  return stats::median_of({series.begin() + static_cast<std::ptrdiff_t>(begin),
                           series.begin() + static_cast<std::ptrdiff_t>(end)});
}

// Change points with the medians of the segments between them.
std::vector<ChangePoint> describe(const std::vector<double>& series,
                                  const std::vector<Found>& found) {
  std::vector<ChangePoint> out;
  for (size_t k = 0; k < found.size(); ++k) {
    const size_t begin = k == 0 ? 0 : found[k - 1].index;
    const size_t end = k + 1 < found.size() ? found[k + 1].index : series.size();
    ChangePoint c;
    c.index = found[k].index;
    c.p_value = found[k].p_value;
    c.before = segment_median(series, begin, c.index);
    c.after = segment_median(series, c.index, end);
    c.change_pct = c.before != 0 ? (c.after / c.before - 1) * 100 : 0;
    c.direction = c.change_pct > 0 ? ChangeDirection::kRegression : ChangeDirection::kImprovement;
    out.push_back(c);
  }
  return out;
}

void validate(const std::vector<double>& series, const ChangePointOptions& o) {
  if (!(o.significance > 0 && o.significance < 1)) {
    throw UserError("change points: significance must be between 0 and 1 (exclusive)");
  }
  if (o.min_segment < 1) throw UserError("change points: the minimum segment is at least 1 point");
  if (o.permutations < 1) throw UserError("change points: at least 1 permutation is needed");
  if (!(o.min_change_pct >= 0)) {
    throw UserError("change points: the minimum change must be a non-negative percentage");
  }
  for (size_t i = 0; i < series.size(); ++i) {
    if (!std::isfinite(series[i])) {
      throw UserError("change points: point " + std::to_string(i) + " is not a finite number");
    }
  }
}

}  // namespace

const char* direction_name(ChangeDirection direction) {
  return direction == ChangeDirection::kRegression ? "regression" : "improvement";
}

size_t change_point_min_runs(const ChangePointOptions& options) {
  validate({}, options);
  const double permutations = options.permutations;
  // p = (as-strong reorderings + 1) / (permutations + 1): even none cannot go below this.
  if (1.0 / (permutations + 1) >= options.significance) return 0;
  // A clean step: first half at 1, second half higher by more than the minimum change.
  const double high = 2 + 2 * options.min_change_pct / 100;
  size_t from = 0;  // the first length of the current unbroken stretch of lengths that find it
  for (size_t n = 2 * options.min_segment;; ++n) {
    const size_t half = n / 2;
    const double log_ways =
        std::lgamma(n + 1.0) - std::lgamma(half + 1.0) - std::lgamma(n - half + 1.0);
    // The expected number of reorderings that rebuild the step: once negligible, every longer
    // history finds it, and the detector need not be run to know.
    if (permutations * 2 * std::exp(-log_ways) < kNegligibleReorderings) return from ? from : n;
    std::vector<double> step(n, 1.0);
    std::fill(step.begin() + static_cast<std::ptrdiff_t>(half), step.end(), high);
    if (detect_change_points(step, options).empty()) {
      from = 0;
    } else if (from == 0) {
      from = n;
    }
  }
}

std::vector<ChangePoint> detect_change_points(const std::vector<double>& series,
                                              const ChangePointOptions& options) {
  validate(series, options);
  std::vector<Found> found;
  segment(series, 0, series.size(), options, &found);
  std::sort(found.begin(), found.end(),
            [](const Found& a, const Found& b) { return a.index < b.index; });
  // Drop shifts too small to report, smallest first, merging their segments: the neighbours'
  // medians change with each merge, so re-measure before dropping the next.
  for (;;) {
    const std::vector<ChangePoint> points = describe(series, found);
    size_t smallest = points.size();
    for (size_t k = 0; k < points.size(); ++k) {
      if (std::fabs(points[k].change_pct) >= options.min_change_pct) continue;
      if (smallest == points.size() ||
          std::fabs(points[k].change_pct) < std::fabs(points[smallest].change_pct)) {
        smallest = k;
      }
    }
    if (smallest == points.size()) return points;
    found.erase(found.begin() + static_cast<std::ptrdiff_t>(smallest));
  }
}

}  // namespace cuvil::reports
