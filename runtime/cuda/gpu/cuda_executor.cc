// The GPU executor: device memory from the host-side DeviceLayout, constants uploaded once,
// launches built per step (step_launches.cc), CUDA Graph capture per the capture plan.
#include "runtime/cuda/cuda_executor.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "probes/cupti/activity_tracer.h"
#include "probes/cupti/op_regions.h"
#include "runtime/cuda/codegen/conv.h"
#include "runtime/cuda/gpu/executor_state.h"

namespace cuvil::runtime::cuda {

DeviceBuffer::DeviceBuffer(int64_t bytes, const char* what) : bytes_(bytes) {
  if (bytes <= 0) return;
  const cudaError_t status = cudaMalloc(&ptr_, static_cast<size_t>(bytes));
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: clear it
    throw CudaError(std::string("cannot allocate ") + std::to_string(bytes >> 20) + " MiB of " +
                    what + " on the device: " + status_text(status));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_ != nullptr) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = other.ptr_;
    bytes_ = other.bytes_;
    other.ptr_ = nullptr;
    other.bytes_ = 0;
  }
  return *this;
}

SimpleKernels::SimpleKernels(codegen::KernelCache& cache, int sm_arch) {
  codegen::KernelSource source{"cuvil_simple_kernels", simple::source(), {"-std=c++17"}};
  const codegen::CompiledKernel compiled = cache.get(source, sm_arch);
  CUVIL_CUDA_CHECK(cudaLibraryLoadData(&library_, compiled.cubin.data(), nullptr, nullptr, 0,
                                       nullptr, nullptr, 0));
  for (const char* name : simple::kKernelNames) {
    cudaKernel_t kernel = nullptr;
    CUVIL_CUDA_CHECK(cudaLibraryGetKernel(&kernel, library_, name));
    kernels_[name] = kernel;
  }
}

SimpleKernels::~SimpleKernels() {
  if (library_ != nullptr) cudaLibraryUnload(library_);
}

cudaKernel_t SimpleKernels::get(const char* name) const {
  auto it = kernels_.find(name);
  CUVIL_CHECK(it != kernels_.end(), std::string("no simple kernel ") + name);
  return it->second;
}

CudnnConv::~CudnnConv() {
  if (x) cudnnDestroyTensorDescriptor(x);
  if (y) cudnnDestroyTensorDescriptor(y);
  if (w) cudnnDestroyFilterDescriptor(w);
  if (conv) cudnnDestroyConvolutionDescriptor(conv);
}

DeviceState::~DeviceState() {
  if (stream) cudaStreamSynchronize(stream);
  convs.clear();
  generated.clear();
  simple.reset();
  if (cudnn) cudnnDestroy(cudnn);
  if (cublaslt) cublasLtDestroy(cublaslt);
  if (cublas) cublasDestroy(cublas);
  if (stream) cudaStreamDestroy(stream);
}

codegen::LoadedKernel* DeviceState::load(const codegen::KernelSource& source) {
  auto it = generated.find(source.name);
  if (it != generated.end()) return it->second.get();
  auto kernel = std::make_unique<codegen::LoadedKernel>(cache.get(source, info.sm_arch()));
  codegen::LoadedKernel* raw = kernel.get();
  generated[source.name] = std::move(kernel);
  return raw;
}

struct CudaExecutor::State {
  Plan plan;
  std::vector<StepLowering> lowering;
  DeviceLayout layout;
  DeviceState dev;
  std::vector<std::vector<Launch>> launches;  // per step
  std::vector<CaptureSegment> segments;
  std::vector<cudaGraphExec_t> graphs;  // per segment; null: stream launches
  bool prepared_graphs = false;
  cudaEvent_t start = nullptr, stop = nullptr;

  ~State() {
    for (cudaGraphExec_t g : graphs) {
      if (g) cudaGraphExecDestroy(g);
    }
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
  }

