// CUPTI record handling on synthetic records (no GPU needed), and what CUPTI says when it cannot
// run. Built only with the CUDA toolkit.
#if CUVIL_HAVE_CUPTI

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "base/error.h"
#include "probes/cupti/activity_tracer.h"
#include "probes/cupti/cupti_library.h"
#include "probes/cupti/gpu_activity.h"
#include "probes/cupti/op_regions.h"
#include "probes/cupti/range_metrics.h"

namespace cuvil::probes::cupti {
namespace {

// Records laid back to back, 8-byte aligned, as next_packed_record walks them.
class SyntheticBuffer {
 public:
  template <typename Record>
  void add(const Record& record) {
    const size_t offset = bytes_.size();
    bytes_.resize(offset + ((sizeof(Record) + 7) & ~size_t{7}), 0);
    std::memcpy(bytes_.data() + offset, &record, sizeof(Record));
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(storage()); }
  size_t size() const { return bytes_.size(); }

 private:
  // Copied into 8-byte aligned storage on demand (vector<uint8_t> guarantees less).
  uint64_t* storage() {
    aligned_.assign((bytes_.size() + 7) / 8, 0);
    std::memcpy(aligned_.data(), bytes_.data(), bytes_.size());
    return aligned_.data();
  }
  std::vector<uint8_t> bytes_;
  std::vector<uint64_t> aligned_;
};

CUpti_ActivityKernel10 kernel(const char* name, uint64_t start, uint64_t end, uint32_t correlation,
                              uint32_t stream = 7) {
  CUpti_ActivityKernel10 record;
  std::memset(&record, 0, sizeof record);
  record.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  record.name = name;
  record.start = start;
  record.end = end;
  record.correlationId = correlation;
  record.streamId = stream;
  record.deviceId = 0;
  return record;
}

CUpti_ActivityMemcpy6 copy(uint8_t kind, uint64_t bytes, uint64_t start, uint64_t end,
                           uint32_t correlation) {
  CUpti_ActivityMemcpy6 record;
  std::memset(&record, 0, sizeof record);
  record.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  record.copyKind = kind;
  record.bytes = bytes;
  record.start = start;
  record.end = end;
  record.correlationId = correlation;
  return record;
}

CUpti_ActivityMemset4 set(uint64_t bytes, uint64_t start, uint64_t end, uint32_t correlation) {
  CUpti_ActivityMemset4 record;
  std::memset(&record, 0, sizeof record);
  record.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  record.bytes = bytes;
  record.start = start;
  record.end = end;
  record.correlationId = correlation;
  return record;
}

CUpti_ActivityExternalCorrelation link(
    uint32_t correlation, uint64_t op,
    CUpti_ExternalCorrelationKind kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
  CUpti_ActivityExternalCorrelation record;
  std::memset(&record, 0, sizeof record);
  record.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  record.externalKind = kind;
  record.externalId = op;
  record.correlationId = correlation;
  return record;
}

TEST(UnionLengthTest, OverlapsCountOnce) {
  EXPECT_EQ(union_length({}), 0u);
  EXPECT_EQ(union_length({{10, 20}}), 10u);
  EXPECT_EQ(union_length({{10, 20}, {30, 37}}), 17u);            // disjoint
  EXPECT_EQ(union_length({{10, 20}, {15, 30}}), 20u);            // overlapping
  EXPECT_EQ(union_length({{10, 50}, {20, 30}}), 40u);            // nested
  EXPECT_EQ(union_length({{30, 40}, {10, 20}, {19, 31}}), 30u);  // unordered, chained
  EXPECT_EQ(union_length({{10, 20}, {20, 23}}), 13u);            // touching
  EXPECT_EQ(union_length({{5, 5}, {9, 3}}), 0u);                 // empty and inverted
}

TEST(ActivityLogTest, WalksEveryRecordOfABuffer) {
  SyntheticBuffer buffer;
  buffer.add(link(1, 0));
  buffer.add(kernel("gemm", 100, 200, 1));
  buffer.add(copy(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 4096, 50, 90, 1));
  buffer.add(set(256, 210, 215, 2));
  buffer.add(kernel("softmax", 220, 260, 3));
  ActivityLog log;
  EXPECT_EQ(log.add_buffer(buffer.data(), buffer.size(), next_packed_record), 5u);
  EXPECT_EQ(log.record_count(), 4u);  // the correlation is bookkeeping, not an activity
  EXPECT_EQ(log.ignored_records(), 0u);
}

TEST(ActivityLogTest, TruncatedBufferStopsAtTheLastWholeRecord) {
  SyntheticBuffer buffer;
  buffer.add(kernel("a", 1, 2, 1));
  buffer.add(kernel("b", 3, 4, 2));
  ActivityLog log;
  EXPECT_EQ(log.add_buffer(buffer.data(), buffer.size() - 8, next_packed_record), 1u);
  EXPECT_EQ(log.add_buffer(buffer.data(), 0, next_packed_record), 0u);
}

TEST(ActivityLogTest, RecordsKeepNanosecondTimesNamesAndBytes) {
  SyntheticBuffer buffer;
  buffer.add(kernel("_Z4gemmPfS_", 1'000'000'123, 1'000'004'567, 11, 3));
  buffer.add(copy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 1 << 20, 1'000'005'000, 1'000'009'000, 12));
  ActivityLog log;
  log.add_buffer(buffer.data(), buffer.size(), next_packed_record);
  const std::vector<GpuActivity> activities = log.activities();
  ASSERT_EQ(activities.size(), 2u);
  EXPECT_EQ(activities[0].kind, GpuActivityKind::kernel);
  EXPECT_EQ(activities[0].name, "_Z4gemmPfS_");
  EXPECT_EQ(activities[0].start_ns, 1'000'000'123u);
  EXPECT_EQ(activities[0].duration_ns(), 4444u);
  EXPECT_EQ(activities[0].stream_id, 3u);
  EXPECT_EQ(activities[1].kind, GpuActivityKind::memcpy);
  EXPECT_EQ(activities[1].name, "memcpy DtoH");
  EXPECT_EQ(activities[1].bytes, 1u << 20);
}

TEST(ActivityLogTest, CorrelationTiesWorkToTheOpThatLaunchedIt) {
  SyntheticBuffer buffer;
  buffer.add(link(1, 0));
  buffer.add(link(2, 0));
  buffer.add(link(3, 5));
  buffer.add(kernel("conv", 100, 200, 1));
  buffer.add(kernel("bias", 200, 210, 2));
  buffer.add(kernel("relu", 300, 310, 3));
  buffer.add(kernel("outside", 400, 410, 99));  // launched outside any op region
  ActivityLog log;
  log.add_buffer(buffer.data(), buffer.size(), next_packed_record);
  const std::vector<GpuActivity> activities = log.activities();
  ASSERT_EQ(activities.size(), 4u);
  EXPECT_EQ(activities[0].op, 0);
  EXPECT_EQ(activities[1].op, 0);
  EXPECT_EQ(activities[2].op, 5);
  EXPECT_EQ(activities[3].op, -1);
}

TEST(ActivityLogTest, CorrelationArrivingInALaterBufferStillJoins) {
  SyntheticBuffer first, second;
  first.add(kernel("late", 10, 20, 42));
  second.add(link(42, 17));
  ActivityLog log;
  log.add_buffer(first.data(), first.size(), next_packed_record);
  EXPECT_EQ(log.activities()[0].op, -1);
  log.add_buffer(second.data(), second.size(), next_packed_record);
  EXPECT_EQ(log.activities()[0].op, 17);
}

TEST(ActivityLogTest, OtherToolsCorrelationKindsAreIgnored) {
  SyntheticBuffer buffer;
  buffer.add(link(1, 3, CUPTI_EXTERNAL_CORRELATION_KIND_OPENACC));
  buffer.add(kernel("k", 10, 20, 1));
  ActivityLog log;
  log.add_buffer(buffer.data(), buffer.size(), next_packed_record);
  EXPECT_EQ(log.activities()[0].op, -1);
  EXPECT_EQ(log.ignored_records(), 1u);
}

TEST(ActivityLogTest, PerOpSumsKernelsAndCountsOverlapsOnceInBusyTime) {
  SyntheticBuffer buffer;
  buffer.add(link(1, 2));
  buffer.add(link(2, 2));
  buffer.add(link(3, 2));
  buffer.add(link(4, 0));
  // Op 2: two kernels on different streams overlapping by 50 ns, plus a copy.
  buffer.add(kernel("a", 100, 200, 1, 1));
  buffer.add(kernel("b", 150, 300, 2, 2));
  buffer.add(copy(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 512, 300, 320, 3));
  buffer.add(kernel("c", 10, 40, 4));
  buffer.add(kernel("stray", 500, 507, 77));
  ActivityLog log;
  log.add_buffer(buffer.data(), buffer.size(), next_packed_record);
  const std::vector<OpGpuSummary> ops = log.per_op();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].op, 0);
  EXPECT_EQ(ops[0].kernels, 1u);
  EXPECT_EQ(ops[0].kernel_ns, 30u);
  EXPECT_EQ(ops[1].op, 2);
  EXPECT_EQ(ops[1].kernels, 2u);
  EXPECT_EQ(ops[1].copies, 1u);
  EXPECT_EQ(ops[1].copy_bytes, 512u);
  EXPECT_EQ(ops[1].kernel_ns, 100u + 150u);
  EXPECT_EQ(ops[1].busy_ns, 220u);  // [100, 320) with the overlap counted once
  EXPECT_EQ(ops[1].first_start_ns, 100u);
  EXPECT_EQ(ops[1].last_end_ns, 320u);
  EXPECT_EQ(ops[2].op, -1);  // unattributed work last
  EXPECT_EQ(ops[2].kernel_ns, 7u);
  EXPECT_EQ(log.busy_ns(), 30u + 220u + 7u);
}

