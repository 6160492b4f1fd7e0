#include "probes/cupti/range_metrics.h"

#include <cctype>

#include "base/error.h"
#include "probes/cupti/cupti_library.h"

namespace cuvil::probes::cupti {

std::vector<std::string> default_gpu_metrics() {
  return {"dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
          "gpu__time_duration.sum"};
}

void check_metric_name(const std::string& name) {
  // unit__counter, then optional .rollup and .submetric parts: lower-case words and digits.
  const size_t separator = name.find("__");
  bool valid = separator != std::string::npos && separator > 0 && separator + 2 < name.size();
  bool previous_dot = true;
  for (size_t i = 0; valid && i < name.size(); ++i) {
    const char c = name[i];
    if (c == '.') {
      valid = !previous_dot && i > separator;
      previous_dot = true;
      continue;
    }
    valid = std::islower(static_cast<unsigned char>(c)) ||
            std::isdigit(static_cast<unsigned char>(c)) || c == '_';
    previous_dot = false;
  }
  if (!valid || previous_dot) {
    throw UserError("'" + name +
                    "' is not a GPU metric name (expected unit__counter.rollup, e.g. "
                    "dram__bytes_read.sum)");
  }
}

namespace {

template <typename Params>
Params make_params(size_t struct_size) {
  Params params{};
  params.structSize = struct_size;
  params.pPriv = nullptr;
  return params;
}

}  // namespace

struct GpuRangeMetrics::State {
  const CuptiLibrary* library = nullptr;
  std::vector<std::string> metrics;
  std::vector<const char*> metric_names;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<uint8_t> availability, config, counter_data;
  size_t passes = 1;
  bool all_passes_submitted = false;
  bool decoded = false;

