#include "bench_suite/models/resnet50.h"

#include <cmath>
#include <string>

#include "base/error.h"
#include "bench_suite/models/builder.h"

namespace cuvil::bench::models {

namespace {

constexpr double kBnEps = 1e-5;
constexpr int64_t kExpansion = 4;
// He gain for convs that feed a ReLU, which halves the second moment.
const float kReluGain = std::sqrt(2.0f);
// BatchNorm here uses made-up running statistics, so it does not renormalise: without damping,
// each residual add grows the activations and 16 blocks reach the hundreds. Trained ResNets end
// their branches with small BN gammas too (torchvision's zero_init_residual sets them to 0).
constexpr float kResidualGamma = 0.3f;

void validate(const ResNet50Options& o) {
  auto fail = [](const std::string& what) { throw UserError("resnet50 options: " + what); };
  if (o.batch < 1) fail("batch must be >= 1, got " + std::to_string(o.batch));
  if (o.image < 1) fail("image must be >= 1, got " + std::to_string(o.image));
  if (o.width_divisor < 1 || 64 % o.width_divisor != 0) {
    fail("width_divisor must divide 64, got " + std::to_string(o.width_divisor));
  }
  if (o.blocks.size() != 4) fail("blocks needs 4 stages, got " + std::to_string(o.blocks.size()));
  for (int64_t n : o.blocks) {
    if (n < 1) fail("every stage needs >= 1 block");
  }
  if (o.classes < 1) fail("classes must be >= 1, got " + std::to_string(o.classes));
}

ir::ValueId bottleneck(GraphBuilder& b, ir::ValueId x, int64_t width, int64_t stride) {
  const int64_t in_channels = b.shape(x).at(1);
  const int64_t out_channels = width * kExpansion;
  ir::ValueId h = b.conv2d(x, "conv1", width, 1, 1, 0, false, kReluGain);
  h = b.unary(ir::OpKind::relu, b.batch_norm(h, "bn1", kBnEps), "relu1");
  // v1.5: the stride sits in the 3x3 conv, not the first 1x1.
  h = b.conv2d(h, "conv2", width, 3, stride, 1, false, kReluGain);
  h = b.unary(ir::OpKind::relu, b.batch_norm(h, "bn2", kBnEps), "relu2");
  h = b.conv2d(h, "conv3", out_channels, 1, 1, 0, false);
  h = b.batch_norm(h, "bn3", kBnEps, kResidualGamma);
  ir::ValueId identity = x;
  if (stride != 1 || in_channels != out_channels) {
    identity = b.conv2d(x, "downsample.0", out_channels, 1, stride, 0, false);
    identity = b.batch_norm(identity, "downsample.1", kBnEps);
  }
  return b.unary(ir::OpKind::relu, b.binary(ir::OpKind::add, h, identity, "add"), "relu3");
}

}  // namespace

ResNet50Options resnet50_tiny() {
  ResNet50Options o;
  o.image = 32;
  o.width_divisor = 16;
  o.blocks = {2, 1, 1, 1};
  o.classes = 10;
  return o;
}

ir::Graph build_resnet50(const ResNet50Options& o) {
  validate(o);
  GraphBuilder b(o.seed);
  ir::ValueId x = b.input("image", {o.batch, 3, o.image, o.image});
  x = b.conv2d(x, "conv1", 64 / o.width_divisor, 7, 2, 3, false, kReluGain);
  x = b.unary(ir::OpKind::relu, b.batch_norm(x, "bn1", kBnEps), "relu");
  x = b.op(ir::OpKind::max_pool2d, {x},
           {{"kernel", std::vector<int64_t>{3, 3}},
            {"stride", std::vector<int64_t>{2, 2}},
            {"pad", std::vector<int64_t>{1, 1}},
            {"layout", std::string("nchw")}},
           "maxpool");
  for (size_t stage = 0; stage < o.blocks.size(); ++stage) {
    auto in_stage = b.scope("layer" + std::to_string(stage + 1));
    const int64_t width = (int64_t{64} << stage) / o.width_divisor;
    for (int64_t block = 0; block < o.blocks[stage]; ++block) {
      auto in_block = b.scope(std::to_string(block));
      const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      x = bottleneck(b, x, width, stride);
    }
  }
  x = b.op(ir::OpKind::global_avg_pool, {x}, {{"layout", std::string("nchw")}}, "avgpool");
  x = b.linear(x, "fc", o.classes, true);
  return b.finish({x});
}

}  // namespace cuvil::bench::models
