// ResNet-50's distinct convolutions (batch 1, 224 px, NHWC, bias + ReLU fused as after BN
// folding) through every conv lowering side by side in one binary: 1x1-as-GEMM, im2col + GEMM,
// direct NHWC, Winograd (3x3 stride 1), direct on blocked nchw16c activations, and the oneDNN
// library; for 3x3 stride-1 shapes also oneDNN's own Winograd on its blocked layout. Then
// MobileNet's depthwise 3x3 convolutions ("mbv2_dw...", "mbv3s_dw...", groups = channels) through
// the depthwise kernel, the direct NHWC and im2col kernels and oneDNN, and convolutions whose
// channels are not a multiple of 16 ("odd_...": each tap ends inside a vector, which the bf16
// kernel's in-place gather assembles from several loads) through conv2d.bf16 and the fp32 ones,
// and the bottlenecks' last 1x1 convolutions with the residual add fused ("res_..."). Winograd's
// GFLOP/s are effective ones (the direct convolution's FLOPs over its time). Each case is lowered
// by passes::lower (so prepare hooks pack or reorder the weights once, outside the timed loop) and
// its one step is timed alone. Counters: GFLOP/s (2 FLOPs per multiply-accumulate) and % of this
// machine's measured peak of the kernel's arithmetic (fp32 FMA; bf16 or int8 dot products).
//
//   build-conv/bench_suite/micro/cuvil-micro-conv                 (threads: CUVIL_THREADS, else
//   all) build-conv/bench_suite/micro/cuvil-micro-conv --benchmark_filter='layer4'
//   CUVIL_LAYOUT=nchw build-conv/bench_suite/micro/cuvil-micro-conv   (im2col, gemm, onednn only)
//   CUVIL_CONV=vectors=4,channels_per_pass=16 .../cuvil-micro-conv --benchmark_filter=direct_nhwc
//     (conv-tiling's knobs, "key=value,..." set as the step's conv.KEY attributes)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/error.h"
#include "bench_suite/micro/bench_threads.h"
#include "bench_suite/micro/counters.h"
#include "passes/ir/graph.h"
#include "passes/lower.h"
#include "probes/machine_peak.h"
#include "runtime/kernel_table.h"
#include "runtime/onednn/onednn_common.h"
#include "runtime/thread_pool.h"

