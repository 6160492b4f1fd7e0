#include "probes/stack_sampler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/error.h"

namespace cuvil::probes {
namespace {

volatile double g_unwound_sink = 0;

// The function the sampler must find: it burns CPU for `milliseconds` of wall time.
extern "C" __attribute__((noinline)) void cuvil_test_busy_leaf(int milliseconds) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(milliseconds);
  double x = 1.0;
  while (std::chrono::steady_clock::now() < end) {
    for (int i = 0; i < 10000; ++i) x = x * 1.0000001 + 1e-9;
  }
  g_unwound_sink = x;
}

__attribute__((noinline)) void cuvil_test_busy_caller(int milliseconds) {
  cuvil_test_busy_leaf(milliseconds);
  g_unwound_sink = g_unwound_sink + 1;  // not a tail call: the caller stays on the stack
}

// Total samples whose stack contains `frame`, and whether it was found below `caller` in one.
uint64_t samples_with(const std::map<std::vector<std::string>, uint64_t>& stacks,
                      const std::string& frame, const std::string& caller, bool* under_caller) {
  uint64_t count = 0;
  for (const auto& [frames, n] : stacks) {
    for (size_t i = 0; i < frames.size(); ++i) {
      if (frames[i].find(frame) == std::string::npos) continue;
      count += n;
      for (size_t j = 0; j < i; ++j) {
        if (frames[j].find(caller) != std::string::npos) *under_caller = true;
      }
      break;
    }
  }
  return count;
}

TEST(FoldedStacksTest, OneLinePerStackRootFirstWithCounts) {
  const std::map<std::vector<std::string>, uint64_t> stacks = {
      {{"main", "run", "gemm"}, 7}, {{"main", "run"}, 3}, {{"main", "idle"}, 1}};
  EXPECT_EQ(format_folded(stacks), "main;idle 1\nmain;run 3\nmain;run;gemm 7\n");
}

TEST(FoldedStacksTest, SeparatorsInsideFramesCannotSplitThem) {
  const std::map<std::vector<std::string>, uint64_t> stacks = {
      {{"a;b", "std::function<void (int)>::operator()(int) const", "x\ny"}, 2}};
  EXPECT_EQ(format_folded(stacks), "a:b;std::function<void (int)>::operator()(int) const;xy 2\n");
}

TEST(FoldedStacksTest, EmptyStacksAndZeroCountsAreLeftOut) {
  EXPECT_EQ(format_folded({{{}, 4}, {{"main"}, 0}}), "");
}

TEST(SymbolizeTest, NamesAFunctionOfThisExecutable) {
  const auto address = reinterpret_cast<uintptr_t>(&cuvil_test_busy_leaf);
  EXPECT_EQ(symbolize(address + 1), "cuvil_test_busy_leaf");
}

TEST(SymbolizeTest, DemanglesCxxNames) {
  const auto address = reinterpret_cast<uintptr_t>(&cuvil_test_busy_caller);
  EXPECT_NE(symbolize(address + 1).find("cuvil_test_busy_caller(int)"), std::string::npos)
      << symbolize(address + 1);
}

TEST(SymbolizeTest, NamesAFunctionOfASharedLibrary) {
  const auto address = reinterpret_cast<uintptr_t>(&std::fopen);
  EXPECT_NE(symbolize(address).find("fopen"), std::string::npos) << symbolize(address);
}

TEST(SymbolizeTest, UnmappedAddressIsUnknown) {
  EXPECT_EQ(symbolize(16), "[unknown]");
}

TEST(StackSamplerTest, RateOutsideTheRangeIsAUserError) {
  EXPECT_THROW(StackSampler::start(0), UserError);
  EXPECT_THROW(StackSampler::start(100000), UserError);
}

TEST(StackSamplerTest, OnlyOneSamplerAtATime) {
  StackSampler first = StackSampler::start(100, StackSampler::Method::itimer);
  EXPECT_THROW(StackSampler::start(100, StackSampler::Method::itimer), UserError);
  first.stop();
  StackSampler second = StackSampler::start(100, StackSampler::Method::itimer);  // free again
  second.stop();
}

TEST(StackSamplerTest, TimerSamplerFindsTheBusyFunctionUnderItsCaller) {
  StackSampler sampler = StackSampler::start(997, StackSampler::Method::itimer);
  EXPECT_EQ(sampler.method(), "setitimer+unwind");
  cuvil_test_busy_caller(300);
  sampler.stop();
  ASSERT_GT(sampler.sample_count(), 0u);
  bool under_caller = false;
  const auto stacks = sampler.stacks();
  const uint64_t busy =
      samples_with(stacks, "cuvil_test_busy_leaf", "cuvil_test_busy_caller", &under_caller);
  EXPECT_GT(busy, sampler.sample_count() / 2) << sampler.folded();
  EXPECT_TRUE(under_caller) << sampler.folded();
}

TEST(StackSamplerTest, PerfEventSamplerFindsTheBusyFunction) {
  const SamplingSupport support = sampling_support();
  if (!support.perf_event_callchain) GTEST_SKIP() << support.reason;
  StackSampler sampler = StackSampler::start(997, StackSampler::Method::perf_event);
  EXPECT_EQ(sampler.method(), "perf_event callchain");
  cuvil_test_busy_caller(300);
  sampler.stop();
  ASSERT_GT(sampler.sample_count(), 0u);
  bool under_caller = false;
  const uint64_t busy = samples_with(sampler.stacks(), "cuvil_test_busy_leaf",
                                     "cuvil_test_busy_caller", &under_caller);
  // The leaf is the sampled pc itself; its callers need frame pointers, so only the leaf counts.
  EXPECT_GT(busy, sampler.sample_count() / 2) << sampler.folded();
}

TEST(StackSamplerTest, PerfEventSignalSamplerSeesTheWholeStack) {
  const SamplingSupport support = sampling_support();
  if (!support.perf_event_callchain) GTEST_SKIP() << support.reason;
  StackSampler sampler = StackSampler::start(997, StackSampler::Method::perf_event_unwind);
  EXPECT_EQ(sampler.method(), "perf_event+unwind");
  cuvil_test_busy_caller(300);
  sampler.stop();
  ASSERT_GT(sampler.sample_count(), 0u);
  bool under_caller = false;
  const uint64_t busy = samples_with(sampler.stacks(), "cuvil_test_busy_leaf",
                                     "cuvil_test_busy_caller", &under_caller);
  EXPECT_GT(busy, sampler.sample_count() / 2) << sampler.folded();
  EXPECT_TRUE(under_caller) << sampler.folded();
}

TEST(StackSamplerTest, AutomaticUsesTheMethodSamplingSupportNames) {
  const SamplingSupport support = sampling_support();
  StackSampler sampler = StackSampler::start(200);
  EXPECT_EQ(sampler.method(), support.automatic_method);
  if (sampler.method() != "perf_event callchain") {
    EXPECT_FALSE(sampler.fallback_reason().empty());
  }
  sampler.stop();
}

TEST(StackSamplerTest, ThreadsStartedWhileSamplingAreSampled) {
  StackSampler sampler = StackSampler::start(997);
  std::thread worker([] { cuvil_test_busy_caller(300); });
  worker.join();
  sampler.stop();
  bool under_caller = false;
  EXPECT_GT(samples_with(sampler.stacks(), "cuvil_test_busy_leaf", "cuvil_test_busy_caller",
                         &under_caller),
            0u)
      << sampler.method() << "\n"
      << sampler.folded();
}

TEST(StackSamplerTest, WriteFoldedWritesTheFoldedText) {
  StackSampler sampler = StackSampler::start(997, StackSampler::Method::itimer);
  cuvil_test_busy_caller(100);
  sampler.stop();
  const std::string path = ::testing::TempDir() + "stack_sampler_test.folded";
  sampler.write_folded(path);
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), sampler.folded());
  // Every line: frames, one space, a positive count.
  std::istringstream lines(text.str());
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_GT(std::stoull(line.substr(space + 1)), 0u) << line;
  }
}

TEST(StackSamplerTest, WriteFoldedToAnUnwritablePathIsAUserError) {
  StackSampler sampler = StackSampler::start(100, StackSampler::Method::itimer);
  sampler.stop();
  EXPECT_THROW(sampler.write_folded("/nonexistent-dir/x.folded"), UserError);
}

}  // namespace
}  // namespace cuvil::probes
