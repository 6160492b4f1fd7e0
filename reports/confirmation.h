// Confirming a suspected regression by re-measuring both sides in alternation (old, new, old,
// new, ...: ABAB or ABBA rounds), so that a drift of the machine touches both alike. A regression
// is confirmed only when the pooled samples differ significantly by at least the minimum effect
// and the rounds themselves show it: the samples of one round share that process's machine state
// and are not independent, so the rounds are the unit of evidence, and the one-sided exact rank
// test (Mann-Whitney) of the new rounds' medians above the old ones' must reach alpha. At three
// rounds a side that needs every new round above every old one (1 in 20 by chance); at five a few
// inversions of 25 comparisons pass. An apparent slowdown whose rounds disagree among themselves
// by as much as the effect is "noisy": the machine cannot resolve it. The rule's constants are
// here, in one place.
#pragma once

#include <string>
#include <vector>

namespace cuvil::reports {

// Fewer rounds per side than this, or fewer samples in a round, is "not enough data"; so are
// round counts with which the rank test cannot reach alpha at all (2 rounds a side at 0.05).
inline constexpr size_t kMinConfirmRounds = 2;
inline constexpr size_t kMinSamplesPerRound = 3;

struct ConfirmationOptions {
  double alpha = 0.05;        // two-sided Mann-Whitney on the pooled samples
  double min_effect_pct = 3;  // a slowdown smaller than this is not a regression
};

enum class ConfirmationVerdict {
  kConfirmed,     // slower, significantly, by >= min_effect, and the rounds' rank test agrees
  kNotConfirmed,  // the re-measurement does not show the slowdown
  kNoisy,         // a slowdown >= min_effect, but a side's rounds differ by as much
  kNotEnoughData,
};
const char* confirmation_verdict_name(ConfirmationVerdict verdict);

struct Confirmation {
  ConfirmationVerdict verdict = ConfirmationVerdict::kNotEnoughData;
  double change_pct = 0;  // pooled new median vs pooled old median
  double p_value = 1;     // two-sided, pooled samples
  double rounds_p = 1;    // one-sided exact rank test of the rounds' medians, new above old
  double old_spread_pct = 0, new_spread_pct = 0;  // max/min of a side's round medians, - 1
  size_t pairs_slower = 0, pairs = 0;             // round pairs whose new median is above old
  std::string reason;                             // one line: why this verdict
};

// `old_rounds[i]` and `new_rounds[i]` are the samples (ns) of round i of each side, measured in
// alternation. The sides may have different round counts; pairs are formed up to the shorter.
Confirmation confirm_regression(const std::vector<std::vector<double>>& old_rounds,
                                const std::vector<std::vector<double>>& new_rounds,
                                const ConfirmationOptions& options = {});

}  // namespace cuvil::reports
