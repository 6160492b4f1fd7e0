// One trial's work, run inside the isolated child (isolation.h): the verification gate on the
// suite's scaled-down graph, then each tuned rung compiled and measured through the harness
// (bench::measure), cheapest first, each reported to the parent, which may stop the trial
// (pruning) before the expensive rungs.
//
// Objective: the geometric mean over the tuned rungs of each rung's median latency in ms (every
// rung counts equally, whatever its size). The intermediate value after rung k is the same
// geometric mean over rungs 0..k.
//
// Pruning within a rung: while a rung samples, the child also reports the running objective
// (the rungs done, and the median of the current rung's samples so far) at checkpoints after 3,
// 6, 12, ... samples, so a pruner can stop a clearly slow trial long before the stopping rule
// ends its rung; with one tuned rung this is the only pruning there is. Each rung owns
// kStepsPerRung pruner steps: checkpoint c of rung k is step k * kStepsPerRung + c and the
// rung's end is the last of them, so every trial reports the same step for the same work (a
// rung that converges early skips its later checkpoints).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_suite/ladder.h"
#include "bench_suite/measure.h"
#include "bench_suite/suites.h"
#include "passes/cuvilpass.h"
#include "tuner/isolation.h"
#include "tuner/python_scenario.h"
#include "tuner/trial_log.h"

namespace cuvil::tuner {

inline constexpr const char* kObjectiveName =
    "geometric mean of median latency (ms) over the rungs";

inline constexpr int kStepsPerRung = 8;
inline constexpr int64_t kFirstCheckpointSamples = 3;  // fewer say little about a median

// The checkpoint index (0 .. kStepsPerRung - 2) when `samples` samples of a rung were taken, or
// -1 when that count is not a checkpoint.
int checkpoint_index(int64_t samples);
// The pruner step of checkpoint `checkpoint` of rung `rung`, and of the rung's end.
int checkpoint_step(size_t rung, int checkpoint);
int rung_end_step(size_t rung);

struct TrialSpec {
  bench::Suite suite;
  std::vector<bench::Rung> rungs;
  passes::PipelineConfig config;
  int threads = 1;
  bench::MeasureOptions measure;
  uint64_t seed = 1;
  bool verify = true;
  bool through_python = false;  // --scenario python
  PythonScenarioOptions python;
  // TEST-ONLY fault injection (from CUVIL_TEST_TRIAL_FAULT, see test_fault_for): "crash" raises
  // SIGSEGV, "hang" sleeps forever, "oom" allocates until the memory limit, "wrong" makes the
  // verification gate see a wrong output, "slow" adds 1 s to every measured run (a clearly slow
  // configuration, for pruning). Empty in real use.
  std::string fault;
};

// The child's body: sends one progress message per rung ({rung, step, samples_ns, median_ms,
// intermediate}, and gil_free through Python), one per checkpoint within a rung ({checkpoint:
// true, rung, step, samples_ns, median_ms, intermediate}; not through Python) and a final result
// ({value}); throws (a failed trial) when verification fails.
void run_trial(const TrialSpec& spec, ChildChannel& channel);

// Geometric mean of the medians (ms).
double objective_of(const std::vector<RungSamples>& rungs);

// TEST-ONLY: CUVIL_TEST_TRIAL_FAULT is "KIND" (every trial) or "KIND@N,KIND@M" (trials N, M),
// KIND in crash|hang|oom|wrong|slow. Returns the fault for trial `number`, or "".
std::string test_fault_for(int number);

// TEST-ONLY: CUVIL_TEST_KILL_AT is "POINT" (every trial) or "POINT@N,POINT@M" (trial N, M). When
// `point` of trial `number` is listed, the process kills itself with SIGKILL there (a tuner dying
// at the worst moment). Points of `cuvil-bench tune`: asked (after the ask), trial (while the
// trial's child runs), measured (measured, not yet told), told (told, not yet in the trial log),
// logged (in the log); the bridge has recorded (record stored, state not yet told).
void test_kill_point(const std::string& point, int number);

}  // namespace cuvil::tuner
