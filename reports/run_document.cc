#include "reports/run_document.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "passes/ir/error.h"

namespace cuvil::reports {

namespace {

using nlohmann::json;

double ns_per_unit(const json& entry, const std::string& where) {
  // Google Benchmark omits nothing here, but its default unit is ns.
  const std::string unit = entry.value("time_unit", std::string("ns"));
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  throw UserError(where + ": unknown time_unit '" + unit + "'");
}

double time_ns(const json& entry, const char* key, const std::string& where) {
  const auto it = entry.find(key);
  if (it == entry.end() || !it->is_number() || !std::isfinite(it->get<double>()) ||
      it->get<double>() < 0) {
    throw UserError(where + ": '" + key + "' is not a non-negative number");
  }
  return it->get<double>() * ns_per_unit(entry, where);
}

std::vector<double> ns_array(const json& values, const std::string& where) {
  if (!values.is_array()) throw UserError(where + ": raw samples are not an array");
  std::vector<double> out;
  out.reserve(values.size());
  for (const json& v : values) {
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
      throw UserError(where + ": a raw sample is not a non-negative number");
    }
    out.push_back(v.get<double>());
  }
  return out;
}

bool flag(const json& entry) {
  for (const char* pointer : {"/cuvil/noisy", "/noisy"}) {
    const json::json_pointer p(pointer);
    if (!entry.contains(p)) continue;
    const json& v = entry.at(p);
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number()) return v.get<double>() != 0;
  }
  return false;
}

double counter(const json& entry, const char* key) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_number() ? it->get<double>() : 0.0;
}

// The benchmark an entry belongs to: run_name, else the name less its "_<aggregate>" suffix.
std::string run_name_of(const json& entry, const std::string& where) {
  if (entry.contains("run_name") && entry["run_name"].is_string()) return entry["run_name"];
  if (!entry.contains("name") || !entry["name"].is_string()) {
    throw UserError(where + ": entry has no 'name'");
  }
  std::string name = entry["name"];
  if (entry.value("run_type", std::string()) == "aggregate" && entry.contains("aggregate_name") &&
      entry["aggregate_name"].is_string()) {
    std::string suffix = "_";  // appended, not "_" + name: g++ 12 warns falsely on that
    suffix += entry["aggregate_name"].get<std::string>();
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
    }
  }
  return name;
}

struct Group {
  std::vector<double> iteration_real, iteration_cpu;
  const json* median = nullptr;
  const json* mean = nullptr;
  const json* any = nullptr;
};

}  // namespace

json read_run_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot read file");
  std::stringstream text;
  text << in.rdbuf();
  try {
    return json::parse(text.str());
  } catch (const json::parse_error& e) {
    std::string message = e.what();
    // nlohmann's message already says where ("parse error at line L, column C: ..."); drop
    // its "[json.exception.parse_error.N] " prefix.
    const size_t bracket = message.find("] ");
    if (bracket != std::string::npos) message = message.substr(bracket + 2);
    throw UserError(path + ": malformed JSON: " + message);
  }
}

std::vector<BenchmarkSamples> benchmarks_of(const json& document, const std::string& source) {
  if (!document.is_object() || !document.contains("benchmarks") ||
      !document["benchmarks"].is_array()) {
    throw UserError(source + ": not a run.json (no \"benchmarks\" array)");
  }
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  const json& entries = document["benchmarks"];
  for (size_t i = 0; i < entries.size(); ++i) {
    const json& entry = entries[i];
    const std::string where = source + ": benchmarks[" + std::to_string(i) + "]";
    if (!entry.is_object()) throw UserError(where + ": not an object");
    if (entry.value("error_occurred", false)) continue;
    const std::string name = run_name_of(entry, where);
    auto [it, inserted] = groups.try_emplace(name);
    if (inserted) order.push_back(name);
    Group& g = it->second;
    g.any = &entry;
    const std::string run_type = entry.value("run_type", std::string("iteration"));
    if (run_type == "iteration") {
      g.iteration_real.push_back(time_ns(entry, "real_time", where));
      if (entry.contains("cpu_time")) g.iteration_cpu.push_back(time_ns(entry, "cpu_time", where));
    } else if (run_type == "aggregate") {
      const std::string aggregate = entry.value("aggregate_name", std::string());
      if (aggregate == "median") g.median = &entry;
      if (aggregate == "mean") g.mean = &entry;
    }
  }

  std::vector<BenchmarkSamples> out;
  for (const std::string& name : order) {
    const Group& g = groups[name];
    const std::string where = source + ": " + name;
    BenchmarkSamples b;
    b.name = name;
    const size_t slash = name.find('/');
    b.suite = name.substr(0, slash);
    b.rung = slash == std::string::npos ? "" : name.substr(slash + 1);
    const json* summary = g.median ? g.median : g.mean ? g.mean : g.any;
    const json::json_pointer raw_real("/cuvil/real_ns"), raw_cpu("/cuvil/cpu_ns");
    if (g.median && g.median->contains(raw_real)) {
      b.real_ns = ns_array(g.median->at(raw_real), where);
      if (g.median->contains(raw_cpu)) b.cpu_ns = ns_array(g.median->at(raw_cpu), where);
    } else if (!g.iteration_real.empty()) {
      b.real_ns = g.iteration_real;
      b.cpu_ns = g.iteration_cpu;
    } else if (g.median || g.mean) {
      b.real_ns = {time_ns(*summary, "real_time", where)};
      if (summary->contains("cpu_time")) b.cpu_ns = {time_ns(*summary, "cpu_time", where)};
    }
    if (b.real_ns.empty()) throw UserError(where + ": no timing samples");
    if (b.cpu_ns.size() != b.real_ns.size()) b.cpu_ns.clear();
    const auto threads = summary->find("threads");
    if (threads != summary->end() && threads->is_number_integer()) b.threads = *threads;
    b.gflops = counter(*summary, "GFLOP/s");
    b.gbps = counter(*summary, "GB/s");
    b.noisy = flag(*summary);
    out.push_back(std::move(b));
  }
  return out;
}

std::string first_string(const json& j, std::initializer_list<const char*> pointers) {
  for (const char* pointer : pointers) {
    const json::json_pointer p(pointer);
    if (j.contains(p) && j.at(p).is_string()) return j.at(p).get<std::string>();
  }
  return {};
}

}  // namespace cuvil::reports
