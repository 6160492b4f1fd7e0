// Summary statistics of timing samples.
#pragma once

#include <cstdint>
#include <vector>

namespace cuvil::bench {

struct Summary {
  int64_t count = 0;
  double min = 0, max = 0, mean = 0, median = 0, stddev = 0;
  double cv = 0;  // stddev / mean
};

Summary summarize(const std::vector<double>& samples);

}  // namespace cuvil::bench
