#include "bench_suite/serve/workload.h"

#include "base/error.h"

namespace cuvil::bench::serve {

namespace {

constexpr double kResnetP99Ms = 15.0;
constexpr double kLlamaTtftP99Ms = 2000.0;
constexpr double kLlamaTpotP99Ms = 100.0;
constexpr double kSdxlP99Ms = 20000.0;

QueryWorkload llama_workload(const Rung& rung, const WorkloadOptions& options) {
  if (options.decode_tokens < 0) throw UserError("--decode-tokens must be >= 0");
  const int64_t seq = rung.param("seq", 1);
  const int64_t prompt = seq > 1 ? seq : std::max<int64_t>(rung.param("past", 0), 1);
  QueryWorkload w;
  w.batch = static_cast<int>(rung.param("batch", 1));
  Rung prefill = rung;
  prefill.params["seq"] = prompt;
  prefill.params["past"] = 0;
  w.stages.push_back({"prefill-" + std::to_string(prompt), prefill, 1});
  for (int i = 0; i < options.decode_tokens; ++i) {
    Rung decode = rung;
    decode.params["seq"] = 1;
    decode.params["past"] = prompt + i;
    w.stages.push_back({"decode-ctx" + std::to_string(prompt + i), decode, 1});
  }
  w.first_output_stage = 0;
  w.decode_tokens = options.decode_tokens;
  w.summary = "prefill " + std::to_string(prompt) + " tokens + " +
              std::to_string(options.decode_tokens) + " decode tokens, " +
              std::to_string(rung.param("layers", 32)) + " layer(s)";
  return w;
}

}  // namespace

QueryWorkload query_workload(const Suite& suite, const Rung& rung, const WorkloadOptions& options) {
  if (rung.param("batch", 1) < 1) {
    throw UserError(suite.name + "/" + rung.name + ": batch must be >= 1");
  }
  if (suite.name == "llama3-8b") return llama_workload(rung, options);
  QueryWorkload w;
  w.batch = static_cast<int>(rung.param("batch", 1));
  if (suite.name == "sdxl") {
    if (options.unet_steps < 1) throw UserError("--unet-steps must be >= 1");
    w.stages.push_back({"unet-step", rung, options.unet_steps});
    w.summary = std::to_string(options.unet_steps) + " UNet denoising steps";
  } else {
    w.stages.push_back({"forward", rung, 1});
    w.summary = "one forward pass";
  }
  w.first_output_stage = w.stages.size() - 1;
  return w;
}

LatencyTarget default_target(const Suite& suite) {
  if (suite.name == "llama3-8b") return {kLlamaTtftP99Ms, kLlamaTpotP99Ms};
  if (suite.name == "sdxl") return {kSdxlP99Ms, 0};
  return {kResnetP99Ms, 0};
}

}  // namespace cuvil::bench::serve
