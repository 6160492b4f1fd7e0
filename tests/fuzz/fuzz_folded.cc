// The folded-stacks reader behind `cuvil-bench report flame` (reports/flame/folded.h), then the
// writers `report flame` feeds the tree to: folded text, the SVG and speedscope JSON.
#include "reports/flame/flame_svg.h"
#include "reports/flame/folded.h"
#include "reports/flame/speedscope.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cuvil::reports::flame;
  FrameTree tree("all", "samples");
  if (!cuvil::fuzz::accepted(
          [&] { tree = parse_folded(cuvil::fuzz::text_of(data, size), "fuzz"); }))
    return 0;
  const std::string folded = to_folded(tree);
  if (!cuvil::fuzz::accepted([&] { parse_folded(folded, "round-trip"); }))
    cuvil::fuzz::broken("to_folded wrote stacks that do not read back:\n" + folded);
  cuvil::fuzz::accepted([&] { flame_svg(tree, SvgOptions{}); });
  (void)to_speedscope(tree, "fuzz").dump();
  return 0;
}