TEST(ActivityLogTest, ActivitiesComeInStartOrder) {
  SyntheticBuffer buffer;
  buffer.add(kernel("second", 300, 310, 1));
  buffer.add(kernel("first", 100, 110, 2));
  buffer.add(set(64, 200, 201, 3));
  ActivityLog log;
  log.add_buffer(buffer.data(), buffer.size(), next_packed_record);
  const std::vector<GpuActivity> activities = log.activities();
  ASSERT_EQ(activities.size(), 3u);
  EXPECT_EQ(activities[0].name, "first");
  EXPECT_EQ(activities[1].name, "memset");
  EXPECT_EQ(activities[2].name, "second");
}

TEST(ActivityLogTest, UnknownRecordKindsAreCountedAndIgnored) {
  CUpti_Activity other;
  other.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  ActivityLog log;
  log.add_record(&other);
  EXPECT_EQ(log.record_count(), 0u);
  EXPECT_EQ(log.ignored_records(), 1u);
  log.add_dropped(3);
  EXPECT_EQ(log.dropped(), 3u);
  log.clear();
  EXPECT_EQ(log.dropped(), 0u);
}

TEST(ActivityLogTest, MemcpyKindsHaveReadableNames) {
  EXPECT_EQ(memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), "memcpy HtoD");
  EXPECT_EQ(memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "memcpy PtoP");
  EXPECT_EQ(memcpy_name(CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN), "memcpy");
}

