// BalancedCuts: equal cuts to start, units move toward the faster thread when the gain beats the
// threshold, and every part keeps at least one unit.
#include "runtime/loop_balance.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace cuvil::runtime {
namespace {

// Feeds `runs` runs in which each unit of part p takes unit_seconds[p].
void run_with_costs(BalancedCuts& cuts, const std::vector<double>& unit_seconds, int runs) {
  std::vector<double> seconds(unit_seconds.size());
  for (int r = 0; r < runs; ++r) {
    for (size_t p = 0; p < seconds.size(); ++p) {
      const int part = static_cast<int>(p);
      seconds[p] = static_cast<double>(cuts.end(part) - cuts.begin(part)) * unit_seconds[p];
    }
    cuts.record(seconds.data());
  }
}

void expect_covering(const BalancedCuts& cuts, int64_t n) {
  EXPECT_EQ(cuts.begin(0), 0);
  EXPECT_EQ(cuts.end(cuts.parts() - 1), n);
  for (int p = 0; p < cuts.parts(); ++p) {
    EXPECT_GE(cuts.end(p) - cuts.begin(p), 1) << "part " << p;
    if (p > 0) {
      EXPECT_EQ(cuts.begin(p), cuts.end(p - 1));
    }
  }
}

TEST(LoopBalance, StartsWithThePoolsStaticParts) {
  BalancedCuts cuts;
  cuts.fit(49, 2);
  EXPECT_EQ(cuts.end(0), 24);  // 49 * 1 / 2, as ThreadPool's static parts
  cuts.fit(10, 3);
  EXPECT_EQ(cuts.end(0), 3);
  EXPECT_EQ(cuts.end(1), 6);
  expect_covering(cuts, 10);
}

TEST(LoopBalance, UnitsMoveToTheFasterThread) {
  BalancedCuts cuts;
  cuts.fit(300, 2);
  run_with_costs(cuts, {1e-6, 2e-6}, 30);  // part 1's thread takes twice as long per unit
  EXPECT_NEAR(static_cast<double>(cuts.end(0)), 200.0, 6.0);
  expect_covering(cuts, 300);
}

TEST(LoopBalance, ThreePartsEachGetTheirThreadsShare) {
  BalancedCuts cuts;
  cuts.fit(400, 3);
  run_with_costs(cuts, {1e-6, 1e-6, 2e-6}, 40);  // speeds 2 : 2 : 1
  EXPECT_NEAR(static_cast<double>(cuts.end(0)), 160.0, 6.0);
  EXPECT_NEAR(static_cast<double>(cuts.end(1)), 320.0, 6.0);
  expect_covering(cuts, 400);
}

TEST(LoopBalance, ASmallDifferenceLeavesTheCuts) {
  BalancedCuts cuts;
  cuts.fit(200, 2);
  run_with_costs(cuts, {1e-6, 1.02e-6}, 30);  // 2% apart: below kBalanceMinGain's worth
  EXPECT_EQ(cuts.end(0), 100);
}

TEST(LoopBalance, EveryPartKeepsAUnitHoweverSlowItsThread) {
  BalancedCuts cuts;
  cuts.fit(5, 3);
  run_with_costs(cuts, {1e-5, 1e-2, 1e-2}, 20);
  expect_covering(cuts, 5);
  EXPECT_EQ(cuts.end(0), 3);  // the fast part takes all but one unit each of the others
}

TEST(LoopBalance, PartsTooShortToTimeTeachNothing) {
  BalancedCuts cuts;
  cuts.fit(100, 2);
  run_with_costs(cuts, {1e-9, 4e-8}, 20);  // part 0: 50 ns, below kBalanceMinPartSeconds
  EXPECT_EQ(cuts.end(0), 50);
}

TEST(LoopBalance, ANewSizeStartsOverFromEqualParts) {
  BalancedCuts cuts;
  cuts.fit(100, 2);
  run_with_costs(cuts, {1e-6, 3e-6}, 20);
  ASSERT_NE(cuts.end(0), 50);
  cuts.fit(100, 2);  // the same loop again: what was learned stays
  EXPECT_NE(cuts.end(0), 50);
  cuts.fit(120, 2);
  EXPECT_EQ(cuts.end(0), 60);
}

TEST(LoopBalanceDeathTest, FewerUnitsThanPartsIsAnInternalError) {
  BalancedCuts cuts;
  EXPECT_DEATH(cuts.fit(1, 2), "fewer units than parts");
}

}  // namespace
}  // namespace cuvil::runtime
