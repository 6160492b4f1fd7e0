// SplitMix64 (Steele, Lea and Flood, 2014): the project's one small deterministic generator. Its
// output is fixed by its definition, unlike the standard library's distributions (which differ
// between implementations), so bootstrap resamples, permutation tests and synthetic test series
// are the same everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuvil {

struct SplitMix64 {
  uint64_t state = 0;

  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n) by multiply-shift (bias below n / 2^64).
  size_t below(size_t n) {
    return static_cast<size_t>((static_cast<unsigned __int128>(next()) * n) >> 64);
  }
  // Uniform in (0, 1): never 0, so log(uniform()) is finite.
  double uniform() { return (static_cast<double>(next() >> 11) + 0.5) * 0x1p-53; }
};

}  // namespace cuvil
