#include "tuner/optuna_bridge.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "base/error.h"

#ifndef CUVIL_TUNER_PYTHON_DIR
#define CUVIL_TUNER_PYTHON_DIR "tuner/python"
#endif

namespace cuvil::tuner {

std::string bridge_script_path() {
  const char* dir = std::getenv("CUVIL_TUNER_PYTHON_DIR");
  return std::string(dir && *dir ? dir : CUVIL_TUNER_PYTHON_DIR) + "/cuvil_optuna.py";
}

std::string storage_url(const std::string& study) {
  if (study.find("://") != std::string::npos) return study;
  return "sqlite:///" + std::filesystem::absolute(study).lexically_normal().string();
}

OptunaBridge::OptunaBridge(const BridgeOptions& options) : options_(options) {
  if (options_.script.empty()) options_.script = bridge_script_path();
  if (access(options_.script.c_str(), R_OK) != 0) {
    throw UserError("the Optuna bridge script " + options_.script + " is missing (" +
                    std::strerror(errno) + "); set CUVIL_TUNER_PYTHON_DIR");
  }
  bench::PythonChildOptions child;
  child.what = "the Optuna bridge";
  child.python = options_.python;
  child.script = options_.script;
  child.reply_timeout_s = options_.reply_timeout_s;
  child_ = std::make_unique<bench::PythonChild>(child);
  nlohmann::json hello;
  try {
    hello = call({{"op", "hello"}});
  } catch (const UserError& e) {
    throw UserError(std::string("the Optuna bridge (") + options_.python + " " + options_.script +
                    ") did not start: " + e.what() + " (install python3-optuna or pass --python)");
  }
  if (!hello.value("ok", false)) throw UserError(hello.value("error", std::string("?")));
  optuna_version_ = hello.value("optuna", std::string());
}

OptunaBridge::~OptunaBridge() = default;

nlohmann::json OptunaBridge::call(const nlohmann::json& request) {
  return child_->call(request);
}

nlohmann::json OptunaBridge::call_ok(const nlohmann::json& request) {
  nlohmann::json reply = call(request);
  if (!reply.value("ok", false)) {
    throw UserError("Optuna (" + request.value("op", std::string("?")) +
                    "): " + reply.value("error", std::string("unknown error")));
  }
  return reply;
}

nlohmann::json OptunaBridge::open(const StudyRequest& r) {
  nlohmann::json req = {{"op", "open"},
                        {"storage", r.storage},
                        {"study_name", r.study_name},
                        {"sampler", r.sampler},
                        {"pruner", r.pruner},
                        {"seed", r.seed},
                        {"space", r.space},
                        {"attrs", r.attrs.is_null() ? nlohmann::json::object() : r.attrs},
                        {"allow_mismatch", r.allow_mismatch},
                        {"enqueue", r.enqueue},
                        {"readonly", r.readonly}};
  return call_ok(req);
}

AskedTrial OptunaBridge::ask() {
  const nlohmann::json reply = call_ok({{"op", "ask"}});
  AskedTrial t;
  t.number = reply.at("number").get<int>();
  t.values = reply.at("values");
  t.baseline = reply.value("baseline", false);
  if (reply.contains("retry_of") && reply["retry_of"].is_number_integer()) {
    t.retry_of = reply["retry_of"].get<int>();
  }
  t.requeued = reply.value("requeued", nlohmann::json::array());
  t.recovered = reply.value("recovered", nlohmann::json::array());
  return t;
}

bool OptunaBridge::report(int number, int step, double value) {
  return call_ok({{"op", "report"}, {"number", number}, {"step", step}, {"value", value}})
      .value("prune", false);
}

void OptunaBridge::tell_complete(int number, double value, const nlohmann::json& record) {
  call_ok({{"op", "tell"},
           {"number", number},
           {"state", "complete"},
           {"value", value},
           {"record", record}});
}

void OptunaBridge::tell_failed(int number, const std::string& reason,
                               const nlohmann::json& record) {
  call_ok({{"op", "tell"},
           {"number", number},
           {"state", "fail"},
           {"reason", reason},
           {"record", record}});
}

void OptunaBridge::tell_pruned(int number, const std::string& reason,
                               const nlohmann::json& record) {
  call_ok({{"op", "tell"},
           {"number", number},
           {"state", "pruned"},
           {"reason", reason},
           {"record", record}});
}

nlohmann::json OptunaBridge::best() {
  return call_ok({{"op", "best"}});
}
nlohmann::json OptunaBridge::trials() {
  return call_ok({{"op", "trials"}}).at("trials");
}
nlohmann::json OptunaBridge::fanova(int seed) {
  return call_ok({{"op", "fanova"}, {"seed", seed}}).at("importances");
}

}  // namespace cuvil::tuner
