// A sampling profiler: periodic native call stacks of every thread of this process while a
// rung runs, symbolised and written as folded stacks (`root;caller;leaf count`) for flame graphs.
// Where perf_event_paranoid permits, a task-clock perf_event per thread keeps the period: with
// PERF_SAMPLE_CALLCHAIN (the kernel walks frame pointers) when the build keeps frame pointers,
// else the event signals its thread (SIGPROF) and the thread unwinds itself with the DWARF
// unwinder (_Unwind_Backtrace). Otherwise setitimer(ITIMER_PROF) with the same unwinder. Only one
// sampler may run at a time in a process.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace cuvil::probes {

class StackSampler {
 public:
  // perf_event: the kernel's call chains (need frame pointers); perf_event_unwind: a perf_event
  // per thread signals that thread, which unwinds itself; itimer: setitimer(ITIMER_PROF), whose
  // rate the kernel's tick caps (CONFIG_HZ signals per CPU-second at most).
  enum class Method { automatic, perf_event, perf_event_unwind, itimer };
  // UserError with the reason when impossible (hz out of 1..10000, the method not permitted,
  // another sampler running).
  static StackSampler start(int hz, Method method = Method::automatic);
  StackSampler(StackSampler&&) noexcept;
  StackSampler& operator=(StackSampler&&) noexcept;
  ~StackSampler();  // stops if still running

  // Attaches to threads created since start (perf_event only; the timer sees every thread).
  void attach_threads();
  void stop();
  // "perf_event callchain" | "perf_event+unwind" | "setitimer+unwind"
  std::string method() const;
  // Why the automatic choice fell back to the timer, or empty.
  std::string fallback_reason() const;

  uint64_t sample_count() const;  // samples taken (after stop: final)
  uint64_t lost_count() const;    // samples the kernel or our buffers dropped
  // Symbolised stacks, root first, with their counts.
  std::map<std::vector<std::string>, uint64_t> stacks() const;
  // Symbolised folded stacks, one "frame;frame;frame count" line per distinct stack, root first.
  std::string folded() const;
  void write_folded(const std::string& path) const;

 private:
  struct State;
  explicit StackSampler(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// Whether perf_event sampling with call chains is permitted here, and if not, why.
struct SamplingSupport {
  bool perf_event_callchain = false;
  std::string reason;  // why not, when false
  // What Method::automatic uses here ("perf_event callchain" | "setitimer+unwind") and, for the
  // timer, why.
  std::string automatic_method;
  std::string automatic_fallback_reason;
};
SamplingSupport sampling_support();

// The folded-stack text for already symbolised stacks (root first): one line per stack,
// "a;b;c count", sorted by stack; ';' inside a frame name becomes ':' and newlines are dropped.
std::string format_folded(const std::map<std::vector<std::string>, uint64_t>& stacks);

// The name of the function containing `address` in this process ("[unknown]" when no object
// maps it, "module+0xoffset" when the object has no symbol for it), demangled.
std::string symbolize(uintptr_t address);

}  // namespace cuvil::probes
