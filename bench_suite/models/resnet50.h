// ResNet-50 v1.5 (torchvision's resnet50: stride in the bottleneck's 3x3 conv) as an IR graph
// with deterministic random weights.
#pragma once

#include <cstdint>
#include <vector>

#include "passes/ir/graph.h"

namespace cuvil::bench::models {

struct ResNet50Options {
  int64_t batch = 1;
  int64_t image = 224;
  int64_t width_divisor = 1;  // divides every channel count (the stem's 64 must stay whole)
  std::vector<int64_t> blocks = {3, 4, 6, 3};
  int64_t classes = 1000;
  uint64_t seed = 1;
};

// Same topology at toy size: width 1/16, 32x32 images, 10 classes.
ResNet50Options resnet50_tiny();

// Input "image" [batch, 3, image, image] (NCHW); output logits [batch, classes]. Bad options
// throw UserError.
ir::Graph build_resnet50(const ResNet50Options& options);

}  // namespace cuvil::bench::models
