// `cuvil-bench run --baseline torch -o OUT.json`: cuvil beside PyTorch per rung,
// OUT.vs-torch.svg. One group of bars per rung (cuvil, torch-eager, torch-script): each median
// with its 95% interval as a whisker, and each PyTorch bar's speed-up of cuvil over it.
#pragma once

#include <string>
#include <vector>

namespace cuvil::reports::pictures {

struct BaselineBar {
  std::string variant;  // "cuvil", "torch-eager", "torch-script"
  bool measured = true;
  double median_ms = 0, low_ms = 0, high_ms = 0;  // the median and its 95% interval
  std::string why_not;                            // when not measured
};

struct BaselineRung {
  std::string name;               // "resnet50/b1"
  std::vector<BaselineBar> bars;  // in `variants` order
};

struct BaselineChart {
  std::string framework = "PyTorch";
  std::string details;                // "torch 2.1, 2 thread(s), BLAS mkl"
  std::vector<std::string> variants;  // the series, cuvil first
  std::vector<BaselineRung> rungs;
};

// The <svg> element: a <rect class="bar"> per measured median.
std::string baseline_bars_svg(const BaselineChart& chart);

}  // namespace cuvil::reports::pictures