namespace {

namespace micro = cuvil::bench::micro;
using micro::bench_pool;
using micro::bench_threads;

using cuvil::ir::Graph;
using cuvil::ir::OpKind;
using cuvil::ir::Shape;

std::string bench_layout() {
  const char* env = std::getenv("CUVIL_LAYOUT");
  return env && std::string(env) == "nchw" ? "nchw" : "nhwc";
}

// conv-tiling attributes from CUVIL_CONV ("key=value,..."), to explore the knobs' effect.
void add_conv_tiling_attrs(cuvil::ir::Attrs& attrs) {
  const char* env = std::getenv("CUVIL_CONV");
  if (!env) return;
  std::string spec = env;
  for (size_t begin = 0; begin < spec.size();) {
    size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(begin, end - begin);
    const size_t eq = item.find('=');
    if (eq != std::string::npos) {
      const std::string key = "conv." + item.substr(0, eq), value = item.substr(eq + 1);
      char* rest = nullptr;
      const long long number = std::strtoll(value.c_str(), &rest, 10);
      if (!value.empty() && *rest == '\0') {
        attrs.set(key, static_cast<int64_t>(number));
      } else {
        attrs.set(key, value);
      }
    }
    begin = end + 1;
  }
}

struct ConvShape {
  const char* name;
  int64_t c, hw, o, k, stride;
  int64_t groups = 1;  // = c: depthwise
};

// Every distinct conv of torchvision's ResNet-50 v1.5 at 224 px (the stride sits in the 3x3).
const ConvShape kShapes[] = {
    {"stem_7x7s2", 3, 224, 64, 7, 2},
    {"layer1_1x1_64_64", 64, 56, 64, 1, 1},
    {"layer1_3x3_64", 64, 56, 64, 3, 1},
    {"layer1_1x1_64_256", 64, 56, 256, 1, 1},
    {"layer1_1x1_256_64", 256, 56, 64, 1, 1},
    {"layer2_1x1_256_128", 256, 56, 128, 1, 1},
    {"layer2_3x3s2_128", 128, 56, 128, 3, 2},
    {"layer2_1x1_128_512", 128, 28, 512, 1, 1},
    {"layer2_ds_1x1s2_256_512", 256, 56, 512, 1, 2},
    {"layer2_1x1_512_128", 512, 28, 128, 1, 1},
    {"layer2_3x3_128", 128, 28, 128, 3, 1},
    {"layer3_1x1_512_256", 512, 28, 256, 1, 1},
    {"layer3_3x3s2_256", 256, 28, 256, 3, 2},
    {"layer3_1x1_256_1024", 256, 14, 1024, 1, 1},
    {"layer3_ds_1x1s2_512_1024", 512, 28, 1024, 1, 2},
    {"layer3_1x1_1024_256", 1024, 14, 256, 1, 1},
    {"layer3_3x3_256", 256, 14, 256, 3, 1},
    {"layer4_1x1_1024_512", 1024, 14, 512, 1, 1},
    {"layer4_3x3s2_512", 512, 14, 512, 3, 2},
    {"layer4_1x1_512_2048", 512, 7, 2048, 1, 1},
    {"layer4_ds_1x1s2_1024_2048", 1024, 14, 2048, 1, 2},
    {"layer4_1x1_2048_512", 2048, 7, 512, 1, 1},
    {"layer4_3x3_512", 512, 7, 512, 3, 1},
};

// MobileNetV2's depthwise 3x3 convolutions (224 px; input size, channels, stride), pad 1, and
// MobileNetV3-Small's 88-channel one, whose channels end in a part vector (a tail tile).
const ConvShape kDepthwiseShapes[] = {
    {"mbv2_dw3x3_112_32", 32, 112, 32, 3, 1, 32},   {"mbv2_dw3x3s2_112_96", 96, 112, 96, 3, 2, 96},
    {"mbv2_dw3x3_56_144", 144, 56, 144, 3, 1, 144}, {"mbv2_dw3x3_28_192", 192, 28, 192, 3, 1, 192},
    {"mbv2_dw3x3_14_384", 384, 14, 384, 3, 1, 384}, {"mbv2_dw3x3_14_576", 576, 14, 576, 3, 1, 576},
    {"mbv2_dw3x3_7_960", 960, 7, 960, 3, 1, 960},   {"mbv3s_dw3x3_28_88", 88, 28, 88, 3, 1, 88},
};

// The 1x1 convolutions that end ResNet-50's bottlenecks ("res_..."): the residual add and ReLU
// fused, so the tile reads an operand of the output's size before it stores.
const ConvShape kResidualShapes[] = {
    {"res_layer1_1x1_64_256", 64, 56, 256, 1, 1},
    {"res_layer2_1x1_128_512", 128, 28, 512, 1, 1},
    {"res_layer3_1x1_256_1024", 256, 14, 1024, 1, 1},
    {"res_layer4_1x1_512_2048", 512, 7, 2048, 1, 1},
};

// GoogLeNet's 5x5 branch of inception 4b (24 -> 64 at 14 x 14) and 3x3 convolutions of 24 and 40
// channels (a tap of 1.5 and 2.5 vectors).
const ConvShape kOddChannelShapes[] = {
    {"odd_5x5_24", 24, 14, 64, 5, 1},
    {"odd_3x3_24", 24, 56, 64, 3, 1},
    {"odd_3x3_40", 40, 28, 80, 3, 1},
};

Graph conv_graph(const ConvShape& s, const std::string& layout, const std::string& kernel,
                 bool residual) {
  Graph g;
  const Shape x = layout == "nhwc"      ? Shape{1, s.hw, s.hw, s.c}
                  : layout == "nchw16c" ? Shape{1, (s.c + 15) / 16, s.hw, s.hw, 16}
                                        : Shape{1, s.c, s.hw, s.hw};
  const auto w = g.add_constant("w", {s.o, s.c / s.groups, s.k, s.k},
                                cuvil::ir::ConstantInit::normal(0, 0.05f, 1));
  const auto b = g.add_constant("b", {s.o}, cuvil::ir::ConstantInit::normal(0, 0.1f, 2));
  const int64_t pad = s.k / 2;
  cuvil::ir::Attrs attrs{{"stride", std::vector<int64_t>{s.stride, s.stride}},
                         {"pad", std::vector<int64_t>{pad, pad}},
                         {"groups", s.groups},
                         {"layout", layout},
                         {"impl", kernel}};
  add_conv_tiling_attrs(attrs);
  g.mark_output(g.add_node(OpKind::conv2d, {g.add_input("x", x), w, b}, attrs, "conv"));
  if (residual) {  // as the fusion pass leaves it: the operand appended after the op's inputs
    // The residual cases are stride 1 and never on the blocked layout (register_all).
    const Shape y = layout == "nhwc" ? Shape{1, s.hw, s.hw, s.o} : Shape{1, s.o, s.hw, s.hw};
    g.mutable_nodes()[0].inputs.push_back(g.add_input("residual", y));
    g.mutable_nodes()[0].epilogue = {{OpKind::add, 3}, {OpKind::relu, -1}};
  } else {
    g.mutable_nodes()[0].epilogue = {{OpKind::relu, -1}};
  }
  g.recompute();
  return g;
}

// The activations, 64-byte aligned like the executor's arena (a std::vector's large buffers are
// 16 bytes past a page: every 64-byte vector load spans two cache lines, which made the depthwise
// layers 1.2-1.5x slower with cuvil's kernel and up to 1.5x with oneDNN's).
struct AlignedFloats : std::unique_ptr<float, void (*)(void*)> {
  AlignedFloats(size_t n, float value)
      : std::unique_ptr<float, void (*)(void*)>(
            static_cast<float*>(std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64)),
            std::free) {
    std::fill(get(), get() + n, value);
  }
};

