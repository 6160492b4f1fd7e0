#include "reports/flame/op_records.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "base/error.h"
#include "reports/json_input.h"
#include "reports/printable.h"

namespace cuvil::reports::flame {

namespace {

using nlohmann::json;

bool is_median_entry(const JsonInput& entry) {
  entry.expect_object();
  return entry.string_or("run_type", "") == "aggregate" &&
         entry.string_or("aggregate_name", "") == "median";
}

std::string run_name_of(const JsonInput& entry) {
  if (const std::optional<JsonInput> run_name = entry.find_non_null("run_name")) {
    return run_name->string();
  }
  std::string name = entry.at("name").string();
  const std::string suffix = "_median";
  if (name.size() > suffix.size() && name.ends_with(suffix))
    name.resize(name.size() - suffix.size());
  return name;
}

bool rung_matches(const std::string& run_name, const std::string& wanted) {
  if (wanted.empty() || run_name == wanted) return true;
  const size_t slash = run_name.find('/');
  return slash != std::string::npos && run_name.substr(slash + 1) == wanted;
}

// The median entry's "cuvil" object, or nullopt.
std::optional<JsonInput> cuvil_of(const JsonInput& entry) {
  std::optional<JsonInput> cuvil = entry.find_non_null("cuvil");
  if (cuvil) cuvil->expect_object();
  return cuvil;
}

std::optional<JsonInput> ops_of(const JsonInput& entry) {
  const std::optional<JsonInput> cuvil = cuvil_of(entry);
  return cuvil ? cuvil->find_non_null("ops") : std::nullopt;
}

// Optional numbers default to 0; JSON null (an unknown figure) reads as 0 too.
double number_field(const JsonInput& record, const char* key, bool required) {
  const std::optional<JsonInput> field = record.find_non_null(key);
  if (!field) {
    if (required) record.fail(std::string("missing '") + key + "'");
    return 0;
  }
  return field->non_negative();
}

OpRecord parse_record(const JsonInput& r) {
  r.expect_object();
  OpRecord rec;
  rec.step = r.at("step").integer(0, std::numeric_limits<int64_t>::max());
  rec.node = r.at("node").string();
  rec.op = r.at("op").string();
  rec.kernel = r.string_or("kernel", rec.op);
  rec.lowering = r.string_or("lowering", "");
  rec.flops = number_field(r, "flops", false);
  rec.bytes = number_field(r, "bytes", false);
  rec.ns_per_iteration = number_field(r, "ns_per_iteration", true);
  rec.ns_min = number_field(r, "ns_min", false);
  rec.ns_median = number_field(r, "ns_median", false);
  rec.gflops = number_field(r, "gflops", false);
  return rec;
}

RungOps parse_rung(const JsonInput& entry) {
  RungOps rung;
  rung.name = run_name_of(entry);
  const size_t slash = rung.name.find('/');
  rung.suite = rung.name.substr(0, slash);
  rung.rung = slash == std::string::npos ? "" : rung.name.substr(slash + 1);
  const JsonInput ops = *ops_of(entry);
  ops.expect_object();
  rung.iterations = number_field(ops, "iterations", false);
  rung.total_ns_per_iteration = number_field(ops, "total_ns_per_iteration", false);
  rung.measured_ns_per_iteration = number_field(ops, "measured_ns_per_iteration", false);
  const JsonInput records = ops.at("records");
  double sum_ns = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    rung.records.push_back(parse_record(records[i]));
    sum_ns += rung.records.back().ns_per_iteration;
    if (!std::isfinite(sum_ns)) records[i].fail("the times add up beyond a double's range");
  }
  return rung;
}

JsonInput benchmarks(const JsonInput& document) {
  if (!document.is_object() || !document.json().contains("benchmarks")) {
    document.fail("no 'benchmarks' array (not a run.json)");
  }
  JsonInput entries = document.at("benchmarks");
  entries.expect_array();
  return entries;
}

// Frame names may not hold the folded format's separator.
std::string frame_name(std::string name) {
  for (char& c : name) {
    if (c == ';' || c == '\n') c = ':';
  }
  return name;
}

}  // namespace

bool has_op_records(const json& document, const std::string& source) {
  const JsonInput entries = benchmarks(JsonInput(document, source));
  for (size_t i = 0; i < entries.size(); ++i) {
    if (is_median_entry(entries[i]) && ops_of(entries[i])) return true;
  }
  return false;
}

