#include "tuner/trial_log.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <thread>

#include "base/error.h"
#include "passes/target_cpu.h"

#ifndef CUVIL_SOURCE_DIR
#define CUVIL_SOURCE_DIR "."
#endif

namespace cuvil::tuner {

std::string noisy_rungs(const TrialRecord& t) {
  std::string out;
  for (const RungSamples& r : t.rungs) {
    if (r.noisy) out += (out.empty() ? "" : ", ") + r.name;
  }
  return out;
}

nlohmann::json to_json(const TrialRecord& r) {
  nlohmann::json rungs = nlohmann::json::array();
  for (const RungSamples& s : r.rungs) {
    nlohmann::json rung = {
        {"name", s.name}, {"samples_ns", s.samples_ns}, {"median_ms", s.median_ms}};
    if (s.gil_free >= 0) rung["gil_free"] = s.gil_free;
    if (s.noisy) rung["noisy"] = true;
    rungs.push_back(std::move(rung));
  }
  nlohmann::json j = {{"number", r.number},
                      {"state", r.state},
                      {"reason", r.reason},
                      {"values", r.values},
                      {"config_hash", r.config_hash},
                      {"rungs", rungs},
                      {"baseline", r.baseline},
                      {"retry_of", r.retry_of},
                      {"study", r.study},
                      {"suite", r.suite},
                      {"sampler", r.sampler},
                      {"objective", r.objective},
                      {"machine", r.machine},
                      {"commit", r.commit},
                      {"started", r.started},
                      {"finished", r.finished},
                      {"verified_kernels", r.verified_kernels},
                      {"pinned", r.pinned}};
  j["value"] = r.has_value ? nlohmann::json(r.value) : nlohmann::json(nullptr);
  return j;
}

namespace {

void check_time_ms(const nlohmann::json& v, const std::string& field) {
  if (!v.is_number()) {
    throw UserError("field '" + field + "': " + v.dump() + " is not a time in ms");
  }
  const double x = v.get<double>();
  if (!(std::isfinite(x) && x > 0)) {
    throw UserError("field '" + field + "': " + v.dump() + " is not a positive finite time in ms");
  }
}

}  // namespace

TrialRecord record_from_json(const nlohmann::json& j) {
  TrialRecord r;
  r.number = j.at("number").get<int>();
  r.state = j.at("state").get<std::string>();
  r.reason = j.value("reason", std::string());
  if (j.contains("value") && !j["value"].is_null()) {
    if (r.state == "complete" || r.state == "pruned") check_time_ms(j["value"], "value");
    if (j["value"].is_number()) {
      r.value = j["value"].get<double>();
      r.has_value = true;
    }
  }
  if (r.state == "complete" && !r.has_value) {
    throw UserError("field 'value': missing for a complete trial");
  }
  r.values = j.value("values", nlohmann::json::object());
  if (j.contains("verified_kernels") && j["verified_kernels"].is_object()) {
    r.verified_kernels = j["verified_kernels"];
  }
  if (j.contains("pinned") && j["pinned"].is_number_integer()) r.pinned = j["pinned"];
  r.config_hash = j.value("config_hash", std::string());
  for (const auto& s : j.value("rungs", nlohmann::json::array())) {
    RungSamples rs;
    rs.name = s.at("name").get<std::string>();
    const std::string field = "rungs[" + std::to_string(r.rungs.size()) + "]";
    if (s.contains("median_ms")) check_time_ms(s["median_ms"], field + ".median_ms");
    rs.samples_ns = s.value("samples_ns", std::vector<double>{});
    for (double x : rs.samples_ns) {
      if (!(std::isfinite(x) && x > 0)) {
        throw UserError("field '" + field + ".samples_ns': " + nlohmann::json(x).dump() +
                        " is not a positive finite time in ns");
      }
    }
    rs.median_ms = s.value("median_ms", 0.0);
    if (s.contains("gil_free") && s["gil_free"].is_number())
      rs.gil_free = s["gil_free"].get<double>();
    if (s.contains("noisy")) {
      if (!s["noisy"].is_boolean()) {
        throw UserError("field '" + field + ".noisy': expected true or false, got " +
                        s["noisy"].dump());
      }
      rs.noisy = s["noisy"].get<bool>();
    }
    r.rungs.push_back(std::move(rs));
  }
  r.baseline = j.value("baseline", false);
  r.retry_of = j.value("retry_of", -1);
  r.study = j.value("study", std::string());
  r.suite = j.value("suite", std::string());
  r.sampler = j.value("sampler", std::string());
  r.objective = j.value("objective", std::string());
  r.machine = j.value("machine", nlohmann::json::object());
  r.commit = j.value("commit", std::string());
  r.started = j.value("started", std::string());
  r.finished = j.value("finished", std::string());
  return r;
}

void append_trial(const std::string& path, const TrialRecord& record) {
  FILE* f = std::fopen(path.c_str(), "a");
  if (!f) throw UserError(path + ": cannot append to the trial log: " + std::strerror(errno));
  const std::string line = to_json(record).dump() + "\n";
  const bool ok = std::fwrite(line.data(), 1, line.size(), f) == line.size();
  std::fflush(f);
  fsync(fileno(f));
  std::fclose(f);
  if (!ok) throw UserError(path + ": writing the trial log failed");
}

std::vector<TrialRecord> read_trial_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(path + ": cannot read the trial log: " + std::strerror(errno));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::vector<TrialRecord> records;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(lines[i]);
    } catch (const nlohmann::json::exception& e) {
      if (i + 1 == lines.size()) break;  // torn by a kill mid-write
      throw UserError(path + ":" + std::to_string(i + 1) + ": not a trial record: " + e.what());
    }
    try {
      records.push_back(record_from_json(j));
    } catch (const nlohmann::json::exception& e) {
      throw UserError(path + ":" + std::to_string(i + 1) + ": not a trial record: " + e.what());
    } catch (const UserError& e) {
      throw UserError(path + ":" + std::to_string(i + 1) + ": " + e.what());
    }
  }
  return records;
}

namespace {
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown";
}
}  // namespace

nlohmann::json machine_fingerprint(int threads) {
  utsname u{};
  uname(&u);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return {{"cpu_model", cpu_model()},
          {"logical_cores", std::thread::hardware_concurrency()},
          {"threads", threads},
          {"host", host},
          {"kernel", std::string(u.sysname) + " " + u.release},
          // What the trials' plans were compiled for (CUVIL_CPU_DISABLE counts): tune-gen writes
          // it as the tuned file's target CPU.
          {"cpu_features", passes::host_cpu_features()}};
}

std::string source_commit() {
  // Appended, not `std::string(...) + CUVIL_SOURCE_DIR + ...`: GCC 12 at -O3 reports a false
  // -Warray-bounds on that temporary's short-string copy.
  std::string cmd = "git -C '";
  cmd += CUVIL_SOURCE_DIR;
  cmd += "' describe --always --dirty --abbrev=12 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return "unknown";
  char buffer[128] = {};
  std::string out;
  if (std::fgets(buffer, sizeof(buffer), p)) out = buffer;
  pclose(p);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out.empty() ? "unknown" : out;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

}  // namespace cuvil::tuner