// GFLOP/s and % of this machine's measured peak of the kernel's arithmetic (fp32 FMA, or bf16 or
// int8 dot products where measured) for `flops` per iteration. `seconds`: the
// measured loop's wall time.
void set_rate_counters(benchmark::State& state, double flops, double seconds,
                       const std::string& kernel) {
  const double gflops =
      micro::per_second(flops * 1e-9 * static_cast<double>(state.iterations()), seconds);
  state.counters["GFLOP/s"] = gflops;
  static const cuvil::probes::MachinePeak machine = cuvil::probes::machine_peak(bench_threads());
  const double peak = machine.of(cuvil::runtime::kernel_arithmetic(kernel));
  if (peak > 0) state.counters["pct_peak_flops"] = micro::pct_of_peak(gflops, peak);
}

void run_conv(benchmark::State& state, ConvShape shape, std::string kernel, bool residual) {
  const std::string layout = kernel == "conv2d.direct_nchw16c" ? "nchw16c" : bench_layout();
  const Graph g = conv_graph(shape, layout, kernel, residual);
  cuvil::runtime::Plan plan;
  try {
    plan = cuvil::passes::lower(g, {bench_threads()});
  } catch (const cuvil::UserError& e) {  // a lowering this CPU lacks (bf16 without AVX512_BF16)
    state.SkipWithError(e.what());
    return;
  }
  const cuvil::runtime::Step& step = plan.steps.at(0);
  const size_t out_size = static_cast<size_t>(cuvil::ir::num_elements(step.output_shape));
  const AlignedFloats x(static_cast<size_t>(cuvil::ir::num_elements(step.input_shapes[0])), 0.5f);
  const AlignedFloats out(out_size, 0.0f);
  std::vector<const float*> in = {x.get()};
  std::vector<AlignedFloats> operands;  // graph inputs besides x: the residual
  for (size_t i = 1; i < step.inputs.size(); ++i) {
    const auto& t = plan.tensors[static_cast<size_t>(step.inputs[i])];
    if (t.storage != cuvil::runtime::PlanTensor::Storage::constant) {
      operands.emplace_back(static_cast<size_t>(cuvil::ir::num_elements(t.shape)), 0.25f);
      in.push_back(operands.back().get());
      continue;
    }
    // Null: a constant lowering released, as the prepared form replaced it (the kernel does not
    // read it).
    const auto& constant = plan.constants[static_cast<size_t>(t.index)];
    in.push_back(constant ? constant->data() : nullptr);
  }
  const cuvil::runtime::KernelArgs args{step, in.data(), out.get(), bench_pool()};
  step.fn(args);  // warm-up: scratch buffers, first-touch, oneDNN's JIT on first execution
  const micro::LoopTimer timer;
  for (auto _ : state) {
    step.fn(args);
    benchmark::DoNotOptimize(out.get());
    benchmark::ClobberMemory();
  }
  // Multiply-accumulates only: minus the ReLU (and the residual add).
  const double flops = step.flops - static_cast<double>(out_size) * (residual ? 2 : 1);
  set_rate_counters(state, flops, timer.seconds(), step.kernel);
  state.SetLabel(step.kernel);
}

