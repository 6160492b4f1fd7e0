// What one serving query is for each suite, as the graphs (rungs) it runs in order, and the
// MLPerf latency targets that apply to it by default.
#pragma once

#include <string>
#include <vector>

#include "bench_suite/ladder.h"
#include "bench_suite/serve/scenarios.h"
#include "bench_suite/suites.h"

namespace cuvil::bench::serve {

struct QueryStage {
  std::string label;  // e.g. "prefill-512", "decode-ctx515", "unet-step"
  Rung rung;          // the graph this stage runs (suite parameters)
  int repeat = 1;     // times the graph runs back to back
};

struct QueryWorkload {
  int batch = 1;  // queries per batch: the rung's batch size
  std::vector<QueryStage> stages;
  // The query's first output is ready after this stage (LLM prefill); its last after all.
  size_t first_output_stage = 0;
  int decode_tokens = 0;  // stages after the first output, one token each
  std::string summary;    // one line for the report
};

struct WorkloadOptions {
  int decode_tokens = 8;  // llama3-8b: output tokens after the first
  int unet_steps = 20;    // sdxl: denoising steps per image (MLPerf SDXL uses 20)
};

// llama3-8b: prefill of the prompt (the rung's seq, or its past for a decode rung: the context
// it describes), then one decode step per output token at context prompt + i, with the rung's
// layer count. sdxl: the UNet step `unet_steps` times. resnet50: one forward pass.
QueryWorkload query_workload(const Suite& suite, const Rung& rung, const WorkloadOptions& options);

// MLPerf's latency bounds: ResNet-50 15 ms p99; Llama TTFT 2 s and TPOT 100 ms (p99); SDXL 20 s.
LatencyTarget default_target(const Suite& suite);

}  // namespace cuvil::bench::serve
