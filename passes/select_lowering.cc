#include "passes/select_lowering.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "passes/lower.h"
#include "runtime/cpu/conv_geometry.h"
#include "runtime/kernel_table.h"

namespace cuvil::passes {

namespace {

using ir::OpKind;

struct ClassSpec {
  const char* param;
  OpKind op;
  std::vector<std::string> choices;
  const char* default_choice;
  // Choices tried in order when the chosen kernel does not run a node (a grouped or NCHW 3x3
  // under Winograd, say); the last one's kernel runs every node of the class.
  std::vector<std::string> fallbacks;
  const char* help;
};

// Defaults: the fastest generated choice per class on ResNet-50 b1 (cuvil-micro-conv,
// cuvil-bench run --probes ops): Winograd for 3x3 stride-1 convolutions (1.9-3.1x the direct
// kernel's speed in place, except on 7x7 outputs: 1.1x), the direct conv for the others. oneDNN
// is faster than the direct conv on most 1x1 and strided layers, but it stays opt-in: on a loaded
// machine its OpenMP barriers made it far slower. Depthwise convolutions (MobileNet-class
// models) have their own kernel; im2col runs them as one tiny GEMM per channel.
const std::vector<ClassSpec>& classes() {
  static const std::vector<ClassSpec> specs = {
      {"conv_1x1",
       OpKind::conv2d,
       {"gemm", "im2col", "direct", "onednn"},
       "direct",
       {"direct", "im2col"},
       "1x1 stride-1 unpadded convolutions"},
      {"conv_3x3",
       OpKind::conv2d,
       {"im2col", "direct", "winograd", "onednn"},
       "winograd",
       {"direct", "im2col"},
       "3x3 stride-1 convolutions, dilated ones included (DeepLab's, FCN's)"},
      {"conv_other",
       OpKind::conv2d,
       {"im2col", "direct", "onednn"},
       "direct",
       {"im2col"},
       "every other convolution: strided, 7x7 stems, 5x5, padded 1x1, ..."},
      {"conv_depthwise",
       OpKind::conv2d,
       {"depthwise", "im2col", "onednn"},
       "depthwise",
       {"im2col"},
       "depthwise convolutions (groups = input channels) and grouped ones of 2, 4 or 8 channels "
       "per group in and out (ResNeXt, RegNet), any kernel size, stride and dilation"},
      {"linear", OpKind::linear, {"gemm", "onednn"}, "gemm", {"gemm"}, "linear layers"},
      {"matmul", OpKind::matmul, {"gemm", "onednn"}, "gemm", {"gemm"}, "batched matmuls"},
  };
  return specs;
}

// Blocked (nchw16c) convolutions have one kernel: "direct" names it there (the kernel table's
// blocked kernel), and every other choice falls back to it.
constexpr const char* kBlockedConvChoice = "direct";

bool is_blocked(const ir::Node& n) {
  return n.op == OpKind::conv2d && n.attrs.get_string("layout", "nchw") == "nchw16c";
}

}  // namespace

std::string conv_class(const ir::Graph& graph, const ir::Node& node) {
  const ir::Shape& w = graph.value(node.inputs[1]).shape;
  const int64_t groups = node.attrs.get_int("groups", 1);
  if (runtime::cpu::is_depthwise_conv(groups, w) || runtime::cpu::is_narrow_group_conv(groups, w))
    return "conv_depthwise";
  const auto stride = node.attrs.get_ints("stride", {1, 1});
  const auto pad = node.attrs.get_ints("pad", {0, 0});
  const bool unit_stride = stride[0] == 1 && stride[1] == 1;
  if (w[2] == 1 && w[3] == 1 && unit_stride && pad[0] == 0 && pad[1] == 0) return "conv_1x1";
  if (w[2] == 3 && w[3] == 3 && unit_stride) return "conv_3x3";  // dilated too
  return "conv_other";
}

// Winograd's products are a batched GEMM whose K is the input channels: with few of them its
// transforms and the products' C traffic outweigh the multiplies it saves. 3x3, 64 output
// channels, fp32, a Zen 5 class EPYC (--probes ops, docs/performance.md): 3 channels at 224 x 224
// (VGG-11's first layer) 2.0-2.5 ms by Winograd, 1.1 ms direct; at 112 x 112, 4 channels 239 us
// by Winograd, 164 direct; 8 channels 278 against 317 and 12 channels 382 against 429. Such
// conv_3x3 nodes of fewer input channels (per group) than this run the direct kernel.
constexpr int64_t kWinogradMinChannels = 8;

// Output rows and columns of a convolution.
std::pair<int64_t, int64_t> output_extent(const ir::Graph& graph, const ir::Node& n) {
  const ir::Shape& y = graph.value(n.output).shape;
  const bool nhwc = n.attrs.get_string("layout", "nchw") == "nhwc";
  return {nhwc ? y[1] : y[2], nhwc ? y[2] : y[3]};
}

// 2x2 output tiles of a convolution's result (batch x ceil(OH / 2) x ceil(OW / 2); dilated, the
// tiles of each of its dh x dw phases, as the kernel counts them).
int64_t winograd_tiles(const ir::Graph& graph, const ir::Node& n) {
  const auto [h, w] = output_extent(graph, n);
  const auto d = n.attrs.get_ints("dilation", {1, 1});
  const int64_t ph = (h + d[0] - 1) / d[0], pw = (w + d[1] - 1) / d[1];
  return graph.value(n.output).shape[0] * d[0] * d[1] * ((ph + 1) / 2) * ((pw + 1) / 2);
}

// A dilated 3x3 whose dilated window spans more than this fraction of the output (DeepLab's
// atrous pyramid: rate 12 or 24 on a 28x28 map) reads mostly padding: Winograd computes every tap
// of its tiles, the direct kernel skips those a whole tile reads in the padding
// (DeepLabV3-ResNet50 at 224 px, a Zen 5 class EPYC, docs/performance.md: 203 ms with every
// dilated 3x3 by Winograd, 162 ms with the pyramid's rate-12 and rate-24 ones direct).
constexpr double kWinogradMaxDilatedSpan = 0.5;

bool dilated_window_fits(const ir::Graph& graph, const ir::Node& n) {
  const auto [h, w] = output_extent(graph, n);
  const auto d = n.attrs.get_ints("dilation", {1, 1});
  if (d[0] == 1 && d[1] == 1) return true;
  return 2.0 * static_cast<double>(d[0]) <= kWinogradMaxDilatedSpan * static_cast<double>(h) &&
         2.0 * static_cast<double>(d[1]) <= kWinogradMaxDilatedSpan * static_cast<double>(w);
}

// KiB of a convolution's weights (fp32, as built) per 2x2 output tile.
double weight_kib_per_tile(const ir::Graph& graph, const ir::Node& n) {
  const double bytes = 4.0 * static_cast<double>(ir::num_elements(graph.value(n.inputs[1]).shape));
  return bytes / 1024.0 / static_cast<double>(std::max<int64_t>(1, winograd_tiles(graph, n)));
}

std::vector<ParamSpec> SelectLoweringPass::params() const {
  std::vector<ParamSpec> out;
  for (const ClassSpec& c : classes()) {
    out.push_back(
        choice_param(c.param, c.choices, c.default_choice, std::string("lowering of ") + c.help));
  }
  // ResNet-18 b1 on a Sapphire Rapids VM (cuvil-bench run --probes ops): layer4's 7x7 outputs
  // (16 tiles) took 2.1-2.2 ms by Winograd and 1.64-1.73 ms direct; layer3's 14x14 (49 tiles)
  // 1.58 vs 1.50; layer2's 28x28 (196 tiles) 0.66 vs 1.28.
  out.push_back(int_param("winograd_min_tiles", 0, 4096, 32,
                          "conv_3x3 nodes lowered to Winograd with fewer 2x2 output tiles than "
                          "this (batch x ceil(OH/2) x ceil(OW/2)) run the direct kernel: with few "
                          "tiles Winograd streams its larger transformed weights for little work"));
  // SDXL 256px and 512px on a Zen 5 class EPYC, every conv_3x3 by Winograd and direct
  // (cuvil-bench run --probes ops, docs/performance.md): up to 169 KiB of fp32 weights per tile
  // Winograd was 1.3-2.7x faster; from 225 KiB direct was as fast or faster, 1.5-1.6x at 900-1800
  // KiB (SDXL's 1280- to 2560-channel 16x16 convolutions); ResNet-50's have at most 48 KiB. bf16
  // Winograd (O3) moves the crossing to 675-900 KiB (configs/opt/O3.cpu.cuvilpass).
  out.push_back(int_param("winograd_max_tile_kib", 1, int64_t{1} << 20, 192,
                          "conv_3x3 nodes lowered to Winograd with more than this many KiB of "
                          "weights per 2x2 output tile run the direct kernel: few tiles cannot "
                          "amortise the larger transformed weights of many channels"));
  return out;
}

void SelectLoweringPass::run(ir::Graph& graph, const ParamMap& params) const {
  int64_t fallbacks = 0, chosen = 0;
  for (ir::Node& n : graph.mutable_nodes()) {
    if (n.attrs.has("impl")) continue;
    const ClassSpec* spec = nullptr;
    const std::string cls = n.op == OpKind::conv2d ? conv_class(graph, n) : "";
    for (const ClassSpec& c : classes()) {
      if (c.op == n.op && (n.op != OpKind::conv2d || cls == c.param)) spec = &c;
    }
    if (!spec) continue;
    std::string choice = param_choice(params, spec->param);
    if (choice == "winograd" &&
        (graph.value(n.inputs[1]).shape[1] < kWinogradMinChannels ||
         !dilated_window_fits(graph, n) ||
         winograd_tiles(graph, n) < param_int(params, "winograd_min_tiles") ||
         weight_kib_per_tile(graph, n) >
             static_cast<double>(param_int(params, "winograd_max_tile_kib")))) {
      choice = "direct";
    }
    // The kernel table says which kernel each choice names (runtime::KernelInfo::choice).
    const std::string op(ir::to_string(n.op));
    const bool blocked = is_blocked(n);
    const runtime::KernelInfo* k = runtime::find_choice_kernel(n.op, choice, blocked);
    CUVIL_CHECK(k || blocked, "select-lowering: no " + op + " kernel is named '" + choice + "'");
    auto runs = [&](const runtime::KernelInfo* kernel) {
      return kernel && (!kernel->supports || kernel->supports(probe_step(graph, n)));
    };
    if (!runs(k)) {
      const std::vector<std::string> chain =
          blocked ? std::vector<std::string>{kBlockedConvChoice} : spec->fallbacks;
      for (size_t i = 0; i < chain.size(); ++i) {
        k = runtime::find_choice_kernel(n.op, chain[i], blocked);
        CUVIL_CHECK(k, "select-lowering: no " + op + " kernel is named '" + chain[i] + "'");
        if (i + 1 == chain.size() || runs(k)) break;
      }
      ++fallbacks;
    }
    // The class's choice picked the kernel; the Winograd limits had their say where it was
    // asked for.
    std::string origin = "select-lowering." + std::string(spec->param);
    if (param_choice(params, spec->param) == "winograd")
      origin += ",select-lowering.winograd_min_tiles,select-lowering.winograd_max_tile_kib";
    n.attrs.set("impl", k->name, origin);
    ++chosen;
  }
  graph.annotations["select-lowering.nodes"] += chosen;
  graph.annotations["select-lowering.fallbacks"] += fallbacks;
}

}  // namespace cuvil::passes