  void run_steps(size_t begin, size_t end) {
    // Op regions tie CUPTI's kernel records to steps while a tracer runs (eager launches only:
    // a replayed graph's kernels carry the correlation of its capture).
    const bool regions = probes::cupti::op_regions_active();
    for (size_t i = begin; i < end; ++i) {
      if (regions) probes::cupti::push_op_region(i);
      for (const Launch& l : launches[i]) l(dev.stream);
      if (regions) probes::cupti::pop_op_region();
    }
  }

  void run_eager() { run_steps(0, launches.size()); }

  // Captures every segment the plan marked; a failed capture demotes its segment, with the
  // CUDA error as the reason. Runs after one eager run (lazy module loading, attributes).
  void capture() {
    graphs.assign(segments.size(), nullptr);
    for (size_t i = 0; i < segments.size(); ++i) {
      CaptureSegment& seg = segments[i];
      if (!seg.captured) continue;
      std::string failure;
      cudaGraph_t graph = nullptr;
      cudaError_t status = cudaStreamBeginCapture(dev.stream, cudaStreamCaptureModeThreadLocal);
      if (status == cudaSuccess) {
        try {
          run_steps(seg.begin, seg.end);
        } catch (const UserError& e) {
          failure = e.what();
        }
        status = cudaStreamEndCapture(dev.stream, &graph);
      }
      if (failure.empty() && status != cudaSuccess) failure = status_text(status);
      if (failure.empty()) {
        status = cudaGraphInstantiate(&graphs[i], graph, 0);
        if (status != cudaSuccess) failure = "instantiation failed: " + status_text(status);
      }
      if (graph) cudaGraphDestroy(graph);
      if (!failure.empty()) {
        (void)cudaGetLastError();
        graphs[i] = nullptr;
        seg.captured = false;
        seg.reason = "capture failed: " + failure;
      }
    }
    prepared_graphs = true;
  }

  void run_planned() {
    for (size_t i = 0; i < segments.size(); ++i) {
      if (graphs[i]) {
        CUVIL_CUDA_CHECK(cudaGraphLaunch(graphs[i], dev.stream));
      } else {
        run_steps(segments[i].begin, segments[i].end);
      }
    }
  }

  void upload_constants();
};

namespace {

// A constant's fp32 data as the plan holds it.
const std::vector<float>& host_constant(const Plan& plan, int32_t tensor) {
  const PlanTensor& t = plan.tensors[static_cast<size_t>(tensor)];
  return *plan.constants[static_cast<size_t>(t.index)];
}

// The plan's conv step reading `tensor` as its weight (for the repack geometry).
const Step* conv_reading(const Plan& plan, int32_t tensor) {
  for (const Step& s : plan.steps) {
    if (s.op == ir::OpKind::conv2d && s.inputs.size() > 1 && s.inputs[1] == tensor) return &s;
  }
  return nullptr;
}

}  // namespace