// oneDNN's own Winograd (algorithm::convolution_winograd) on a 3x3 stride-1 shape. It exists only
// for oneDNN's blocked layouts (with our plain NHWC it cannot create a primitive), so here oneDNN
// picks every format itself and the activations are made in that format: no reorder is timed.
void run_onednn_winograd(benchmark::State& state, ConvShape s) {
  namespace onednn = cuvil::runtime::onednn;
  using dnnl::memory;
  onednn::use_threads(bench_threads());
  const auto f32 = memory::data_type::f32;
  const memory::desc src({1, s.c, s.hw, s.hw}, f32, memory::format_tag::any);
  const memory::desc wei({s.o, s.c, 3, 3}, f32, memory::format_tag::any);
  const memory::desc bias({s.o}, f32, memory::format_tag::x);
  const memory::desc dst({1, s.o, s.hw, s.hw}, f32, memory::format_tag::any);
  dnnl::post_ops relu;
  relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
  dnnl::primitive_attr attr;
  attr.set_post_ops(relu);
  dnnl::convolution_forward::primitive_desc pd;
  try {
    pd = dnnl::convolution_forward::primitive_desc(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                        dnnl::algorithm::convolution_winograd, src, wei, bias, dst,
                                        {1, 1}, {1, 1}, {1, 1}),
        attr, onednn::cpu_engine());
  } catch (const dnnl::error& e) {
    state.SkipWithError((std::string("oneDNN has no Winograd here: ") + e.what()).c_str());
    return;
  }
  dnnl::engine& eng = onednn::cpu_engine();
  memory x(pd.src_desc(), eng), w(pd.weights_desc(), eng), b(bias, eng), y(pd.dst_desc(), eng);
  for (memory* m : {&x, &w, &b}) {
    auto* data = static_cast<float*>(m->get_data_handle());
    std::fill(data, data + m->get_desc().get_size() / sizeof(float), 0.01f);
  }
  const dnnl::convolution_forward conv(pd);
  dnnl::stream stream(eng);
  const std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}};
  conv.execute(stream, args);  // warm-up
  stream.wait();
  const micro::LoopTimer timer;
  for (auto _ : state) {
    conv.execute(stream, args);
    stream.wait();
  }
  const double flops = 2.0 * s.hw * s.hw * s.o * s.c * 9;
  set_rate_counters(state, flops, timer.seconds(), "conv2d.onednn");
  state.SetLabel(std::string("oneDNN ") + pd.impl_info_str());
}

void register_conv(const ConvShape& s, const std::string& k, bool residual = false) {
  const std::string name = std::string("conv/") + s.name + "/" + k.substr(k.find('.') + 1);
  benchmark::RegisterBenchmark(name.c_str(), run_conv, s, k, residual)
      ->Unit(benchmark::kMicrosecond)
      ->MinTime(0.2)
      ->UseRealTime();
}

void register_all() {
  const std::string layout = bench_layout();
  for (const ConvShape& s : kShapes) {
    std::vector<std::string> kernels;
    if (s.k == 1 && s.stride == 1) kernels.push_back("conv2d.gemm_1x1");
    kernels.push_back("conv2d.im2col");
    if (layout == "nhwc") kernels.push_back("conv2d.direct_nhwc");
    if (layout == "nhwc" && s.k == 3 && s.stride == 1) kernels.push_back("conv2d.winograd_nhwc");
    if (layout == "nhwc" && s.k == 3 && s.stride == 1) kernels.push_back("conv2d.winograd_bf16");
    if (layout == "nhwc") kernels.push_back("conv2d.bf16");
    kernels.push_back("conv2d.direct_nchw16c");  // always on its own blocked layout
    kernels.push_back("conv2d.onednn");
    for (const std::string& k : kernels) register_conv(s, k);
    if (layout == "nhwc" && s.k == 3 && s.stride == 1) {
      const std::string name = std::string("conv/") + s.name + "/onednn_winograd_blocked";
      benchmark::RegisterBenchmark(name.c_str(), run_onednn_winograd, s)
          ->Unit(benchmark::kMicrosecond)
          ->MinTime(0.2)
          ->UseRealTime();
    }
  }
  for (const ConvShape& s : kResidualShapes) {
    if (layout == "nhwc") register_conv(s, "conv2d.direct_nhwc", true);
    if (layout == "nhwc") register_conv(s, "conv2d.bf16", true);
    register_conv(s, "conv2d.gemm_1x1", true);
    register_conv(s, "conv2d.onednn", true);
  }
  for (const ConvShape& s : kOddChannelShapes) {
    if (layout == "nhwc") register_conv(s, "conv2d.bf16");
    if (layout == "nhwc") register_conv(s, "conv2d.direct_nhwc");
    register_conv(s, "conv2d.im2col");
  }
  for (const ConvShape& s : kDepthwiseShapes) {
    if (layout == "nhwc") register_conv(s, "conv2d.depthwise_nhwc");
    if (layout == "nhwc") register_conv(s, "conv2d.direct_nhwc");
    register_conv(s, "conv2d.im2col");
    register_conv(s, "conv2d.onednn");
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("threads", std::to_string(bench_threads()));
  benchmark::AddCustomContext("layout", bench_layout());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
