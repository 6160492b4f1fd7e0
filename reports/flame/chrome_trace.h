// Chrome Trace Event JSON (the format Perfetto, chrome://tracing and speedscope open) from per-op
// records: one track (tid) per rung, one complete ("X") event per op laid out back to back in
// step order (records hold mean times per iteration, not timestamps), and the op's kernel, flops
// and bytes as args. Above the ops, one "X" event per run of consecutive ops sharing a block of
// their node names ("layer1.0.conv1" → "layer1" ⊃ "layer1.0" ⊃ the op), the hierarchy the flame
// graph draws (op_frames: at most kMaxBlockFrames levels).
//
// Times are exact: ts and dur (microseconds, as the format defines them) are whole multiples of
// kTraceTicksPerMicrosecond⁻¹ µs (a power of two, so every value and every ts + dur a reader
// computes in binary floating point is exact). An op ends where the cumulative sum of the
// per-op means, rounded to the tick, ends; the next op starts exactly there, and a block spans
// exactly its first op's start to its last op's end. Readers that nest by containment
// (stackcollapse-chrome-tracing, speedscope, Perfetto) therefore nest every op under exactly its
// name's blocks. An op shorter than half a tick lasts one tick, so that it is drawn and nests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reports/flame/op_records.h"

namespace cuvil::reports::flame {

// 1024 ticks per microsecond: one tick is 0.9765625 ns.
inline constexpr int64_t kTraceTicksPerMicrosecond = 1024;

// `process_name` labels the process track (e.g. the run file). Op events have cat = the op and
// args.step; block events have cat "block" and args {"block", "ops"}. A rung whose ops add up
// to more ticks than a double counts exactly (2^53) is a UserError.
nlohmann::json to_chrome_trace(const std::vector<RungOps>& rungs, const std::string& process_name);

}  // namespace cuvil::reports::flame
