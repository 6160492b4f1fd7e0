// Chrome Trace Event JSON (the format Perfetto and chrome://tracing open) from per-op records:
// one track (tid) per rung, one complete ("X") event per op laid out back to back in step order
// (records hold mean times per iteration, not timestamps), ts/dur in microseconds, and the op's
// kernel, flops and bytes as args.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/flame/op_records.h"

namespace cuvil::reports::flame {

// `process_name` labels the process track (e.g. the run file).
nlohmann::json to_chrome_trace(const std::vector<RungOps>& rungs, const std::string& process_name);

}  // namespace cuvil::reports::flame
