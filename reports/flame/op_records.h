// Per-op records of a run.json (written by `cuvil-bench run --probes ops`, layout in
// docs/probes.md) and the frame tree they make: suite/rung → the node name's blocks
// (split on '.') → "op node" → kernel, weighted by nanoseconds per iteration.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "reports/flame/frame_tree.h"

namespace cuvil::reports::flame {

struct OpRecord {
  int64_t step = 0;
  std::string node;      // "layer1.0.conv1"
  std::string op;        // "conv2d"
  std::string kernel;    // "conv2d.im2col"
  std::string lowering;  // "generated" | "onednn" | ...
  double flops = 0;      // declared per call
  double bytes = 0;
  double ns_per_iteration = 0;  // mean over the measured iterations
  double ns_min = 0, ns_median = 0;
  double gflops = 0;
};

struct RungOps {
  std::string name;   // the benchmark's run name, "resnet50/b1"
  std::string suite;  // "resnet50"
  std::string rung;   // "b1"
  double iterations = 0;
  double total_ns_per_iteration = 0;
  double measured_ns_per_iteration = 0;
  std::vector<OpRecord> records;  // in step order
};

// The rungs of `document` that carry per-op records (under the median aggregate entry's
// "cuvil.ops"), in document order. `rung` (empty: all) keeps one rung, matched by its rung name
// ("b1") or full name ("resnet50/b1"). `source` names the document in messages. Errors
// (UserError "SOURCE: /json/pointer: message", reports/json_input.h): no "benchmarks" array; no
// entry with per-op records ("run with --probes ops"); an unknown rung (the message lists the
// known ones); any field read of the wrong type (a run_type that is not a string, a numeric
// lowering), a record lacking a field, or a negative, non-numeric or non-finite number.
std::vector<RungOps> read_op_records(const nlohmann::json& document, const std::string& source,
                                     const std::string& rung = "");

// True when some median entry of `document` carries per-op records. The fields it reads are
// checked as read_op_records checks them.
bool has_op_records(const nlohmann::json& document, const std::string& source);

// The native-sample file a run names and where it names it.
struct NamedSamplesFile {
  std::string named;  // as written, to be resolved inside the run's folder (resolve_samples_file)
  std::string where;  // "SOURCE: /benchmarks/N/cuvil/samples_file", for messages
};
// The median entry "cuvil.samples_file" of the chosen rung, or of the first entry naming one
// when `rung` is empty; nullopt when none does.
std::optional<NamedSamplesFile> samples_file_of(const nlohmann::json& document,
                                                const std::string& source,
                                                const std::string& rung = "");

// The file a run's samples_file names, inside the folder of the run JSON at `run_path`: a
// relative name is taken from that folder (and, as `run --out DIR/run.json` writes
// "DIR/run.json.folded", a name whose folders are not there is looked for as its file name in
// that folder); an absolute name must lie in that folder. A name that leads anywhere else (an
// absolute path elsewhere, "..", a symbolic link out of the folder) or a file that is not there
// is a UserError at `named.where`: a run.json cannot make the reader open files elsewhere.
std::string resolve_samples_file(const NamedSamplesFile& named, const std::string& run_path);

// A node nests this many blocks deep at most in its frames; deeper blocks stay in the op frame's
// name ("op node"), so a name's frames cost memory linear in its length (every block frame is a
// prefix of the name: one frame per level would be quadratic).
inline constexpr size_t kMaxBlockFrames = 64;

// The blocks a node nests in, outermost first, as written: "layer1.0.conv1" → {"layer1",
// "layer1.0"} (kMaxBlockFrames at most).
std::vector<std::string> node_blocks(const std::string& node);

// The frames of one record below its rung: the node's blocks (kMaxBlockFrames at most), "op
// node", kernel. A node "layer1.0.conv1" gives {"layer1", "layer1.0", "conv2d layer1.0.conv1",
// "conv2d.im2col"}.
std::vector<std::string> op_frames(const OpRecord& record);

// One tree over every rung (each rung a frame on the root "all"), in nanoseconds.
FrameTree tree_from_ops(const std::vector<RungOps>& rungs);

}  // namespace cuvil::reports::flame