  ~State() {
    if (profiler != nullptr) {
      auto params = make_params<CUpti_RangeProfiler_Disable_Params>(
          CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
      params.pRangeProfilerObject = profiler;
      library->cuptiRangeProfilerDisable(&params);
    }
    if (host != nullptr) {
      auto params = make_params<CUpti_Profiler_Host_Deinitialize_Params>(
          CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
      params.pHostObject = host;
      library->cuptiProfilerHostDeinitialize(&params);
    }
  }
};

GpuRangeMetrics::GpuRangeMetrics(std::unique_ptr<State> state) : state_(std::move(state)) {}
GpuRangeMetrics::GpuRangeMetrics(GpuRangeMetrics&&) noexcept = default;
GpuRangeMetrics& GpuRangeMetrics::operator=(GpuRangeMetrics&&) noexcept = default;
GpuRangeMetrics::~GpuRangeMetrics() = default;

GpuRangeMetrics GpuRangeMetrics::start(const std::vector<std::string>& metrics, size_t max_ranges,
                                       int device_index) {
  if (metrics.empty()) throw UserError("no GPU metrics requested");
  for (const std::string& metric : metrics) check_metric_name(metric);
  const CuptiLibrary& library = CuptiLibrary::get();
  auto state = std::make_unique<State>();
  state->library = &library;
  state->metrics = metrics;
  for (const std::string& metric : state->metrics) state->metric_names.push_back(metric.c_str());

  {
    auto params =
        make_params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
    library.check(library.cuptiProfilerInitialize(&params), "cuptiProfilerInitialize");
  }
  CUcontext context = nullptr;
  if (library.cuCtxGetCurrent == nullptr || library.cuCtxGetCurrent(&context) != 0 ||
      context == nullptr) {
    throw UserError("GPU metrics need a current CUDA context on this thread (none is current)");
  }
  {
    auto params = make_params<CUpti_RangeProfiler_Enable_Params>(
        CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    params.ctx = context;
    library.check(library.cuptiRangeProfilerEnable(&params), "cuptiRangeProfilerEnable");
    state->profiler = params.pRangeProfilerObject;
  }
  const char* chip = nullptr;
  {
    auto params =
        make_params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
    params.deviceIndex = static_cast<size_t>(device_index);
    library.check(library.cuptiDeviceGetChipName(&params), "cuptiDeviceGetChipName");
    chip = params.pChipName;
  }
  {
    // Which counters this device (and whoever else profiles it) leaves available.
    auto params = make_params<CUpti_Profiler_GetCounterAvailability_Params>(
        CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE);
    params.ctx = context;
    library.check(library.cuptiProfilerGetCounterAvailability(&params),
                  "cuptiProfilerGetCounterAvailability");
    state->availability.resize(params.counterAvailabilityImageSize);
    params.pCounterAvailabilityImage = state->availability.data();
    library.check(library.cuptiProfilerGetCounterAvailability(&params),
                  "cuptiProfilerGetCounterAvailability");
  }
  {
    auto params = make_params<CUpti_Profiler_Host_Initialize_Params>(
        CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    params.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    params.pChipName = chip;
    params.pCounterAvailabilityImage = state->availability.data();
    library.check(library.cuptiProfilerHostInitialize(&params), "cuptiProfilerHostInitialize");
    state->host = params.pHostObject;
  }
  {
    auto params = make_params<CUpti_Profiler_Host_ConfigAddMetrics_Params>(
        CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE);
    params.pHostObject = state->host;
    params.ppMetricNames = state->metric_names.data();
    params.numMetrics = state->metric_names.size();
    library.check(library.cuptiProfilerHostConfigAddMetrics(&params),
                  "cuptiProfilerHostConfigAddMetrics");
  }
  {
    auto size = make_params<CUpti_Profiler_Host_GetConfigImageSize_Params>(
        CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE);
    size.pHostObject = state->host;
    library.check(library.cuptiProfilerHostGetConfigImageSize(&size),
                  "cuptiProfilerHostGetConfigImageSize");
    state->config.resize(size.configImageSize);
    auto image = make_params<CUpti_Profiler_Host_GetConfigImage_Params>(
        CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE);
    image.pHostObject = state->host;
    image.configImageSize = state->config.size();
    image.pConfigImage = state->config.data();
    library.check(library.cuptiProfilerHostGetConfigImage(&image),
                  "cuptiProfilerHostGetConfigImage");
    auto passes = make_params<CUpti_Profiler_Host_GetNumOfPasses_Params>(
        CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE);
    passes.configImageSize = state->config.size();
    passes.pConfigImage = state->config.data();
    library.check(library.cuptiProfilerHostGetNumOfPasses(&passes),
                  "cuptiProfilerHostGetNumOfPasses");
    state->passes = passes.numOfPasses;
  }
  {
    auto size = make_params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    size.pRangeProfilerObject = state->profiler;
    size.pMetricNames = state->metric_names.data();
    size.numMetrics = state->metric_names.size();
    size.maxNumOfRanges = max_ranges;
    size.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
    library.check(library.cuptiRangeProfilerGetCounterDataSize(&size),
                  "cuptiRangeProfilerGetCounterDataSize");
    state->counter_data.resize(size.counterDataSize);
    auto init = make_params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    init.pRangeProfilerObject = state->profiler;
    init.counterDataSize = state->counter_data.size();
    init.pCounterData = state->counter_data.data();
    library.check(library.cuptiRangeProfilerCounterDataImageInitialize(&init),
                  "cuptiRangeProfilerCounterDataImageInitialize");
  }
  {
    auto params = make_params<CUpti_RangeProfiler_SetConfig_Params>(
        CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    params.pRangeProfilerObject = state->profiler;
    params.configSize = state->config.size();
    params.pConfig = state->config.data();
    params.counterDataImageSize = state->counter_data.size();
    params.pCounterDataImage = state->counter_data.data();
    params.range = CUPTI_UserRange;
    params.replayMode = CUPTI_UserReplay;
    params.maxRangesPerPass = max_ranges;
    params.numNestingLevels = 1;
    params.minNestingLevel = 1;
    params.passIndex = 0;
    params.targetNestingLevel = 1;
    library.check(library.cuptiRangeProfilerSetConfig(&params), "cuptiRangeProfilerSetConfig");
  }
  return GpuRangeMetrics(std::move(state));
}

size_t GpuRangeMetrics::pass_count() const {
  return state_->passes;
}

void GpuRangeMetrics::begin_pass() {
  auto params =
      make_params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
  params.pRangeProfilerObject = state_->profiler;
  state_->library->check(state_->library->cuptiRangeProfilerStart(&params),
                         "cuptiRangeProfilerStart");
}

void GpuRangeMetrics::push_range(const std::string& name) {
  auto params = make_params<CUpti_RangeProfiler_PushRange_Params>(
      CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE);
  params.pRangeProfilerObject = state_->profiler;
  params.pRangeName = name.c_str();
  state_->library->check(state_->library->cuptiRangeProfilerPushRange(&params),
                         "cuptiRangeProfilerPushRange");
}

void GpuRangeMetrics::pop_range() {
  auto params = make_params<CUpti_RangeProfiler_PopRange_Params>(
      CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE);
  params.pRangeProfilerObject = state_->profiler;
  state_->library->check(state_->library->cuptiRangeProfilerPopRange(&params),
                         "cuptiRangeProfilerPopRange");
}

bool GpuRangeMetrics::end_pass() {
  auto params =
      make_params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  params.pRangeProfilerObject = state_->profiler;
  state_->library->check(state_->library->cuptiRangeProfilerStop(&params),
                         "cuptiRangeProfilerStop");
  state_->all_passes_submitted = params.isAllPassSubmitted != 0;
  return state_->all_passes_submitted;
}

std::vector<RangeMetricValues> GpuRangeMetrics::results() {
  const CuptiLibrary& library = *state_->library;
  if (!state_->all_passes_submitted) {
    throw UserError("GPU metrics: " + std::to_string(state_->passes) +
                    " passes are needed and not all were run");
  }
  if (!state_->decoded) {
    auto params = make_params<CUpti_RangeProfiler_DecodeData_Params>(
        CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
    params.pRangeProfilerObject = state_->profiler;
    library.check(library.cuptiRangeProfilerDecodeData(&params), "cuptiRangeProfilerDecodeData");
    state_->decoded = true;
  }
  auto info = make_params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = state_->counter_data.data();
  info.counterDataImageSize = state_->counter_data.size();
  library.check(library.cuptiRangeProfilerGetCounterDataInfo(&info),
                "cuptiRangeProfilerGetCounterDataInfo");
  std::vector<RangeMetricValues> results;
  for (size_t range = 0; range < info.numTotalRanges; ++range) {
    RangeMetricValues entry;
    auto name = make_params<CUpti_RangeProfiler_CounterData_GetRangeInfo_Params>(
        CUpti_RangeProfiler_CounterData_GetRangeInfo_Params_STRUCT_SIZE);
    name.pCounterDataImage = state_->counter_data.data();
    name.counterDataImageSize = state_->counter_data.size();
    name.rangeIndex = range;
    name.rangeDelimiter = "/";
    library.check(library.cuptiRangeProfilerCounterDataGetRangeInfo(&name),
                  "cuptiRangeProfilerCounterDataGetRangeInfo");
    entry.range = name.rangeName != nullptr ? name.rangeName : "";
    entry.values.assign(state_->metric_names.size(), 0.0);
    auto values = make_params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    values.pHostObject = state_->host;
    values.pCounterDataImage = state_->counter_data.data();
    values.counterDataImageSize = state_->counter_data.size();
    values.rangeIndex = range;
    values.ppMetricNames = state_->metric_names.data();
    values.numMetrics = state_->metric_names.size();
    values.pMetricValues = entry.values.data();
    library.check(library.cuptiProfilerHostEvaluateToGpuValues(&values),
                  "cuptiProfilerHostEvaluateToGpuValues");
    results.push_back(std::move(entry));
  }
  return results;
}

const std::vector<std::string>& GpuRangeMetrics::metrics() const {
  return state_->metrics;
}

}  // namespace cuvil::probes::cupti