std::vector<RungOps> read_op_records(const json& document, const std::string& source,
                                     const std::string& rung) {
  std::vector<RungOps> rungs;
  std::vector<std::string> known;
  const JsonInput entries = benchmarks(JsonInput(document, source));
  for (size_t i = 0; i < entries.size(); ++i) {
    const JsonInput entry = entries[i];
    if (!is_median_entry(entry) || !ops_of(entry)) continue;
    const std::string name = run_name_of(entry);
    known.push_back(name);
    if (rung_matches(name, rung)) rungs.push_back(parse_rung(entry));
  }
  if (known.empty()) {
    throw UserError(printable(source) +
                    ": no per-op records (no median entry has 'cuvil.ops'); run with "
                    "`cuvil-bench run --probes ops`");
  }
  if (rungs.empty()) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    throw UserError(
        printable(source + ": no rung '" + rung + "' with per-op records (has: " + list + ")"));
  }
  return rungs;
}

std::optional<NamedSamplesFile> samples_file_of(const json& document, const std::string& source,
                                                const std::string& rung) {
  const JsonInput entries = benchmarks(JsonInput(document, source));
  for (size_t i = 0; i < entries.size(); ++i) {
    const JsonInput entry = entries[i];
    if (!is_median_entry(entry) || !rung_matches(run_name_of(entry), rung)) continue;
    const std::optional<JsonInput> cuvil = cuvil_of(entry);
    if (!cuvil) continue;
    if (const std::optional<JsonInput> file = cuvil->find_non_null("samples_file")) {
      return NamedSamplesFile{file->string(), file->where()};
    }
  }
  return std::nullopt;
}

std::string resolve_samples_file(const NamedSamplesFile& named, const std::string& run_path) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& message) -> std::string {
    throw UserError(printable(named.where + ": '" + named.named + "' " + message));
  };
  if (named.named.empty()) fail("is empty");
  fs::path folder = fs::path(run_path).parent_path();
  if (folder.empty()) folder = ".";
  std::error_code ec;
  const fs::path real_folder = fs::weakly_canonical(folder, ec);
  if (ec) fail("cannot be looked for: " + ec.message());
  // Inside the folder once every symbolic link and ".." is resolved.
  auto inside = [&](const fs::path& candidate) {
    std::error_code e;
    const fs::path real = fs::weakly_canonical(candidate, e);
    if (e) return false;
    const fs::path relative = real.lexically_relative(real_folder);
    return !relative.empty() && relative != "." && *relative.begin() != "..";
  };
  const fs::path name(named.named);
  const fs::path target = name.is_absolute() ? name : folder / name;
  const std::string refusal =
      "leads outside the run's folder " + folder.string() +
      "; samples are read only from there (name the file with --folded to read it anyway)";
  if (!inside(target)) fail(refusal);
  if (fs::is_regular_file(target, ec)) return target.string();
  if (!name.is_absolute() && name.has_parent_path()) {
    const fs::path beside = folder / name.filename();
    if (inside(beside) && fs::is_regular_file(beside, ec)) return beside.string();
  }
  return fail("is not a file in the run's folder " + folder.string());
}

std::vector<std::string> node_blocks(const std::string& node) {
  std::vector<std::string> blocks;
  for (size_t dot = node.find('.'); dot != std::string::npos && blocks.size() < kMaxBlockFrames;
       dot = node.find('.', dot + 1)) {
    blocks.push_back(node.substr(0, dot));
  }
  return blocks;
}

std::vector<std::string> op_frames(const OpRecord& record) {
  std::vector<std::string> frames;
  for (std::string& block : node_blocks(record.node))
    frames.push_back(frame_name(std::move(block)));
  frames.push_back(frame_name(record.op + " " + record.node));
  frames.push_back(frame_name(record.kernel));
  return frames;
}

FrameTree tree_from_ops(const std::vector<RungOps>& rungs) {
  FrameTree tree("all", "nanoseconds");
  for (const RungOps& rung : rungs) {
    for (const OpRecord& record : rung.records) {
      std::vector<std::string> path{frame_name(rung.name)};
      for (std::string& f : op_frames(record)) path.push_back(std::move(f));
      tree.add_stack(path, record.ns_per_iteration);
    }
  }
  if (!std::isfinite(tree.total())) {
    throw UserError("the per-op times of every rung add up beyond a double's range");
  }
  return tree;
}

}  // namespace cuvil::reports::flame
