// Where a balanced parallel loop cuts its units between threads, learned from how long each
// thread took on it the runs before. On a 2-core VM the two halves of the same step do not take
// the same time: one core is shared with the host's other work, one half of an image has its
// rows in the other core's cache. A ResNet-50 b1 trace found one thread's part 10-40% longer,
// the same thread for most steps and across runs, while the other waited (420-1000 us of a
// 12.6-14.3 ms run repeated from run to run, docs/performance.md). Equal cuts cannot fix that; cuts
// that follow each thread's measured speed can, and they settle: a cut moves only when the smoothed
// speeds predict a loop at least kBalanceMinGain shorter, so that each thread keeps the same units
// (and their cache lines) from one run to the next.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cuvil::runtime {

// Weight of the newest run in each part's smoothed speed.
inline constexpr double kBalanceSmoothing = 0.3;
// A cut moves when that shortens the loop's predicted time by at least this fraction: timing
// noise alone should not move units (and their cache lines) between threads.
inline constexpr double kBalanceMinGain = 0.03;
// Parts shorter than this are not timed reliably (the clock, the wake-up): they leave the
// speeds as they were.
inline constexpr double kBalanceMinPartSeconds = 5e-6;

class BalancedCuts {
 public:
  // Equal cuts of n units into `parts` (the thread pool's static parts), unless n and parts
  // are what the cuts were learned for.
  void fit(int64_t n, int parts);
  int parts() const { return static_cast<int>(rate_.size()); }
  int64_t begin(int part) const { return cut_[static_cast<size_t>(part)]; }
  int64_t end(int part) const { return cut_[static_cast<size_t>(part) + 1]; }
  // The time each part took on its own thread in the run that just ended (seconds[p] for part
  // p); moves the cuts toward equal times. Every part keeps at least one unit.
  void record(const double* seconds);

 private:
  double predicted_seconds(const std::vector<int64_t>& cut) const;

  std::vector<int64_t> cut_;   // parts() + 1 bounds: 0, ..., n
  std::vector<double> rate_;   // smoothed units per second of each part's thread; 0: unknown
  std::vector<int64_t> next_;  // record's proposed cuts, kept to spare the loop an allocation
};

}  // namespace cuvil::runtime