void CudaExecutor::State::upload_constants() {
  // f32 as-is slots are copied straight in; other forms go through an f32 staging buffer on the
  // device and a conversion or repack kernel, so the host never converts.
  int64_t staging_bytes = 0;
  for (const ConstantSlot& slot : layout.constants) {
    if (slot.type != StorageType::f32 || slot.form != WeightForm::as_is) {
      staging_bytes =
          std::max(staging_bytes,
                   ir::num_elements(plan.tensors[static_cast<size_t>(slot.tensor)].shape) * 4);
    }
  }
  DeviceBuffer staging(staging_bytes, "constant staging");
  for (const ConstantSlot& slot : layout.constants) {
    const std::vector<float>& data = host_constant(plan, slot.tensor);
    char* dst = dev.constants.get() + slot.offset;
    const size_t bytes = data.size() * 4;
    if (slot.type == StorageType::f32 && slot.form == WeightForm::as_is) {
      CUVIL_CUDA_CHECK(cudaMemcpy(dst, data.data(), bytes, cudaMemcpyHostToDevice));
      continue;
    }
    // On the executor's (non-blocking) stream, so the conversion below is ordered after it.
    CUVIL_CUDA_CHECK(
        cudaMemcpyAsync(staging.get(), data.data(), bytes, cudaMemcpyHostToDevice, dev.stream));
    if (slot.form == WeightForm::as_is) {
      const int64_t count = static_cast<int64_t>(data.size());
      simple::ConvertParams p{staging.get(), dst, count, 0, slot.type == StorageType::bf16 ? 1 : 2};
      simple_launch(*dev.simple, "cuvil_convert", dim3(simple::grid_for(count)),
                    dim3(simple::kThreads), p)(dev.stream);
    } else {
      const Step* conv = conv_reading(plan, slot.tensor);
      CUVIL_CHECK(conv != nullptr, "repacked weight without a conv");
      const ir::Shape& w = conv->input_shapes[1];
      codegen::ConvProblem problem;
      problem.groups = conv->attrs.get_int("groups", 1);
      problem.o = w[0];
      problem.c = w[1] * problem.groups;
      problem.kh = w[2];
      problem.kw = w[3];
      const codegen::ElemType to = slot.type == StorageType::f32    ? codegen::ElemType::f32
                                   : slot.type == StorageType::bf16 ? codegen::ElemType::bf16
                                                                    : codegen::ElemType::f16;
      codegen::ConvRepackParams p{staging.get(), dst, w[0], w[1], w[2], w[3]};
      dev.load(codegen::conv_weight_repack_source(codegen::ElemType::f32, to))
          ->launch(codegen::conv_weight_repack_geometry(problem), &p, dev.stream);
    }
    // The staging buffer is reused by the next constant.
    CUVIL_CUDA_CHECK(cudaStreamSynchronize(dev.stream));
  }
  // The plain copies ran on the legacy default stream, which a non-blocking stream does not wait
  // for: finish everything before any step reads a weight.
  CUVIL_CUDA_CHECK(cudaDeviceSynchronize());
}

CudaExecutor::CudaExecutor(Plan plan, int device) : state_(std::make_unique<State>()) {
  require_cuda("--target cuda");
  State& s = *state_;
  s.plan = std::move(plan);
  CUVIL_CUDA_CHECK(cudaSetDevice(device));
  s.dev.info = device_info(device);
  s.lowering = lower_plan(s.plan);
  s.layout = layout_device_memory(s.plan, s.lowering);

  CUVIL_CUDA_CHECK(cudaStreamCreateWithFlags(&s.dev.stream, cudaStreamNonBlocking));
  CUVIL_CUDA_CHECK(cublasCreate(&s.dev.cublas));
  CUVIL_CUDA_CHECK(cublasLtCreate(&s.dev.cublaslt));
  CUVIL_CUDA_CHECK(cudnnCreate(&s.dev.cudnn));
  CUVIL_CUDA_CHECK(cudaEventCreate(&s.start));
  CUVIL_CUDA_CHECK(cudaEventCreate(&s.stop));
  s.dev.cublas_workspace = DeviceBuffer(kCublasWorkspaceBytes, "cuBLAS workspace");
  // One stream for everything; cublasSetStream resets the workspace, so the order matters. A
  // preset workspace is also what lets cuBLAS run inside a graph capture.
  CUVIL_CUDA_CHECK(cublasSetStream(s.dev.cublas, s.dev.stream));
  CUVIL_CUDA_CHECK(cublasSetWorkspace(s.dev.cublas, s.dev.cublas_workspace.get(),
                                      static_cast<size_t>(kCublasWorkspaceBytes)));
  CUVIL_CUDA_CHECK(cudnnSetStream(s.dev.cudnn, s.dev.stream));
  s.dev.simple = std::make_unique<SimpleKernels>(s.dev.cache, s.dev.info.sm_arch());

  s.dev.activations = DeviceBuffer(s.layout.activation_block_bytes, "activations");
  s.dev.constants = DeviceBuffer(s.layout.constants_bytes, "weights");
  s.dev.scratch = DeviceBuffer(s.layout.scratch_bytes, "operand conversion scratch");
  s.dev.tensor_f32.assign(s.plan.tensors.size(), nullptr);
  for (size_t i = 0; i < s.plan.tensors.size(); ++i) {
    const PlanTensor& t = s.plan.tensors[i];
    switch (t.storage) {
      case PlanTensor::Storage::arena:
        CUVIL_CHECK(t.offset >= 0 && t.offset + ir::num_elements(t.shape) * 4 <= s.plan.arena_bytes,
                    "tensor '" + t.name + "' lies outside the arena");
        CUVIL_CHECK(t.offset % 16 == 0, "tensor '" + t.name + "' is not 16-byte aligned");
        s.dev.tensor_f32[i] = s.dev.activations.get() + t.offset;
        break;
      case PlanTensor::Storage::input:
        s.dev.tensor_f32[i] =
            s.dev.activations.get() + s.layout.input_offsets[static_cast<size_t>(t.index)];
        break;
      case PlanTensor::Storage::constant:
        if (const ConstantSlot* slot =
                s.layout.find(static_cast<int32_t>(i), StorageType::f32, WeightForm::as_is)) {
          s.dev.tensor_f32[i] = s.dev.constants.get() + slot->offset;
        }
        break;
    }
  }
  s.upload_constants();
  for (size_t i = 0; i < s.plan.steps.size(); ++i) {
    s.launches.push_back(build_step_launches(s.dev, s.plan, s.layout, i, s.lowering[i]));
  }
  s.dev.cudnn_workspace =
      DeviceBuffer(static_cast<int64_t>(s.dev.cudnn_workspace_needed), "cuDNN workspace");
  s.segments = plan_capture(s.plan.steps.size(), capture_settings(s.plan), {});
  CUVIL_CUDA_CHECK(cudaStreamSynchronize(s.dev.stream));
}