// ---- why CUPTI is unavailable ---------------------------------------------------------------

TEST(CuptiAvailabilityTest, ReasonsNameWhatIsMissing) {
  EXPECT_NE(unavailable_reason_from("libcuda.so.1: cannot open shared object file", -1, 0, "")
                .find("no NVIDIA driver"),
            std::string::npos);
  EXPECT_NE(unavailable_reason_from("", 100, 0, "").find("no CUDA device"), std::string::npos);
  EXPECT_NE(unavailable_reason_from("", 35, 0, "").find("older"), std::string::npos);
  EXPECT_NE(unavailable_reason_from("", 0, 1, "libcupti.so: cannot open").find("CUPTI"),
            std::string::npos);
  EXPECT_EQ(unavailable_reason_from("", 0, 2, ""), "");
}

TEST(CuptiAvailabilityTest, ErrorsSayWhatToDo) {
  EXPECT_NE(explain_cupti_result(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "cuptiActivityEnable")
                .find("NVreg_RestrictProfilingToAdminUsers"),
            std::string::npos);
  const std::string held =
      explain_cupti_result(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "cuptiActivityEnable");
  EXPECT_NE(held.find("another profiler"), std::string::npos);
  EXPECT_NE(held.find("cuptiActivityEnable"), std::string::npos);
  EXPECT_NE(explain_cupti_result(CUPTI_ERROR_HARDWARE_BUSY, "cuptiRangeProfilerSetConfig")
                .find("another profiler"),
            std::string::npos);
  EXPECT_EQ(explain_cupti_result(CUPTI_SUCCESS, "x"), "");
}

