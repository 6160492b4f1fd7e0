// `cuvil-bench run --probes ops -o OUT.json`: the roofline, OUT.roofline.svg. Each profiled op's
// achieved GFLOP/s against its arithmetic intensity (declared FLOPs per declared byte, log-log),
// under the roofs of this machine's measured peak: min(compute peak, bandwidth x intensity).
// Points are coloured by lowering (generated, onednn, ...); hover names the op and its kernel.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace cuvil::reports::pictures {

struct RooflineOp {
  std::string rung, node, op, kernel, lowering;
  double flops = 0, bytes = 0;  // declared, per call
  double ns = 0;                // per iteration
};

struct Roofline {
  std::string name;        // "resnet50, 2 thread(s)"
  double peak_gflops = 0;  // the compute roof; 0: not measured
  // Further compute roofs, dashed, for the ops of reduced-precision kernels: {"bf16", the CPU's
  // bf16 dot-product peak}, {"int8", ...}.
  std::vector<std::pair<std::string, double>> precision_roofs;
  double peak_gbps = 0;   // the bandwidth roof; 0: not measured
  std::string peak_note;  // where the roofs come from, e.g. "fp32 avx2, measured ..."
  std::vector<RooflineOp> ops;
};

// The <svg> element. Ops without FLOPs, bytes or time cannot be placed and are counted in the
// subtitle; each placed op is a point (class "point op lowering-<name>").
std::string roofline_svg(const Roofline& roofline);

}  // namespace cuvil::reports::pictures