CudaExecutor::~CudaExecutor() = default;

void CudaExecutor::upload_inputs(const std::vector<ir::Tensor>& inputs) {
  State& s = *state_;
  if (inputs.size() != s.plan.inputs.size()) {
    throw UserError("expected " + std::to_string(s.plan.inputs.size()) + " inputs, got " +
                    std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const PlanTensor& t = s.plan.tensors[static_cast<size_t>(s.plan.inputs[i])];
    if (inputs[i].shape != t.shape ||
        static_cast<int64_t>(inputs[i].data.size()) != ir::num_elements(t.shape)) {
      throw UserError("input " + std::to_string(i) + " ('" + t.name + "') has shape " +
                      ir::to_string(inputs[i].shape) + ", expected " + ir::to_string(t.shape));
    }
    CUVIL_CUDA_CHECK(cudaMemcpyAsync(s.dev.activations.get() + s.layout.input_offsets[i],
                                     inputs[i].data.data(), inputs[i].data.size() * 4,
                                     cudaMemcpyHostToDevice, s.dev.stream));
  }
  CUVIL_CUDA_CHECK(cudaStreamSynchronize(s.dev.stream));
}

double CudaExecutor::launch() {
  State& s = *state_;
  if (!s.prepared_graphs) {
    s.run_eager();  // loads modules lazily and sets kernel attributes outside any capture
    CUVIL_CUDA_CHECK(cudaStreamSynchronize(s.dev.stream));
    s.capture();
  }
  CUVIL_CUDA_CHECK(cudaEventRecord(s.start, s.dev.stream));
  s.run_planned();
  CUVIL_CUDA_CHECK(cudaEventRecord(s.stop, s.dev.stream));
  CUVIL_CUDA_CHECK(cudaEventSynchronize(s.stop));
  float ms = 0;
  CUVIL_CUDA_CHECK(cudaEventElapsedTime(&ms, s.start, s.stop));
  return static_cast<double>(ms) * 1e6;
}

std::vector<ir::Tensor> CudaExecutor::download_outputs() {
  State& s = *state_;
  std::vector<ir::Tensor> outputs;
  for (int32_t t : s.plan.outputs) {
    const PlanTensor& pt = s.plan.tensors[static_cast<size_t>(t)];
    ir::Tensor out(pt.shape, pt.dtype);
    const char* src = s.dev.tensor_f32[static_cast<size_t>(t)];
    CUVIL_CHECK(src != nullptr, "output '" + pt.name + "' has no f32 device copy");
    CUVIL_CUDA_CHECK(cudaMemcpy(out.data.data(), src, out.data.size() * 4, cudaMemcpyDeviceToHost));
    outputs.push_back(std::move(out));
  }
  return outputs;
}

std::vector<ir::Tensor> CudaExecutor::run(const std::vector<ir::Tensor>& inputs) {
  upload_inputs(inputs);
  launch();
  return download_outputs();
}

std::vector<double> CudaExecutor::step_times_ns() {
  State& s = *state_;
  const size_t n = s.plan.steps.size();
  std::vector<cudaEvent_t> events(n + 1, nullptr);
  for (cudaEvent_t& e : events) CUVIL_CUDA_CHECK(cudaEventCreate(&e));
  std::vector<double> out(n, 0.0);
  try {
    CUVIL_CUDA_CHECK(cudaEventRecord(events[0], s.dev.stream));
    for (size_t i = 0; i < n; ++i) {
      s.run_steps(i, i + 1);
      CUVIL_CUDA_CHECK(cudaEventRecord(events[i + 1], s.dev.stream));
    }
    CUVIL_CUDA_CHECK(cudaEventSynchronize(events[n]));
    for (size_t i = 0; i < n; ++i) {
      float ms = 0;
      CUVIL_CUDA_CHECK(cudaEventElapsedTime(&ms, events[i], events[i + 1]));
      out[i] = static_cast<double>(ms) * 1e6;
    }
  } catch (...) {
    for (cudaEvent_t e : events) cudaEventDestroy(e);
    throw;
  }
  for (cudaEvent_t e : events) cudaEventDestroy(e);
  return out;
}

std::vector<double> CudaExecutor::cupti_step_busy_ns() {
  State& s = *state_;
  probes::cupti::GpuActivityTracer tracer = probes::cupti::GpuActivityTracer::start();
  s.run_eager();
  CUVIL_CUDA_CHECK(cudaStreamSynchronize(s.dev.stream));
  tracer.flush();
  tracer.stop();
  std::vector<double> out(s.plan.steps.size(), 0.0);
  for (const probes::cupti::OpGpuSummary& op : tracer.log().per_op()) {
    if (op.op >= 0 && static_cast<size_t>(op.op) < out.size()) {
      out[static_cast<size_t>(op.op)] = static_cast<double>(op.busy_ns);
    }
  }
  return out;
}

const Plan& CudaExecutor::plan() const {
  return state_->plan;
}
const std::vector<StepLowering>& CudaExecutor::lowering() const {
  return state_->lowering;
}
const DeviceLayout& CudaExecutor::layout() const {
  return state_->layout;
}
const DeviceInfo& CudaExecutor::device() const {
  return state_->dev.info;
}
const std::vector<CaptureSegment>& CudaExecutor::capture_segments() const {
  return state_->segments;
}

std::string CudaExecutor::summary() const {
  const State& s = *state_;
  auto mib = [](int64_t b) { return std::to_string(b >> 20) + " MiB"; };
  std::string out = describe(s.dev.info) + ": arena " + mib(s.layout.arena_bytes) + ", weights " +
                    mib(s.layout.constants_bytes) + ", scratch " + mib(s.layout.scratch_bytes) +
                    ", cuDNN workspace " + mib(static_cast<int64_t>(s.dev.cudnn_workspace_needed)) +
                    "\n";
  std::map<std::string, int> kernels;
  for (const StepLowering& l : s.lowering) ++kernels[l.kernel];
  out += "kernels:";
  for (const auto& [name, count] : kernels) out += " " + name + " x" + std::to_string(count);
  out += "\n";
  for (size_t i = 0; i < s.lowering.size(); ++i) {
    if (!s.lowering[i].fallback.empty()) {
      out += "fallback: step " + std::to_string(i) + " ('" + s.plan.steps[i].node_name + "') " +
             s.lowering[i].requested + " -> " + s.lowering[i].kernel + ": " +
             s.lowering[i].fallback + "\n";
    }
  }
  out += "capture (" + std::string(to_string(capture_settings(s.plan).mode)) +
         "): " + cuda::describe(s.segments, s.plan) +
         (s.prepared_graphs ? "" : " (not yet captured)");
  return out;
}

}  // namespace cuvil::runtime::cuda
