#include "reports/run_document.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "reports/json_input.h"
#include "reports/printable.h"

namespace cuvil::reports {

namespace {

using nlohmann::json;

double ns_per_unit(const JsonInput& entry) {
  const std::optional<JsonInput> field = entry.find_non_null("time_unit");
  if (!field) return 1;  // Google Benchmark's default unit
  const std::string unit = field->string();
  if (unit == "ns") return 1;
  if (unit == "us") return 1e3;
  if (unit == "ms") return 1e6;
  if (unit == "s") return 1e9;
  field->fail("unknown time_unit '" + unit + "' (ns, us, ms or s)");
}

double time_ns(const JsonInput& entry, const char* key) {
  const std::optional<JsonInput> field = entry.find(key);
  if (!field) entry.fail(std::string("missing '") + key + "'");
  const double ns = field->non_negative() * ns_per_unit(entry);
  if (!std::isfinite(ns)) field->fail("the time " + field->quoted() + " is out of range");
  return ns;
}

std::vector<double> ns_array(const JsonInput& values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (size_t i = 0; i < values.size(); ++i) out.push_back(values[i].non_negative());
  return out;
}

// The entry's "cuvil" object, or nullopt when it has none.
std::optional<JsonInput> cuvil_of(const JsonInput& entry) {
  std::optional<JsonInput> cuvil = entry.find_non_null("cuvil");
  if (cuvil) cuvil->expect_object();
  return cuvil;
}

bool noisy_flag(const JsonInput& entry) {
  std::optional<JsonInput> v;
  if (const std::optional<JsonInput> cuvil = cuvil_of(entry)) v = cuvil->find_non_null("noisy");
  if (!v) v = entry.find_non_null("noisy");
  if (!v) return false;
  if (v->json().is_number()) return v->number() != 0;
  return v->boolean();
}

double counter(const JsonInput& entry, const char* key) {
  const std::optional<JsonInput> field = entry.find_non_null(key);
  return field ? field->non_negative() : 0.0;
}

// The benchmark an entry belongs to: run_name, else the name less its "_<aggregate>" suffix.
std::string run_name_of(const JsonInput& entry) {
  if (const std::optional<JsonInput> run_name = entry.find_non_null("run_name")) {
    return run_name->string();
  }
  std::string name = entry.at("name").string();
  if (entry.string_or("run_type", "") == "aggregate") {
    std::string suffix = "_";  // appended, not "_" + name: g++ 12 warns falsely on that
    suffix += entry.string_or("aggregate_name", "");
    if (suffix.size() > 1 && name.size() > suffix.size() && name.ends_with(suffix)) {
      name.resize(name.size() - suffix.size());
    }
  }
  return name;
}

struct Group {
  std::vector<double> iteration_real, iteration_cpu;
  std::optional<JsonInput> median, mean, first, last;
};

}  // namespace

json read_run_json(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(printable(path) + ": is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(printable(path) + ": cannot read file");
  std::stringstream text;
  text << in.rdbuf();
  return parse_json(text.str(), path);
}

std::vector<BenchmarkSamples> benchmarks_of(const json& document, const std::string& source) {
  const JsonInput root(document, source);
  if (!document.is_object() || !document.contains("benchmarks")) {
    root.fail("not a run.json (no \"benchmarks\" array)");
  }
  const JsonInput entries = root.at("benchmarks");
  entries.expect_array();
  std::vector<std::string> order;
  std::map<std::string, Group> groups;
  for (size_t i = 0; i < entries.size(); ++i) {
    const JsonInput entry = entries[i];
    entry.expect_object();
    if (entry.boolean_or("error_occurred", false)) continue;
    const std::string name = run_name_of(entry);
    auto [it, inserted] = groups.try_emplace(name);
    if (inserted) order.push_back(name);
    Group& g = it->second;
    if (!g.first) g.first = entry;
    g.last = entry;
    const std::string run_type = entry.string_or("run_type", "iteration");
    if (run_type == "iteration") {
      g.iteration_real.push_back(time_ns(entry, "real_time"));
      if (entry.find_non_null("cpu_time")) g.iteration_cpu.push_back(time_ns(entry, "cpu_time"));
    } else if (run_type == "aggregate") {
      const std::string aggregate = entry.string_or("aggregate_name", "");
      if (aggregate == "median") g.median = entry;
      if (aggregate == "mean") g.mean = entry;
    }
  }

  std::vector<BenchmarkSamples> out;
  for (const std::string& name : order) {
    const Group& g = groups[name];
    BenchmarkSamples b;
    b.name = name;
    const size_t slash = name.find('/');
    b.suite = name.substr(0, slash);
    b.rung = slash == std::string::npos ? "" : name.substr(slash + 1);
    const JsonInput& summary = g.median ? *g.median : g.mean ? *g.mean : *g.last;
    const std::optional<JsonInput> median_cuvil = g.median ? cuvil_of(*g.median) : std::nullopt;
    const std::optional<JsonInput> raw_real =
        median_cuvil ? median_cuvil->find_non_null("real_ns") : std::nullopt;
    if (raw_real) {
      b.real_ns = ns_array(*raw_real);
      if (const auto raw_cpu = median_cuvil->find_non_null("cpu_ns")) b.cpu_ns = ns_array(*raw_cpu);
    } else if (!g.iteration_real.empty()) {
      b.real_ns = g.iteration_real;
      b.cpu_ns = g.iteration_cpu;
    } else if (g.median || g.mean) {
      b.real_ns = {time_ns(summary, "real_time")};
      if (summary.find_non_null("cpu_time")) b.cpu_ns = {time_ns(summary, "cpu_time")};
    }
    if (b.real_ns.empty()) g.first->fail("'" + name + "' has no timing samples");
    if (b.cpu_ns.size() != b.real_ns.size()) b.cpu_ns.clear();
    if (const std::optional<JsonInput> threads = summary.find_non_null("threads")) {
      b.threads = static_cast<int>(threads->integer(1, std::numeric_limits<int>::max()));
    }
    b.gflops = counter(summary, "GFLOP/s");
    b.gbps = counter(summary, "GB/s");
    b.noisy = noisy_flag(summary);
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
