// TreeSHAP on synthetic data: y depends strongly on x1, weakly on x2, not at all on x3.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tuner/importance.h"

namespace cuvil::tuner {
namespace {

std::vector<TrialRecord> synthetic_trials(int n) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<TrialRecord> out;
  const char* modes[] = {"a", "b", "c"};
  for (int i = 0; i < n; ++i) {
    TrialRecord t;
    t.number = i;
    t.state = "complete";
    const double x1 = u(rng), x2 = u(rng);
    const std::string x3 = modes[rng() % 3];
    t.values = {{"x1", x1}, {"x2", x2}, {"x3", x3}, {"fixed", 4}};
    t.value = std::exp(2.0 * x1 + 0.3 * x2);  // log latency = 2 x1 + 0.3 x2
    t.has_value = true;
    out.push_back(t);
  }
  TrialRecord failed;
  failed.number = n;
  failed.state = "fail";
  failed.values = {{"x1", 0.5}};
  out.push_back(failed);
  return out;
}

TEST(Importance, EncodingSkipsFailedTrialsAndConstantsAndOneHotsChoices) {
  const Dataset d = encode_trials(synthetic_trials(31));
  EXPECT_EQ(d.rows(), 31u);
  EXPECT_EQ(d.params, (std::vector<std::string>{"x1", "x2", "x3"}));
  EXPECT_EQ(d.columns.size(), 5u);  // x1, x2, x3=a, x3=b, x3=c
  EXPECT_EQ(d.x.size(), 31u * 5u);
}

TEST(Importance, ShapValuesSumToPredictionMinusBase) {
  const Dataset d = encode_trials(synthetic_trials(47));
  std::vector<size_t> rows(d.rows());
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = i;
  const ShapFit fit = fit_and_explain(d, rows, {});
  ASSERT_EQ(fit.shap.size(), d.rows());
  for (size_t r = 0; r < d.rows(); ++r) {
    double sum = 0;
    for (double v : fit.shap[r]) sum += v;
    EXPECT_NEAR(sum, fit.predictions[r] - fit.bias[r], 1e-4);
  }
}

TEST(Importance, RankingRecoversTheKnownOrder) {
  const ImportanceReport r = rank_importance(encode_trials(synthetic_trials(97)), 10, 3);
  ASSERT_EQ(r.ranking.size(), 3u);
  EXPECT_EQ(r.ranking[0].name, "x1");
  EXPECT_EQ(r.ranking[1].name, "x2");
  EXPECT_EQ(r.ranking[2].name, "x3");
  EXPECT_GT(r.ranking[0].mean_abs_shap, 3 * r.ranking[1].mean_abs_shap);
  EXPECT_EQ(r.ranking[0].rank_low, 1);  // stable across refits
  EXPECT_EQ(r.ranking[0].rank_high, 1);
  EXPECT_LE(r.ranking[0].low, r.ranking[0].high);
  EXPECT_EQ(r.interactions.size(), 3u);  // the pairs among the top 3
}

TEST(Importance, IsDeterministic) {
  const Dataset d = encode_trials(synthetic_trials(23));
  const ImportanceReport a = rank_importance(d, 5);
  const ImportanceReport b = rank_importance(d, 5);
  ASSERT_EQ(a.ranking.size(), b.ranking.size());
  for (size_t i = 0; i < a.ranking.size(); ++i) {
    EXPECT_EQ(a.ranking[i].mean_abs_shap, b.ranking[i].mean_abs_shap);
    EXPECT_EQ(a.ranking[i].low, b.ranking[i].low);
  }
}

TEST(Importance, TooFewTrialsGiveAnEmptyRanking) {
  EXPECT_TRUE(rank_importance(encode_trials(synthetic_trials(1))).ranking.empty());
}

// The known truth: log latency = 3a + b + noise, with twenty knobs that do nothing.
std::vector<TrialRecord> known_importance_trials(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> noise(0, 0.05);
  std::vector<TrialRecord> out;
  for (int i = 0; i < n; ++i) {
    TrialRecord t;
    t.number = i;
    t.state = "complete";
    const double a = u(rng), b = u(rng);
    t.values = {{"a", a}, {"b", b}};
    for (int k = 0; k < 20; ++k) t.values["irrelevant" + std::to_string(k)] = u(rng);
    t.value = std::exp(3 * a + b + noise(rng));
    t.has_value = true;
    out.push_back(t);
  }
  return out;
}

TEST(Importance, SixtyTrialsRecoverThreeAPlusBAboveTwentyIrrelevantKnobs) {
  for (uint64_t seed : {1, 2, 3}) {
    const ImportanceReport r =
        rank_importance(encode_trials(known_importance_trials(60, seed)), 20);
    ASSERT_EQ(r.ranking.size(), 22u);
    EXPECT_EQ(r.ranking[0].name, "a") << "seed " << seed;
    EXPECT_EQ(r.ranking[1].name, "b") << "seed " << seed;
    EXPECT_GT(r.ranking[1].mean_abs_shap, 2 * r.ranking[2].mean_abs_shap) << "seed " << seed;
  }
  EXPECT_LE(min_trials_for_importance(22), 60u);
}

TEST(Importance, SixTrialsAreTooFewToRankTwentyTwoKnobs) {
  EXPECT_GT(min_trials_for_importance(22), 6u);
  EXPECT_EQ(min_trials_for_importance(1), kMinTrialsForImportance);
}

TEST(Importance, EveryEstimateLiesInsideItsInterval) {
  for (int n : {6, 12, 60}) {
    const ImportanceReport r = rank_importance(encode_trials(known_importance_trials(n, 7)), 20);
    for (const ParamImportance& p : r.ranking) {
      EXPECT_LE(p.low, p.mean_abs_shap) << p.name << " at " << n << " trials";
      EXPECT_GE(p.high, p.mean_abs_shap) << p.name << " at " << n << " trials";
      EXPECT_LE(p.rank_low, p.rank) << p.name << " at " << n << " trials";
      EXPECT_GE(p.rank_high, p.rank) << p.name << " at " << n << " trials";
    }
  }
}

TEST(Importance, SpearmanOfIdenticalAndReversedRankings) {
  const std::vector<std::pair<std::string, double>> a = {{"x", 3}, {"y", 2}, {"z", 1}, {"w", 0}};
  const std::vector<std::pair<std::string, double>> reversed = {
      {"x", 0}, {"y", 1}, {"z", 2}, {"w", 3}};
  EXPECT_NEAR(spearman_rank_correlation(a, a), 1.0, 1e-12);
  EXPECT_NEAR(spearman_rank_correlation(a, reversed), -1.0, 1e-12);
  // Only shared names count; fewer than three shared is no answer.
  EXPECT_TRUE(std::isnan(spearman_rank_correlation(a, {{"x", 1}, {"q", 2}})));
}

}  // namespace
}  // namespace cuvil::tuner
