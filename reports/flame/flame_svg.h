// A self-contained interactive flame graph (SVG with inline CSS and JavaScript, no external
// resources), in the manner of Brendan Gregg's flamegraph.pl: the root at the bottom, each frame
// as wide as its share of the total. Hover shows a frame's name, time and share; click zooms to
// it (or ?z=NAME in the URL); "Search" (or Ctrl-F, or ?s=REGEX) highlights matching frames and
// shows the share they cover. A differential tree (FrameTree::annotate_with_base) is coloured by
// change: red grew, blue shrank, grey unchanged, widths from the new run.
#pragma once

#include <string>

#include "reports/flame/frame_tree.h"

namespace cuvil::reports::flame {

struct SvgOptions {
  std::string title = "Flame Graph";
  std::string subtitle;  // e.g. the run file and machine; empty: none
  int width = 1200;
  int frame_height = 16;
  double min_frame_px = 0.1;  // narrower frames (and everything above them) are not drawn
};

// Layout shared by the writer and its tests.
inline constexpr double kSvgPadX = 10;
inline double svg_plot_width(const SvgOptions& o) {
  return o.width - 2 * kSvgPadX;
}

enum class Change { unchanged, grown, shrunk, added };

struct DiffColour {
  Change change = Change::unchanged;
  int r = 0, g = 0, b = 0;
  std::string fill() const;  // "rgb(r,g,b)"
};

// Changes under 1% are "unchanged"; beyond that the colour deepens with the relative change,
// saturating at ±50%. A frame absent from the base (in_base false) is "added" (full red).
DiffColour diff_colour(double base_total, double new_total, bool in_base);

// "812.3 us"-style durations for nanosecond trees, "1,234 samples" otherwise.
std::string format_weight(double weight, const std::string& unit);

// The SVG document. A tree whose total is 0 is a UserError (nothing to draw).
std::string flame_svg(const FrameTree& tree, const SvgOptions& options);

}  // namespace cuvil::reports::flame
