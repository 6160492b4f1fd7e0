#include "probes/clock.h"

#include <gtest/gtest.h>

namespace cuvil::probes {
namespace {

TEST(InvariantTsc, NeedsBothFlags) {
  EXPECT_TRUE(
      cpuinfo_has_invariant_tsc("processor\t: 0\nflags\t\t: fpu tsc constant_tsc rep_good "
                                "nonstop_tsc avx512f\n"));
  EXPECT_FALSE(cpuinfo_has_invariant_tsc("flags\t\t: fpu tsc constant_tsc\n"));
  EXPECT_FALSE(cpuinfo_has_invariant_tsc("flags\t\t: fpu tsc nonstop_tsc\n"));
}

TEST(InvariantTsc, NoFlagsLineMeansNo) {
  EXPECT_FALSE(cpuinfo_has_invariant_tsc(""));
  EXPECT_FALSE(cpuinfo_has_invariant_tsc("processor\t: 0\nmodel name\t: x\n"));
}

TEST(InvariantTsc, FlagNamesMatchWholeWords) {
  EXPECT_FALSE(cpuinfo_has_invariant_tsc("flags\t: constant_tsc_x nonstop_tsc\n"));
}

TEST(InvariantTsc, TheFirstCpuSpeaks) {
  EXPECT_TRUE(cpuinfo_has_invariant_tsc(
      "flags\t: constant_tsc nonstop_tsc\n\nprocessor\t: 1\nflags\t: fpu\n"));
}

TEST(TscToNs, ScalesFromTheCalibrationPoint) {
  TscCalibration c;
  c.ns_per_tick = 0.5;
  c.tick0 = 1000;
  c.ns0 = 7;
  EXPECT_EQ(tsc_to_ns(c, 1000), 7);
  EXPECT_EQ(tsc_to_ns(c, 1006), 10);
  EXPECT_EQ(tsc_to_ns(c, 998), 6);  // before the calibration point
}

TEST(RegionClock, AgreesWithMonotonicRawAndNeverGoesBack) {
  int64_t last = region_now_ns();
  for (int i = 0; i < 1000; ++i) {
    const int64_t a = now_ns();
    const int64_t r = region_now_ns();
    const int64_t b = now_ns();
    EXPECT_GE(r, last);
    // A calibration off by 0.01% drifts 0.1 ms in a second; 1 ms is a loose bound.
    EXPECT_GE(r, a - 1'000'000);
    EXPECT_LE(r, b + 1'000'000);
    last = r;
  }
}

TEST(RegionClock, NamesItsSource) {
  const std::string name = region_clock_name();
  EXPECT_TRUE(name == "tsc" || name == "CLOCK_MONOTONIC_RAW") << name;
  if (name == "tsc") {
    EXPECT_TRUE(tsc_calibration().invariant);
    EXPECT_GT(tsc_calibration().ghz(), 0.1);
  }
}

TEST(MeasureClocks, ReportsResolutionAndReadCost) {
  const ClockReport r = measure_clocks();
  ASSERT_GE(r.clocks.size(), 2u);
  EXPECT_EQ(r.clocks[0].name, "CLOCK_MONOTONIC_RAW");
  for (const ClockProperties& c : r.clocks) {
    EXPECT_GT(c.declared_resolution_ns, 0) << c.name;
    EXPECT_GT(c.observed_step_ns, 0) << c.name;
    EXPECT_GT(c.read_overhead_ns, 0) << c.name;
  }
  EXPECT_EQ(r.region_clock, region_clock_name());
}

TEST(MeasureClocks, TextNamesEveryClock) {
  const std::string text = clock_report();
  EXPECT_NE(text.find("CLOCK_MONOTONIC_RAW"), std::string::npos) << text;
  EXPECT_NE(text.find("ns per read"), std::string::npos) << text;
  EXPECT_NE(text.find("per-op regions use"), std::string::npos) << text;
}

}  // namespace
}  // namespace cuvil::probes
