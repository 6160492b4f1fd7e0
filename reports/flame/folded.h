// Folded stacks, the text format of Brendan Gregg's stackcollapse tools and of cuvil's native
// sampler: one "frame;frame;frame count" line per distinct stack, root first.
#pragma once

#include <string>

#include "reports/flame/frame_tree.h"

namespace cuvil::reports::flame {

// Parses folded text into a tree of sample counts (unit "samples"). Blank lines are skipped;
// repeated stacks add up. A line without a trailing non-negative count, or with an empty stack,
// or with bytes that are not UTF-8, or counts whose sum overflows, is a UserError naming
// `source` and the line number.
FrameTree parse_folded(const std::string& text, const std::string& source);
// Reads and parses a folded file; a missing file is a UserError.
FrameTree read_folded_file(const std::string& path);

// The tree as folded stacks: one line per frame with self weight, root excluded, in depth-first
// order, the weight rounded to an integer (nanoseconds or samples); stacks that round to 0 are
// left out.
std::string to_folded(const FrameTree& tree);

}  // namespace cuvil::reports::flame
