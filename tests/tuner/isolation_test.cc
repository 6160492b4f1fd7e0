// Trial isolation: a child that crashes, hangs, runs out of memory or fails is reported with the
// right reason, and the parent goes on.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <new>
#include <vector>

#include "base/error.h"
#include "tuner/isolation.h"
#include "tuner/trial.h"

namespace cuvil::tuner {
namespace {

ChildLimits limits(double timeout_s = 20, int64_t memory_mb = 0) {
  return {timeout_s, memory_mb};
}

TEST(Isolation, ResultAndProgressReachTheParent) {
  std::vector<int> seen;
  const ChildOutcome o = run_isolated(
      [](ChildChannel& ch) {
        for (int step = 0; step < 3; ++step) ASSERT_TRUE(ch.progress({{"step", step}}));
        ch.result({{"value", 7.5}});
      },
      [&](const nlohmann::json& p) {
        seen.push_back(p["step"].get<int>());
        return true;
      },
      limits());
  EXPECT_TRUE(o.ok) << o.reason;
  EXPECT_FALSE(o.stopped);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(o.result["value"].get<double>(), 7.5);
}

TEST(Isolation, ParentCanStopTheChildAfterAProgressMessage) {
  int steps = 0;
  const ChildOutcome o = run_isolated(
      [](ChildChannel& ch) {
        for (int step = 0; step < 5; ++step) {
          if (!ch.progress({{"step", step}})) return;
        }
        ch.result({{"value", 1}});
      },
      [&](const nlohmann::json&) { return ++steps < 2; }, limits());
  EXPECT_TRUE(o.ok) << o.reason;
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.progress.size(), 2u);
}

TEST(Isolation, CrashIsReportedWithTheSignal) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer turns the crash into its own abort (scripts/sanitize.sh)";
#endif
  const ChildOutcome o = run_isolated([](ChildChannel&) { raise(SIGSEGV); }, {}, limits());
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "crashed (signal 11, SIGSEGV)");
}

TEST(Isolation, HangIsKilledAtTheTimeout) {
  const ChildOutcome o = run_isolated(
      [](ChildChannel&) {
        for (;;) pause();
      },
      {}, limits(0.3));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "timed out after 0.3 s (killed)");
}

TEST(Isolation, OutOfMemoryUnderTheAddressSpaceLimit) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an address-space limit leaves AddressSanitizer no room for its shadow memory "
                  "(scripts/sanitize.sh)";
#endif
  const ChildOutcome o = run_isolated(
      [](ChildChannel&) {
        std::vector<std::unique_ptr<char[]>> hog;
        for (;;) hog.emplace_back(new char[64 << 20]);
      },
      {}, limits(20, 512));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "out of memory (limit 512 MiB)");
}

// A child whose allocation failed and that then hangs (a worker stuck after std::bad_alloc) ran
// out of memory: it is not reported as timed out, and it is not waited on for the whole timeout.
TEST(Isolation, OutOfMemoryThenHangIsStillOutOfMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "an address-space limit leaves AddressSanitizer no room for its shadow memory "
                  "(scripts/sanitize.sh)";
#endif
  const auto start = std::chrono::steady_clock::now();
  const ChildOutcome o = run_isolated(
      [](ChildChannel&) {
        std::vector<std::unique_ptr<char[]>> hog;
        try {
          for (;;) hog.emplace_back(new char[64 << 20]);
        } catch (const std::bad_alloc&) {
        }
        for (;;) pause();
      },
      {}, limits(60, 512));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "out of memory (limit 512 MiB)");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

TEST(Isolation, ExceptionMessageIsTheReason) {
  const ChildOutcome o =
      run_isolated([](ChildChannel&) { throw UserError("wrong result (max rel err 0.5 > 1e-04)"); },
                   {}, limits());
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "wrong result (max rel err 0.5 > 1e-04)");
}

TEST(Isolation, ExitWithoutResult) {
  const ChildOutcome o = run_isolated([](ChildChannel&) { _exit(3); }, {}, limits());
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "exited with status 3");
}

TEST(Isolation, ParentGoesOnAfterAFailedChild) {
  run_isolated([](ChildChannel&) { abort(); }, {}, limits());
  const ChildOutcome o = run_isolated(
      [](ChildChannel& ch) {
        ch.result({{"value", 1}});
      },
      {}, limits());
  EXPECT_TRUE(o.ok);
}

TEST(TestFaultHook, SelectsTrialsByNumber) {
  setenv("CUVIL_TEST_TRIAL_FAULT", "crash@1,hang@3", 1);
  EXPECT_EQ(test_fault_for(1), "crash");
  EXPECT_EQ(test_fault_for(3), "hang");
  EXPECT_EQ(test_fault_for(2), "");
  setenv("CUVIL_TEST_TRIAL_FAULT", "oom", 1);
  EXPECT_EQ(test_fault_for(17), "oom");
  unsetenv("CUVIL_TEST_TRIAL_FAULT");
  EXPECT_EQ(test_fault_for(1), "");
}

TEST(TrialBody, WrongResultFailsTheVerificationGate) {
  TrialSpec spec;
  spec.suite = bench::find_suite("resnet50");
  spec.rungs = {bench::Rung{"b1", {{"batch", 1}, {"image", 224}}, true}};
  spec.config = passes::default_pipeline("cpu");
  spec.fault = "wrong";
  const ChildOutcome o =
      run_isolated([&](ChildChannel& ch) { run_trial(spec, ch); }, {}, limits(120));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason.rfind("wrong result (max rel err 0.5", 0), 0u) << o.reason;
  EXPECT_TRUE(o.progress.empty());  // nothing was timed
}

TEST(Objective, GeometricMeanOfRungMedians) {
  std::vector<RungSamples> r(2);
  r[0].median_ms = 2;
  r[1].median_ms = 8;
  EXPECT_DOUBLE_EQ(objective_of(r), 4);
}

TEST(PruneCheckpoints, DoublingFromThreeSamples) {
  EXPECT_EQ(checkpoint_index(1), -1);
  EXPECT_EQ(checkpoint_index(2), -1);
  EXPECT_EQ(checkpoint_index(3), 0);
  EXPECT_EQ(checkpoint_index(4), -1);
  EXPECT_EQ(checkpoint_index(6), 1);
  EXPECT_EQ(checkpoint_index(12), 2);
  EXPECT_EQ(checkpoint_index(3 << (kStepsPerRung - 2)), kStepsPerRung - 2);
  EXPECT_EQ(checkpoint_index(3 << (kStepsPerRung - 1)), -1);  // that step is the rung's end
}

TEST(PruneCheckpoints, EachRungOwnsItsSteps) {
  EXPECT_EQ(checkpoint_step(0, 0), 0);
  EXPECT_EQ(rung_end_step(0), kStepsPerRung - 1);
  EXPECT_EQ(checkpoint_step(1, 0), kStepsPerRung);
  EXPECT_LT(checkpoint_step(0, kStepsPerRung - 2), rung_end_step(0));
  EXPECT_LT(rung_end_step(0), checkpoint_step(1, 0));
}

}  // namespace
}  // namespace cuvil::tuner