TEST(CuptiAvailabilityTest, WithoutAGpuTracingSaysWhy) {
  const CuptiAvailability availability = cupti_availability();
  if (availability.available) GTEST_SKIP() << "this machine has a GPU and CUPTI";
  EXPECT_FALSE(availability.reason.empty());
  try {
    GpuActivityTracer::start();
    FAIL() << "expected UserError";
  } catch (const UserError& error) {
    EXPECT_NE(std::string(error.what()).find(availability.reason), std::string::npos);
  }
  EXPECT_THROW(GpuRangeMetrics::start(default_gpu_metrics()), UserError);
}

TEST(CuptiAvailabilityTest, OpRegionsAreNoOpsWithoutATracer) {
  EXPECT_FALSE(op_regions_active());
  push_op_region(3);
  pop_op_region();
}

TEST(GpuMetricNameTest, PerfworksNamesPassTyposFail) {
  for (const std::string& metric : default_gpu_metrics())
    EXPECT_NO_THROW(check_metric_name(metric));
  for (const char* bad : {"", "dram", "dram bytes", "DRAM__bytes.sum", "dram__bytes.",
                          "__bytes.sum", "dram__", "dram__bytes..sum"}) {
    EXPECT_THROW(check_metric_name(bad), UserError) << bad;
  }
  EXPECT_THROW(GpuRangeMetrics::start({"not a metric"}), UserError);
  EXPECT_THROW(GpuRangeMetrics::start({}), UserError);
}

// ---- on a GPU (skipped without one) ---------------------------------------------------------

// The CUDA runtime through dlopen, as the tracer loads CUPTI: this test program links neither.
struct CudaRuntime {
  int (*malloc_device)(void**, size_t) = nullptr;
  int (*free_device)(void*) = nullptr;
  int (*memcpy_)(void*, const void*, size_t, int) = nullptr;
  int (*memset_)(void*, int, size_t) = nullptr;
  int (*synchronize)() = nullptr;
  bool loaded = false;
};

CudaRuntime load_cuda_runtime() {
  CudaRuntime cuda;
  void* library = dlopen("libcudart.so", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) library = dlopen("/usr/local/cuda/lib/libcudart.so", RTLD_NOW);
  if (library == nullptr) library = dlopen("/usr/local/cuda/lib64/libcudart.so", RTLD_NOW);
  if (library == nullptr) return cuda;
  cuda.malloc_device = reinterpret_cast<int (*)(void**, size_t)>(dlsym(library, "cudaMalloc"));
  cuda.free_device = reinterpret_cast<int (*)(void*)>(dlsym(library, "cudaFree"));
  cuda.memcpy_ =
      reinterpret_cast<int (*)(void*, const void*, size_t, int)>(dlsym(library, "cudaMemcpy"));
  cuda.memset_ = reinterpret_cast<int (*)(void*, int, size_t)>(dlsym(library, "cudaMemset"));
  cuda.synchronize = reinterpret_cast<int (*)()>(dlsym(library, "cudaDeviceSynchronize"));
  cuda.loaded =
      cuda.malloc_device && cuda.free_device && cuda.memcpy_ && cuda.memset_ && cuda.synchronize;
  return cuda;
}

