// Summary statistics of one benchmark's raw timing samples, as the store keeps them.
#pragma once

#include <cstdint>
#include <vector>

namespace cuvil::reports {

struct SampleSummary {
  int64_t count = 0;
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
  double cv = 0;  // stddev / mean; 0 when the mean is 0
};

// The median of an even count is the mean of the two middle samples; stddev uses n - 1.
SampleSummary summarize_samples(std::vector<double> samples);

}  // namespace cuvil::reports
