// Change points in a benchmark's history: where its median time shifted and stayed shifted.
//
// Method: E-divisive means (Matteson & James 2014) with a permutation test, as MongoDB's
// performance-signal processing and Apache Otava (ex Hunter) use it, applied by binary
// segmentation. Chosen over a windowed step test (asv) because it assumes nothing about the
// noise's distribution (the energy statistic compares whole distributions and the permutation
// test calibrates itself on the series' own noise, skewed as timings are), finds several shifts
// in one history, and has no window length to tune per benchmark. A fixed seed makes the
// permutations, hence the answer, the same on every machine and every time.
//
// Single noisy points are ignored by construction: a split needs kChangePointMinSegment points
// on each side, so one outlier never forms a segment of its own, and a permuted series still
// holds the outlier, so it inflates the null distribution as much as the observed statistic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cuvil::reports {

// A split is kept when its permutation p-value is below this. Every tested segment is a
// chance of a false alarm, so it sits well below the usual 0.05 (measured on 300 flat series of
// 40 points with 2% noise: 1 false alarm; a 5% step in 40 such points: found 300 times of 300).
constexpr double kChangePointSignificance = 0.005;
// Points needed on each side of a split: fewer and one bad night could be called a shift.
constexpr size_t kChangePointMinSegment = 3;
// Permutations per test: p-values resolve to 1 / (kChangePointPermutations + 1) = 0.001, fine
// enough below the significance for the test to have power. A test stops as soon as its p can
// no longer fall below the significance, so flat histories cost a few permutations.
constexpr int kChangePointPermutations = 999;
// Shifts between adjacent segments' medians smaller than this (in %) are not reported: the
// test finds them with enough points, but nobody acts on them.
constexpr double kChangePointMinChangePct = 1.0;
constexpr uint64_t kChangePointSeed = 0x5eedc0ffeeULL;

struct ChangePointOptions {
  double significance = kChangePointSignificance;
  size_t min_segment = kChangePointMinSegment;
  int permutations = kChangePointPermutations;
  double min_change_pct = kChangePointMinChangePct;
  uint64_t seed = kChangePointSeed;
};

// Times are lower-is-better: a regression is a shift up.
enum class ChangeDirection { kRegression, kImprovement };
const char* direction_name(ChangeDirection direction);

// The fewest runs a history needs before the detector, with these options, can find a shift at
// all: from this length on it finds the clearest step there is (two halves at two levels), and
// below it it does not. A random reordering is as strong as that step when it puts the halves
// back together, with chance 2 / C(n, n/2); while that keeps the permutation p-value at the
// significance, no step is found. Measured by running the detector (with its fixed seed) on
// clean steps of each length, not estimated: with the defaults, 13 runs (at 8 or 10 runs a 47%
// step goes unseen). Longer histories can still miss a step near either end. 0 when no length
// is enough (the permutations cannot resolve the significance).
size_t change_point_min_runs(const ChangePointOptions& options = {});

struct ChangePoint {
  // The first point of the new level: the change came in between points index - 1 and index.
  size_t index = 0;
  double before = 0, after = 0;  // medians of the segments on either side
  double change_pct = 0;         // (after / before - 1) * 100
  double p_value = 1;            // of the permutation test that accepted the split
  ChangeDirection direction = ChangeDirection::kRegression;
};

// The change points of `series` (one value per run, oldest first), in index order. Fewer than
// 2 * min_segment points give none, and below change_point_min_runs(options) even a clean step
// is missed more often than found. Non-finite values or bad options are a UserError.
std::vector<ChangePoint> detect_change_points(const std::vector<double>& series,
                                              const ChangePointOptions& options = {});

}  // namespace cuvil::reports
