#include "probes/stack_sampler.h"

#include <linux/perf_event.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include <fcntl.h>
#include <algorithm>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "base/error.h"
#include "probes/perf_counters.h"
#include "probes/perf_counters_internal.h"

namespace cuvil::probes {

namespace {

constexpr int kMaxFrames = 96;
using RawStack = std::vector<uintptr_t>;  // leaf first, as unwound

std::atomic<bool> g_sampler_active{false};
// Whether the SIGPROF handler records: once installed it stays, returning at once when off, so a
// signal the kernel was still delivering after stop() can neither kill the process (SIGPROF's
// default action) nor reach a queue being drained.
std::atomic<bool> g_accepting{false};

// ---- SIGPROF + _Unwind_Backtrace (from setitimer, or from a perf_event's overflow) -----------

// A bounded multi-producer queue (Vyukov) of fixed-size samples: the signal handler only does
// lock-free atomics and stores, which is what async-signal-safe code may do.
struct SignalSample {
  std::atomic<size_t> sequence{0};
  int depth = 0;
  uintptr_t frames[kMaxFrames];
};
constexpr size_t kQueueSize = 4096;  // a power of two
SignalSample* g_queue = nullptr;
std::atomic<size_t> g_enqueue{0};
size_t g_dequeue = 0;  // the drain thread's alone
std::atomic<uint64_t> g_signal_samples{0};
std::atomic<uint64_t> g_signal_lost{0};

struct UnwindState {
  uintptr_t* frames;
  int depth;
};

_Unwind_Reason_Code collect_frame(_Unwind_Context* context, void* argument) {
  auto* state = static_cast<UnwindState*>(argument);
  if (state->depth >= kMaxFrames) return _URC_END_OF_STACK;
  const uintptr_t ip = _Unwind_GetIP(context);
  if (ip == 0) return _URC_END_OF_STACK;
  state->frames[state->depth++] = ip;
  return _URC_NO_REASON;
}

void on_sigprof(int, siginfo_t*, void* context) {
  if (!g_accepting.load(std::memory_order_acquire)) return;
  const int saved_errno = errno;
  size_t position = g_enqueue.load(std::memory_order_relaxed);
  SignalSample* cell = nullptr;
  for (;;) {
    cell = &g_queue[position & (kQueueSize - 1)];
    const size_t sequence = cell->sequence.load(std::memory_order_acquire);
    const intptr_t difference = static_cast<intptr_t>(sequence) - static_cast<intptr_t>(position);
    if (difference == 0) {
      if (g_enqueue.compare_exchange_weak(position, position + 1, std::memory_order_relaxed)) {
        break;
      }
    } else if (difference < 0) {
      g_signal_lost.fetch_add(1, std::memory_order_relaxed);  // full: the drain fell behind
      errno = saved_errno;
      return;
    } else {
      position = g_enqueue.load(std::memory_order_relaxed);
    }
  }
  UnwindState state{cell->frames, 0};
  _Unwind_Backtrace(collect_frame, &state);
  // Drop the handler's own frames and the signal trampoline: keep from the interrupted pc on.
  const auto* user_context = static_cast<const ucontext_t*>(context);
  const uintptr_t pc = static_cast<uintptr_t>(user_context->uc_mcontext.gregs[REG_RIP]);
  int first = -1;
  for (int i = 0; i < state.depth; ++i) {
    if (cell->frames[i] == pc || cell->frames[i] == pc + 1) {
      first = i;
      break;
    }
  }
  if (first < 0) {
    // The unwinder could not cross the signal frame: the interrupted pc alone.
    cell->frames[0] = pc;
    state.depth = 1;
  } else if (first > 0) {
    std::memmove(cell->frames, cell->frames + first,
                 static_cast<size_t>(state.depth - first) * sizeof(uintptr_t));
    state.depth -= first;
  }
  cell->frames[0] = pc;  // the leaf is an exact pc, not a return address
  cell->depth = state.depth;
  cell->sequence.store(position + 1, std::memory_order_release);
  g_signal_samples.fetch_add(1, std::memory_order_relaxed);
  errno = saved_errno;
}

// Moves finished samples from the queue into `stacks`.
void drain_signal_queue(std::map<RawStack, uint64_t>& stacks) {
  for (;;) {
    SignalSample& cell = g_queue[g_dequeue & (kQueueSize - 1)];
    const size_t sequence = cell.sequence.load(std::memory_order_acquire);
    if (sequence != g_dequeue + 1) return;
    ++stacks[RawStack(cell.frames, cell.frames + cell.depth)];
    cell.sequence.store(g_dequeue + kQueueSize, std::memory_order_release);
    ++g_dequeue;
  }
}

// ---- perf_event sampling --------------------------------------------------------------------

constexpr size_t kRingPages = 32;  // data pages per thread, a power of two

struct Ring {
  pid_t tid = 0;
  int fd = -1;
  void* base = nullptr;
  size_t length = 0;
};

perf_event_attr sampling_attr(int hz) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_TASK_CLOCK;  // per thread CPU time: samples where time is spent
  attr.sample_period = static_cast<uint64_t>(1'000'000'000 / hz);
  attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_CALLCHAIN;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.exclude_callchain_kernel = 1;
  attr.sample_max_stack = kMaxFrames;
  return attr;
}

// Opens and maps one thread's sampling event; an fd < 0 (errno set) when refused.
Ring open_ring(pid_t tid, int hz) {
  Ring ring;
  ring.tid = tid;
  perf_event_attr attr = sampling_attr(hz);
  ring.fd = detail::perf_event_open(&attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (ring.fd < 0) return ring;
  ring.length = (kRingPages + 1) * static_cast<size_t>(sysconf(_SC_PAGESIZE));
  ring.base = mmap(nullptr, ring.length, PROT_READ | PROT_WRITE, MAP_SHARED, ring.fd, 0);
  if (ring.base == MAP_FAILED) {
    const int saved = errno;
    ::close(ring.fd);
    ring.fd = -1;
    ring.base = nullptr;
    errno = saved;
  }
  return ring;
}

// One thread's task-clock event that, instead of writing samples, sends SIGPROF to that thread
// on every overflow (fasync with F_SETOWN_EX): the kernel's exact per-thread period, and the
// thread unwinds itself with the DWARF unwinder, which needs no frame pointers.
Ring open_signal_event(pid_t tid, int hz) {
  Ring ring;
  ring.tid = tid;
  perf_event_attr attr = sampling_attr(hz);
  attr.sample_type = PERF_SAMPLE_IP;
  attr.exclude_callchain_kernel = 0;
  attr.sample_max_stack = 0;
  attr.wakeup_events = 1;
  ring.fd = detail::perf_event_open(&attr, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
  if (ring.fd < 0) return ring;
  f_owner_ex owner{F_OWNER_TID, tid};
  if (fcntl(ring.fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0 ||
      fcntl(ring.fd, F_SETSIG, SIGPROF) != 0 || fcntl(ring.fd, F_SETOWN_EX, &owner) != 0) {
    const int saved = errno;
    ::close(ring.fd);
    ring.fd = -1;
    errno = saved;
  }
  return ring;
}

void close_ring(Ring& ring) {
  if (ring.base != nullptr) munmap(ring.base, ring.length);
  if (ring.fd >= 0) ::close(ring.fd);
  ring.base = nullptr;
  ring.fd = -1;
}

// Reads every complete record from a ring into `stacks`; returns samples read.
uint64_t drain_ring(Ring& ring, std::map<RawStack, uint64_t>& stacks, uint64_t& lost) {
  auto* page = static_cast<perf_event_mmap_page*>(ring.base);
  const size_t page_size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t data_size = kRingPages * page_size;
  const auto* data = static_cast<const unsigned char*>(ring.base) + page_size;
  const uint64_t head = __atomic_load_n(&page->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = page->data_tail;
  uint64_t samples = 0;
  std::vector<unsigned char> record;
  while (tail < head) {
    perf_event_header header;
    for (size_t i = 0; i < sizeof header; ++i) {
      reinterpret_cast<unsigned char*>(&header)[i] = data[(tail + i) % data_size];
    }
    if (header.size < sizeof header || tail + header.size > head) break;
    record.resize(header.size);
    for (size_t i = 0; i < header.size; ++i) record[i] = data[(tail + i) % data_size];
    if (header.type == PERF_RECORD_SAMPLE) {
      // {header, u32 pid, u32 tid, u64 nr, u64 ips[nr]}
      const size_t offset = sizeof header + 8;
      uint64_t count = 0;
      if (record.size() >= offset + 8) std::memcpy(&count, record.data() + offset, 8);
      RawStack stack;
      for (uint64_t i = 0; i < count && offset + 8 + (i + 1) * 8 <= record.size(); ++i) {
        uint64_t ip = 0;
        std::memcpy(&ip, record.data() + offset + 8 + i * 8, 8);
        if (ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;  // context markers
        stack.push_back(static_cast<uintptr_t>(ip));
      }
      if (!stack.empty()) {
        ++stacks[stack];
        ++samples;
      }
    } else if (header.type == PERF_RECORD_LOST && record.size() >= sizeof header + 16) {
      uint64_t dropped = 0;
      std::memcpy(&dropped, record.data() + sizeof header + 8, 8);
      lost += dropped;
    }
    tail += header.size;
  }
  __atomic_store_n(&page->data_tail, tail, __ATOMIC_RELEASE);
  return samples;
}

bool build_keeps_frame_pointers() {
#ifdef CUVIL_FRAME_POINTERS
  return true;
#else
  return false;
#endif
}

void prepare_signal_sampling() {
  if (g_queue == nullptr) g_queue = new SignalSample[kQueueSize];
  for (size_t i = 0; i < kQueueSize; ++i) g_queue[i].sequence.store(i);
  g_enqueue.store(0);
  g_dequeue = 0;
  g_signal_samples.store(0);
  g_signal_lost.store(0);
  // The first _Unwind_Backtrace may allocate and take loader locks: do it here, not in the
  // handler.
  uintptr_t warm[4];
  UnwindState warm_state{warm, 0};
  _Unwind_Backtrace(
      [](_Unwind_Context* context, void* argument) {
        auto* s = static_cast<UnwindState*>(argument);
        if (s->depth >= 4) return _URC_END_OF_STACK;
        s->frames[s->depth++] = _Unwind_GetIP(context);
        return _URC_NO_REASON;
      },
      &warm_state);
  static std::once_flag installed;
  int error_number = 0;
  std::call_once(installed, [&error_number] {
    struct sigaction action;
    std::memset(&action, 0, sizeof action);
    action.sa_sigaction = on_sigprof;
    action.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&action.sa_mask);
    if (sigaction(SIGPROF, &action, nullptr) != 0) error_number = errno;
  });
  if (error_number != 0) {
    throw UserError("cannot install the SIGPROF handler: " + detail::errno_text(error_number));
  }
  g_accepting.store(true, std::memory_order_release);
}

constexpr const char* kCallchainMethod = "perf_event callchain";
constexpr const char* kPerfSignalMethod = "perf_event+unwind";
constexpr const char* kTimerMethod = "setitimer+unwind";

}  // namespace

SamplingSupport sampling_support() {
  SamplingSupport support;
  Ring ring = open_ring(0, 100);
  if (ring.fd < 0) {
    support.reason = explain_open_error(errno, "task-clock sampling with call chains", false,
                                        perf_event_paranoid());
  } else {
    close_ring(ring);
    support.perf_event_callchain = true;
  }
  if (!support.perf_event_callchain) {
    support.automatic_method = kTimerMethod;
    support.automatic_fallback_reason = support.reason;
  } else if (build_keeps_frame_pointers()) {
    support.automatic_method = kCallchainMethod;
  } else {
    // The kernel walks frame pointers; without them its call chains stop after a frame or two
    // (or wander). The perf_event still keeps the period; each thread unwinds itself (DWARF).
    support.automatic_method = kPerfSignalMethod;
    support.automatic_fallback_reason =
        "this build omits frame pointers, so the kernel's call chains would hold the leaf only; "
        "the perf_event signals each thread, which unwinds itself (configure with "
        "-DCMAKE_CXX_FLAGS=-fno-omit-frame-pointer for kernel call chains)";
  }
  return support;
}

struct StackSampler::State {
  enum class Backend { callchain, perf_signal, timer };
  Backend backend = Backend::timer;
  bool perf_fds() const { return backend != Backend::timer; }
  bool signal_queue() const { return backend != Backend::callchain; }
  std::string fallback_reason;
  int hz = 0;
  bool running = false;
  std::atomic<uint64_t> samples{0};
  std::atomic<uint64_t> lost{0};
  mutable std::mutex mutex;  // guards stacks and rings
  std::map<RawStack, uint64_t> stacks;
  std::vector<Ring> rings;
  std::thread drain;
  std::mutex wake_mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::atomic<pid_t> drain_tid{0};

  void attach_new_threads() {  // with `mutex` held
    for (pid_t tid : detail::thread_ids()) {
      if (tid == drain_tid) continue;
      if (std::any_of(rings.begin(), rings.end(), [tid](const Ring& r) { return r.tid == tid; })) {
        continue;
      }
      Ring ring = backend == Backend::callchain ? open_ring(tid, hz) : open_signal_event(tid, hz);
      if (ring.fd < 0) continue;  // the thread exited meanwhile
      ioctl(ring.fd, PERF_EVENT_IOC_ENABLE, 0);
      rings.push_back(ring);
    }
  }

  void drain_once() {  // with `mutex` held
    if (!signal_queue()) {
      uint64_t dropped = 0;
      for (Ring& ring : rings) samples += drain_ring(ring, stacks, dropped);
      lost += dropped;
    } else {
      drain_signal_queue(stacks);
    }
  }

  void drain_loop() {
    drain_tid = detail::current_thread_id();
    int rounds = 0;
    std::unique_lock<std::mutex> wake_lock(wake_mutex);
    while (!stopping) {
      wake.wait_for(wake_lock, std::chrono::milliseconds(10));
      std::lock_guard<std::mutex> lock(mutex);
      drain_once();
      // Threads started after start(): a perf event per thread, so look for new ones.
      if (perf_fds() && ++rounds % 5 == 0) attach_new_threads();
    }
  }

  ~State() {
    for (Ring& ring : rings) close_ring(ring);
  }
};

StackSampler::StackSampler(std::unique_ptr<State> state) : state_(std::move(state)) {}
StackSampler::StackSampler(StackSampler&&) noexcept = default;
StackSampler& StackSampler::operator=(StackSampler&&) noexcept = default;
StackSampler::~StackSampler() {
  if (state_ && state_->running) stop();
}

StackSampler StackSampler::start(int hz, Method method) {
  if (hz < 1 || hz > 10000) {
    throw UserError("sampling rate " + std::to_string(hz) + " Hz is outside 1..10000");
  }
  bool expected = false;
  if (!g_sampler_active.compare_exchange_strong(expected, true)) {
    throw UserError("a stack sampler is already running in this process");
  }
  auto state = std::make_unique<State>();
  state->hz = hz;
  try {
    const SamplingSupport support = sampling_support();
    if (method == Method::automatic) {
      state->fallback_reason = support.automatic_fallback_reason;
      state->backend = support.automatic_method == kCallchainMethod    ? State::Backend::callchain
                       : support.automatic_method == kPerfSignalMethod ? State::Backend::perf_signal
                                                                       : State::Backend::timer;
    } else if (method == Method::perf_event || method == Method::perf_event_unwind) {
      if (!support.perf_event_callchain) {
        throw UserError("perf_event sampling is not possible: " + support.reason);
      }
      state->backend =
          method == Method::perf_event ? State::Backend::callchain : State::Backend::perf_signal;
    }
    if (state->signal_queue()) prepare_signal_sampling();
    if (state->perf_fds()) {
      std::lock_guard<std::mutex> lock(state->mutex);
      state->attach_new_threads();
      if (state->rings.empty()) {
        throw UserError("perf_event sampling could not attach to any thread of this process");
      }
    } else {
      itimerval timer{};
      const long period_us = std::max(1L, 1'000'000L / hz);
      timer.it_interval.tv_sec = period_us / 1'000'000;
      timer.it_interval.tv_usec = period_us % 1'000'000;
      timer.it_value = timer.it_interval;
      if (setitimer(ITIMER_PROF, &timer, nullptr) != 0) {
        throw UserError("setitimer(ITIMER_PROF) failed: " + detail::errno_text(errno));
      }
    }
  } catch (...) {
    g_accepting.store(false);
    g_sampler_active.store(false);
    throw;
  }
  state->running = true;
  State* raw = state.get();
  state->drain = std::thread([raw] { raw->drain_loop(); });
  return StackSampler(std::move(state));
}

void StackSampler::attach_threads() {
  if (!state_->running || !state_->perf_fds()) return;
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->attach_new_threads();
}

void StackSampler::stop() {
  State& s = *state_;
  if (!s.running) return;
  if (s.perf_fds()) {
    std::lock_guard<std::mutex> lock(s.mutex);
    for (Ring& ring : s.rings) ioctl(ring.fd, PERF_EVENT_IOC_DISABLE, 0);
  } else {
    itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
  }
  {
    std::lock_guard<std::mutex> lock(s.wake_mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
  s.drain.join();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.signal_queue()) g_accepting.store(false, std::memory_order_release);
    s.drain_once();
    for (Ring& ring : s.rings) close_ring(ring);
    s.rings.clear();
    if (s.signal_queue()) {
      s.samples = g_signal_samples.load();
      s.lost = g_signal_lost.load();
    }
  }
  s.running = false;
  g_sampler_active.store(false);
}

std::string StackSampler::method() const {
  switch (state_->backend) {
    case State::Backend::callchain:
      return kCallchainMethod;
    case State::Backend::perf_signal:
      return kPerfSignalMethod;
    case State::Backend::timer:
      break;
  }
  return kTimerMethod;
}

std::string StackSampler::fallback_reason() const {
  return state_->fallback_reason;
}

uint64_t StackSampler::sample_count() const {
  if (state_->running && state_->signal_queue()) return g_signal_samples.load();
  return state_->samples.load();
}

uint64_t StackSampler::lost_count() const {
  if (state_->running && state_->signal_queue()) return g_signal_lost.load();
  return state_->lost.load();
}

std::map<std::vector<std::string>, uint64_t> StackSampler::stacks() const {
  std::map<RawStack, uint64_t> raw;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    raw = state_->stacks;
  }
  std::map<std::vector<std::string>, uint64_t> named;
  for (const auto& [addresses, count] : raw) {
    std::vector<std::string> frames;
    frames.reserve(addresses.size());
    // Leaf first in `addresses`; a caller's address is a return address, one past its call.
    for (size_t i = addresses.size(); i-- > 0;) {
      const uintptr_t address = i == 0 ? addresses[i] : addresses[i] - 1;
      std::string name = symbolize(address);
      // Frames no object maps are what a broken unwind leaves above the real root.
      if (name == "[unknown]" && frames.empty() && i > 0) continue;
      frames.push_back(std::move(name));
    }
    named[frames] += count;
  }
  return named;
}

std::string StackSampler::folded() const {
  return format_folded(stacks());
}

void StackSampler::write_folded(const std::string& path) const {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw UserError("cannot write folded stacks to '" + path + "'");
  file << folded();
  if (!file) throw UserError("error writing folded stacks to '" + path + "'");
}

std::string format_folded(const std::map<std::vector<std::string>, uint64_t>& stacks) {
  std::string text;
  for (const auto& [frames, count] : stacks) {
    if (frames.empty() || count == 0) continue;
    for (size_t i = 0; i < frames.size(); ++i) {
      if (i > 0) text += ';';
      for (char c : frames[i]) {
        if (c == ';') {
          text += ':';
        } else if (c != '\n' && c != '\r') {
          text += c;
        }
      }
    }
    text += ' ';
    text += std::to_string(count);
    text += '\n';
  }
  return text;
}

}  // namespace cuvil::probes
