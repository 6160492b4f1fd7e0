#include "reports/flame/op_records.h"

#include <cmath>

#include "passes/ir/error.h"

namespace cuvil::reports::flame {

namespace {

using nlohmann::json;

bool is_median_entry(const json& entry) {
  return entry.is_object() && entry.value("run_type", "") == "aggregate" &&
         entry.value("aggregate_name", "") == "median";
}

std::string run_name_of(const json& entry) {
  if (entry.contains("run_name") && entry["run_name"].is_string()) return entry["run_name"];
  std::string name = entry.value("name", "");
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

std::string text_field(const json& record, const char* key, const std::string& where) {
  const auto it = record.find(key);
  if (it == record.end() || !it->is_string()) {
    throw UserError(where + ": field '" + key + "' is missing or not a string");
  }
  return *it;
}

// Optional numbers default to 0; JSON null (an unknown figure) reads as 0 too.
double number_field(const json& record, const char* key, const std::string& where, bool required) {
  const auto it = record.find(key);
  if (it == record.end() || it->is_null()) {
    if (required) throw UserError(where + ": field '" + key + "' is missing");
    return 0;
  }
  if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
    throw UserError(where + ": field '" + key + "' is not a non-negative number");
  }
  return it->get<double>();
}

OpRecord parse_record(const json& r, const std::string& where) {
  if (!r.is_object()) throw UserError(where + ": a record is not an object");
  OpRecord rec;
  rec.step = static_cast<int64_t>(number_field(r, "step", where, true));
  rec.node = text_field(r, "node", where);
  rec.op = text_field(r, "op", where);
  rec.kernel =
      r.contains("kernel") && r["kernel"].is_string() ? r["kernel"].get<std::string>() : rec.op;
  rec.lowering = r.value("lowering", "");
  rec.flops = number_field(r, "flops", where, false);
  rec.bytes = number_field(r, "bytes", where, false);
  rec.ns_per_iteration = number_field(r, "ns_per_iteration", where, true);
  rec.ns_min = number_field(r, "ns_min", where, false);
  rec.ns_median = number_field(r, "ns_median", where, false);
  rec.gflops = number_field(r, "gflops", where, false);
  return rec;
}

RungOps parse_rung(const json& entry, const std::string& source) {
  RungOps rung;
  rung.name = run_name_of(entry);
  const size_t slash = rung.name.find('/');
  rung.suite = rung.name.substr(0, slash);
  rung.rung = slash == std::string::npos ? "" : rung.name.substr(slash + 1);
  const std::string where = source + ": " + rung.name + ": cuvil.ops";
  const json& ops = entry["cuvil"]["ops"];
  if (!ops.is_object()) throw UserError(where + " is not an object");
  rung.iterations = number_field(ops, "iterations", where, false);
  rung.total_ns_per_iteration = number_field(ops, "total_ns_per_iteration", where, false);
  rung.measured_ns_per_iteration = number_field(ops, "measured_ns_per_iteration", where, false);
  const auto records = ops.find("records");
  if (records == ops.end() || !records->is_array()) {
    throw UserError(where + ".records is missing or not an array");
  }
  for (size_t i = 0; i < records->size(); ++i) {
    rung.records.push_back(
        parse_record((*records)[i], where + ".records[" + std::to_string(i) + "]"));
  }
  return rung;
}

bool has_ops(const json& entry) {
  return entry.contains("cuvil") && entry["cuvil"].is_object() && entry["cuvil"].contains("ops");
}

const json& benchmarks(const json& document, const std::string& source) {
  if (!document.is_object() || !document.contains("benchmarks") ||
      !document["benchmarks"].is_array()) {
    throw UserError(source + ": no 'benchmarks' array (not a run.json)");
  }
  return document["benchmarks"];
}

// Frame names may not hold the folded format's separator.
std::string frame_name(std::string name) {
  for (char& c : name) {
    if (c == ';' || c == '\n') c = ':';
  }
  return name;
}

}  // namespace

bool has_op_records(const json& document) {
  if (!document.is_object() || !document.contains("benchmarks")) return false;
  for (const json& entry : document["benchmarks"]) {
    if (is_median_entry(entry) && has_ops(entry)) return true;
  }
  return false;
}

std::vector<RungOps> read_op_records(const json& document, const std::string& source,
                                     const std::string& rung) {
  std::vector<RungOps> rungs;
  std::vector<std::string> known;
  for (const json& entry : benchmarks(document, source)) {
    if (!is_median_entry(entry) || !has_ops(entry)) continue;
    const std::string name = run_name_of(entry);
    known.push_back(name);
    if (rung_matches(name, rung)) rungs.push_back(parse_rung(entry, source));
  }
  if (known.empty()) {
    throw UserError(source +
                    ": no per-op records (no median entry has 'cuvil.ops'); run with "
                    "`cuvil-bench run --probes ops`");
  }
  if (rungs.empty()) {
    std::string list;
    for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
    throw UserError(source + ": no rung '" + rung + "' with per-op records (has: " + list + ")");
  }
  return rungs;
}

std::string samples_file_of(const json& document, const std::string& rung) {
  if (!document.is_object() || !document.contains("benchmarks")) return "";
  for (const json& entry : document["benchmarks"]) {
    if (!is_median_entry(entry) || !rung_matches(run_name_of(entry), rung)) continue;
    const json::json_pointer p("/cuvil/samples_file");
    if (entry.contains(p) && entry.at(p).is_string()) return entry.at(p);
  }
  return "";
}

std::vector<std::string> op_frames(const OpRecord& record) {
  std::vector<std::string> frames;
  for (size_t dot = record.node.find('.'); dot != std::string::npos;
       dot = record.node.find('.', dot + 1)) {
    frames.push_back(frame_name(record.node.substr(0, dot)));
  }
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
  return tree;
}

}  // namespace cuvil::reports::flame
