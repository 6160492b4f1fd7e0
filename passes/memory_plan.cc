#include "passes/memory_plan.h"

#include <algorithm>

#include "base/error.h"

namespace cuvil::passes {

namespace {

using ir::Graph;
using ir::ValueId;

struct Interval {
  ValueId value;
  int64_t first, last;  // node positions, inclusive
  int64_t size;         // bytes, aligned
  int64_t offset = -1;
};

int64_t align_up(int64_t bytes, int64_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}

// A reshape without an epilogue moves no data: its result shares its input's region (the CPU and
// CUDA reshape kernels skip the copy when the two coincide). Returns, for every value, the node
// result whose region it uses: itself, or for such a reshape of a node result, its input's.
// Graph inputs and constants live outside the arena, so a reshape of one is still a copy.
std::vector<ValueId> region_owners(const Graph& graph) {
  std::vector<ValueId> owner(static_cast<size_t>(graph.value_count()));
  std::vector<char> computed(static_cast<size_t>(graph.value_count()), 0);
  for (ValueId v = 0; v < graph.value_count(); ++v) owner[static_cast<size_t>(v)] = v;
  for (const ir::Node& n : graph.nodes()) {
    computed[static_cast<size_t>(n.output)] = 1;
    if (n.op != ir::OpKind::reshape || !n.epilogue.empty()) continue;
    const ValueId in = n.inputs[0];
    if (!computed[static_cast<size_t>(in)]) continue;
    owner[static_cast<size_t>(n.output)] = owner[static_cast<size_t>(in)];
  }
  return owner;
}

// Live ranges of every region over the node order. A value is live from its producer to its last
// reader inclusive, so a node's output never shares memory with its own inputs (but for the
// reshapes region_owners lets share); graph outputs stay live to the end. A region lives as long
// as any value in it.
std::vector<Interval> live_ranges(const Graph& graph, const std::vector<ValueId>& owner,
                                  int64_t alignment) {
  const auto& nodes = graph.nodes();
  const int64_t end = static_cast<int64_t>(nodes.size());
  std::vector<int64_t> last(static_cast<size_t>(graph.value_count()), -1);
  auto read_at = [&](ValueId v, int64_t i) {
    int64_t& l = last[static_cast<size_t>(owner[static_cast<size_t>(v)])];
    l = std::max(l, i);
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId in : nodes[i].inputs) read_at(in, static_cast<int64_t>(i));
  }
  for (ValueId out : graph.outputs()) read_at(out, end);
  std::vector<Interval> intervals;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ValueId v = nodes[i].output;
    if (owner[static_cast<size_t>(v)] != v) continue;
    const ir::Value& value = graph.value(v);
    const int64_t bytes = ir::kStorageBytesPerElement * ir::num_elements(value.shape);
    const int64_t first = static_cast<int64_t>(i);
    intervals.push_back({v, first, std::max(first, last[static_cast<size_t>(v)]),
                         std::max<int64_t>(alignment, align_up(bytes, alignment))});
  }
  return intervals;
}

bool overlap_in_time(const Interval& a, const Interval& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Lowest offset where `item` fits beside every already placed interval live at the same time.
int64_t lowest_fit(const Interval& item, const std::vector<const Interval*>& placed) {
  std::vector<const Interval*> busy;
  for (const Interval* p : placed) {
    if (overlap_in_time(*p, item)) busy.push_back(p);
  }
  std::sort(busy.begin(), busy.end(),
            [](const Interval* a, const Interval* b) { return a->offset < b->offset; });
  int64_t offset = 0;
  for (const Interval* b : busy) {
    if (b->offset >= offset + item.size) break;  // the gap before b is big enough
    offset = std::max(offset, b->offset + b->size);
  }
  return offset;
}

void place_in_order(std::vector<Interval>& intervals, const std::vector<size_t>& order) {
  std::vector<const Interval*> placed;
  placed.reserve(intervals.size());
  for (size_t i : order) {
    intervals[i].offset = lowest_fit(intervals[i], placed);
    placed.push_back(&intervals[i]);
  }
}

}  // namespace

std::vector<ParamSpec> MemoryPlanPass::params() const {
  return {choice_param("strategy", {"greedy-by-size", "first-fit", "none"}, "greedy-by-size",
                       "greedy-by-size: place big values first; first-fit: place in program "
                       "order; none: every value its own region (a "
                       "reshape still shares its input's)"),
          int_param("alignment", 16, 4096, 64,
                    "byte alignment of every value's offset, rounded up to a power of two (64: "
                    "one cache line)",
                    Scale::log)};
}

void MemoryPlanPass::run(Graph& graph, const ParamMap& params) const {
  const std::string& strategy = param_choice(params, "strategy");
  // Kernels need at least element (4-byte) alignment and vector loads like powers of two, so the
  // tuner's any-integer draw is rounded up rather than rejected.
  int64_t alignment = 1;
  while (alignment < param_int(params, "alignment")) alignment *= 2;

  const std::vector<ValueId> owner = region_owners(graph);
  std::vector<Interval> intervals = live_ranges(graph, owner, alignment);
  std::vector<size_t> order(intervals.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (strategy == "none") {
    int64_t offset = 0;
    for (Interval& it : intervals) {
      it.offset = offset;
      offset += it.size;
    }
  } else if (strategy == "first-fit") {
    place_in_order(intervals, order);
  } else {
    CUVIL_CHECK(strategy == "greedy-by-size", "unknown memory-plan strategy '" + strategy + "'");
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return intervals[a].size > intervals[b].size; });
    place_in_order(intervals, order);
  }

  for (ValueId v = 0; v < graph.value_count(); ++v) graph.mutable_value(v).arena_offset = -1;
  int64_t peak = 0, naive = 0;
  for (const Interval& it : intervals) {
    graph.mutable_value(it.value).arena_offset = it.offset;
    peak = std::max(peak, it.offset + it.size);
    naive += it.size;
  }
  for (const ir::Node& n : graph.nodes()) {
    const ValueId o = owner[static_cast<size_t>(n.output)];
    if (o != n.output) graph.mutable_value(n.output).arena_offset = graph.value(o).arena_offset;
  }
  graph.annotations["memory.peak_bytes"] = peak;
  // Lowering places intermediates at these offsets (passes/lower.cc reads the origins).
  graph.annotation_origins[kArenaAnnotation] = {"memory-plan.strategy", "memory-plan.alignment"};
  graph.annotations["memory.naive_bytes"] = naive;
}

}  // namespace cuvil::passes