TEST(GpuActivityTracerTest, CopiesAndSetsAreTiedToTheirOpRegions) {
  const CuptiAvailability availability = cupti_availability();
  if (!availability.available) GTEST_SKIP() << availability.reason;
  const CudaRuntime cuda = load_cuda_runtime();
  if (!cuda.loaded) GTEST_SKIP() << "libcudart could not be loaded";
  GpuActivityTracer tracer = GpuActivityTracer::start();
  EXPECT_TRUE(op_regions_active());
  constexpr size_t kBytes = 3 << 20;
  std::vector<char> host(kBytes, 7);
  void* device = nullptr;
  ASSERT_EQ(cuda.malloc_device(&device, kBytes), 0);
  push_op_region(4);
  ASSERT_EQ(cuda.memcpy_(device, host.data(), kBytes, /*cudaMemcpyHostToDevice*/ 1), 0);
  pop_op_region();
  push_op_region(9);
  ASSERT_EQ(cuda.memset_(device, 0, kBytes), 0);
  ASSERT_EQ(cuda.memcpy_(host.data(), device, kBytes, /*cudaMemcpyDeviceToHost*/ 2), 0);
  pop_op_region();
  ASSERT_EQ(cuda.synchronize(), 0);
  tracer.stop();
  cuda.free_device(device);
  const ActivityLog log = tracer.log();
  bool copy_in_4 = false, set_in_9 = false, copy_out_9 = false;
  for (const GpuActivity& activity : log.activities()) {
    EXPECT_LE(activity.start_ns, activity.end_ns) << activity.name;
    if (activity.op == 4 && activity.name == "memcpy HtoD" && activity.bytes == kBytes) {
      copy_in_4 = true;
    }
    if (activity.op == 9 && activity.kind == GpuActivityKind::memset) set_in_9 = true;
    if (activity.op == 9 && activity.name == "memcpy DtoH") copy_out_9 = true;
  }
  EXPECT_TRUE(copy_in_4);
  EXPECT_TRUE(set_in_9);
  EXPECT_TRUE(copy_out_9);
  EXPECT_EQ(log.dropped(), 0u);
  EXPECT_FALSE(op_regions_active());
}

TEST(GpuRangeMetricsTest, EveryPassedRangeGetsItsMetrics) {
  const CuptiAvailability availability = cupti_availability();
  if (!availability.available) GTEST_SKIP() << availability.reason;
  const CudaRuntime cuda = load_cuda_runtime();
  if (!cuda.loaded) GTEST_SKIP() << "libcudart could not be loaded";
  constexpr size_t kBytes = 64 << 20;
  void* device = nullptr;
  ASSERT_EQ(cuda.malloc_device(&device, kBytes), 0);  // makes the primary context current
  GpuRangeMetrics metrics = GpuRangeMetrics::start(default_gpu_metrics(), 16);
  ASSERT_GE(metrics.pass_count(), 1u);
  bool done = false;
  for (size_t pass = 0; !done && pass < 64; ++pass) {  // user replay: the same work per pass
    metrics.begin_pass();
    metrics.push_range("op3");
    ASSERT_EQ(cuda.memset_(device, 1, kBytes), 0);
    ASSERT_EQ(cuda.synchronize(), 0);
    metrics.pop_range();
    done = metrics.end_pass();
  }
  ASSERT_TRUE(done);
  const std::vector<RangeMetricValues> results = metrics.results();
  cuda.free_device(device);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_NE(results[0].range.find("op3"), std::string::npos) << results[0].range;
  ASSERT_EQ(results[0].values.size(), 3u);
  EXPECT_GT(results[0].values[2], 0.0);  // gpu__time_duration.sum
}

}  // namespace
}  // namespace cuvil::probes::cupti

#endif  // CUVIL_HAVE_CUPTI
