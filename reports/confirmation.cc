#include "reports/confirmation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "stats/blocks.h"
#include "stats/mann_whitney.h"
#include "stats/order_statistics.h"

namespace cuvil::reports {

const char* confirmation_verdict_name(ConfirmationVerdict verdict) {
  switch (verdict) {
    case ConfirmationVerdict::kConfirmed:
      return "confirmed";
    case ConfirmationVerdict::kNotConfirmed:
      return "not confirmed";
    case ConfirmationVerdict::kNoisy:
      return "unconfirmed: noisy";
    case ConfirmationVerdict::kNotEnoughData:
      return "unconfirmed: not enough data";
  }
  return "unconfirmed: not enough data";
}

namespace {

std::string format(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

}  // namespace

Confirmation confirm_regression(const std::vector<std::vector<double>>& old_rounds,
                                const std::vector<std::vector<double>>& new_rounds,
                                const ConfirmationOptions& options) {
  Confirmation c;
  c.pairs = std::min(old_rounds.size(), new_rounds.size());
  const auto too_small = [](const std::vector<double>& r) {
    return r.size() < kMinSamplesPerRound;
  };
  if (c.pairs < kMinConfirmRounds || std::any_of(old_rounds.begin(), old_rounds.end(), too_small) ||
      std::any_of(new_rounds.begin(), new_rounds.end(), too_small)) {
    c.reason = "needs >= " + std::to_string(kMinConfirmRounds) +
               " rounds per side of >= " + std::to_string(kMinSamplesPerRound) + " samples each";
    return c;
  }
  if (stats::mann_whitney_min_p_greater(old_rounds.size(), new_rounds.size()) > options.alpha) {
    size_t need = std::min(old_rounds.size(), new_rounds.size());
    while (stats::mann_whitney_min_p_greater(need, need) > options.alpha) ++need;
    c.reason = format("%.0f old and %.0f new rounds cannot show a slowdown at alpha %g",
                      static_cast<double>(old_rounds.size()),
                      static_cast<double>(new_rounds.size()), options.alpha) +
               ": the rounds' rank test needs " + std::to_string(need) + " a side";
    return c;
  }
  std::vector<double> old_pool, new_pool, old_medians, new_medians;
  for (const auto& r : old_rounds) {
    old_pool.insert(old_pool.end(), r.begin(), r.end());
    old_medians.push_back(stats::median_of(r));
  }
  for (const auto& r : new_rounds) {
    new_pool.insert(new_pool.end(), r.begin(), r.end());
    new_medians.push_back(stats::median_of(r));
  }
  const double old_median = stats::median_of(old_pool);
  const double new_median = stats::median_of(new_pool);
  if (!(old_median > 0) || !std::isfinite(new_median)) {
    c.reason = "the old side measured no time";
    return c;
  }
  c.change_pct = (new_median / old_median - 1) * 100;
  c.p_value = stats::mann_whitney_u(old_pool, new_pool).p_value;
  c.old_spread_pct = stats::spread_pct(old_medians);
  c.new_spread_pct = stats::spread_pct(new_medians);
  for (size_t i = 0; i < c.pairs; ++i) c.pairs_slower += new_medians[i] > old_medians[i];
  c.rounds_p = stats::mann_whitney_u(new_medians, old_medians).p_greater;

  const double effect = options.min_effect_pct;
  const bool significant = c.p_value < options.alpha;
  // Under no change the rounds are exchangeable, so the exact rank test holds the false-alarm
  // rate at alpha whatever the samples within a round share.
  const bool rounds_agree = c.rounds_p <= options.alpha;
  if (significant && c.change_pct >= effect && rounds_agree) {
    c.verdict = ConfirmationVerdict::kConfirmed;
    c.reason = format("%+.2f%% (p = %.3g, rounds p = %.3g)", c.change_pct, c.p_value, c.rounds_p);
    return c;
  }
  if (c.change_pct >= effect && (c.old_spread_pct >= effect || c.new_spread_pct >= effect)) {
    c.verdict = ConfirmationVerdict::kNoisy;
    c.reason =
        format("%+.2f%%, but the rounds of a side differ by as much (old %.1f%%, new %.1f%% apart)",
               c.change_pct, c.old_spread_pct, c.new_spread_pct);
    return c;
  }
  c.verdict = ConfirmationVerdict::kNotConfirmed;
  if (!significant) {
    c.reason = format("%+.2f%% is not significant (p = %.3g)", c.change_pct, c.p_value);
  } else if (c.change_pct < effect) {
    c.reason = format("%+.2f%% is below the minimum effect %.1f%%", c.change_pct, effect);
  } else {
    c.reason =
        format("the rounds overlap (rounds p = %.3g; slower in %.0f of %.0f round pairs)",
               c.rounds_p, static_cast<double>(c.pairs_slower), static_cast<double>(c.pairs));
  }
  return c;
}

}  // namespace cuvil::reports
