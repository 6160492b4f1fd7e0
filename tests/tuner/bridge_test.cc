// The Optuna bridge against Optuna itself (python3-optuna under /usr/bin/python3): short studies
// with the random sampler on a synthetic objective, no measuring.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>

#include "base/error.h"
#include "tuner/optuna_bridge.h"
#include "tuner/search_space.h"
#include "tuner/space_file.h"

namespace cuvil::tuner {
namespace {

using passes::ParamSpec;

std::string temp_study(const std::string& name) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("cuvil_bridge_" + std::to_string(getpid()) + "_" + name + ".db"))
                               .string();
  std::filesystem::remove(path);
  return path;
}

// One bridge for the tests that do not kill it: starting Python and importing Optuna costs
// seconds on a busy machine.
OptunaBridge* shared_bridge() {
  static std::unique_ptr<OptunaBridge> bridge = []() -> std::unique_ptr<OptunaBridge> {
    try {
      return std::make_unique<OptunaBridge>(BridgeOptions{});
    } catch (const UserError&) {
      return nullptr;
    }
  }();
  return bridge.get();
}

bool optuna_available() {
  return shared_bridge() != nullptr;
}

std::vector<PassSchema> toy() {
  ParamSpec x;
  x.name = "x";
  x.type = ParamSpec::Type::integer;
  x.int_min = 1;
  x.int_max = 33;
  x.default_value = int64_t{16};
  ParamSpec tile = x;
  tile.name = "tile";
  tile.int_min = 1;
  tile.int_max = 7;
  tile.default_value = int64_t{3};
  ParamSpec block = x;
  block.name = "block";
  block.int_min = 1;
  block.int_max = 100;
  block.default_value = int64_t{12};
  ParamSpec p2 = x;
  p2.name = "p2";
  p2.int_min = 3;
  p2.int_max = 300;
  p2.default_value = int64_t{64};
  ParamSpec mode;
  mode.name = "mode";
  mode.type = ParamSpec::Type::choice;
  mode.choices = {"a", "b"};
  mode.default_value = std::string("a");
  return {{"toy", {x, tile, block, p2, mode}}};
}

SearchSpace toy_space() {
  SearchSpace s = derive_space(toy(), "cpu");
  narrow_space(s,
               "passes:\n  toy:\n    params:\n"
               "      block: { multiple_of: tile, factor_min: 1, factor_max: 40 }\n"
               "      p2: { min: 3, max: 300, power_of_two: true }\n",
               "toy.yaml", "");
  return s;
}

StudyRequest request(const std::string& path, const SearchSpace& s) {
  StudyRequest r;
  r.storage = storage_url(path);
  r.study_name = "toy";
  r.sampler = "random";
  r.pruner = "none";
  r.seed = 7;
  r.space = space_to_json(s);
  r.attrs = {{"suite", "toy"}, {"space_hash", space_hash(s)}};
  r.enqueue = {default_values(s)};
  return r;
}

double synthetic(const nlohmann::json& v) {
  if (!v.value("toy", false)) return 100;
  const double x = v["toy.x"].get<double>();
  return (x - 5) * (x - 5) + (v["toy.mode"] == "b" ? 0 : 3) + 1;
}

TEST(OptunaBridge, HelloReportsTheOptunaVersion) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  OptunaBridge& b = *shared_bridge();
  EXPECT_FALSE(b.optuna_version().empty());
}

TEST(OptunaBridge, AskTellStudyFindsTheBestOfItsTrials) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("asktell");
  const SearchSpace s = toy_space();
  OptunaBridge& b = *shared_bridge();
  const nlohmann::json opened = b.open(request(path, s));
  EXPECT_TRUE(opened["created"].get<bool>());
  double best = INFINITY;
  for (int i = 0; i < 8; ++i) {
    const AskedTrial t = b.ask();
    EXPECT_EQ(t.number, i);
    EXPECT_EQ(t.baseline, i == 0);  // the default configuration is tried first
    if (i == 0) {
      EXPECT_EQ(t.values["toy.x"], 16);
    }
    const double y = synthetic(t.values);
    if (i == 3) {
      b.tell_failed(t.number, "synthetic failure");
      continue;
    }
    b.tell_complete(t.number, y);
    best = std::min(best, y);
  }
  const nlohmann::json top = b.best();
  EXPECT_DOUBLE_EQ(top["value"].get<double>(), best);
  const nlohmann::json trials = b.trials();
  ASSERT_EQ(trials.size(), 8u);
  EXPECT_EQ(trials[3]["state"], "fail");
  EXPECT_EQ(trials[3]["user_attrs"]["fail_reason"], "synthetic failure");
  std::filesystem::remove(path);
}

TEST(OptunaBridge, ConstrainedParametersAreSampledInTheirTransformedSpace) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("constraints");
  const SearchSpace s = toy_space();
  OptunaBridge& b = *shared_bridge();
  b.open(request(path, s));
  int with_toy = 0;
  for (int i = 0; i < 12; ++i) {
    const AskedTrial t = b.ask();
    if (t.values.value("toy", false)) {
      ++with_toy;
      const int64_t tile = t.values["toy.tile"].get<int64_t>();
      const int64_t block = t.values["toy.block"].get<int64_t>();
      const int64_t p2 = t.values["toy.p2"].get<int64_t>();
      EXPECT_EQ(block % tile, 0) << block << " " << tile;
      EXPECT_GE(block, 1);
      EXPECT_LE(block, 100);
      EXPECT_EQ(p2 & (p2 - 1), 0) << p2;
      EXPECT_GE(p2, 4);
      EXPECT_LE(p2, 256);
    } else {
      EXPECT_FALSE(t.values.contains("toy.x"));  // conditional: absent while the pass is off
    }
    b.tell_complete(t.number, 1.0);
  }
  EXPECT_GT(with_toy, 0);
  std::filesystem::remove(path);
}

TEST(OptunaBridge, PrunerAnswersIntermediateReports) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("prune");
  StudyRequest r = request(path, toy_space());
  r.pruner = "median";
  OptunaBridge& b = *shared_bridge();
  b.open(r);
  for (int i = 0; i < 4; ++i) {
    const AskedTrial t = b.ask();
    EXPECT_FALSE(b.report(t.number, 0, 1.0 - i * 0.01));  // each better than the last
    b.report(t.number, 1, 2.0);
    b.tell_complete(t.number, 2.0);
  }
  const AskedTrial slow = b.ask();
  EXPECT_TRUE(b.report(slow.number, 0, 50.0));  // far worse than the median at step 0
  b.tell_pruned(slow.number, "pruned after rung 0");
  EXPECT_EQ(b.trials()[4]["state"], "pruned");
  b.tell_complete(b.ask().number, 1.0);  // the shared bridge moves on cleanly
  std::filesystem::remove(path);
}

TEST(OptunaBridge, ResumeFailsAndRetriesTrialsLeftRunning) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("resume");
  const SearchSpace s = toy_space();
  nlohmann::json lost_values;
  {
    OptunaBridge b(BridgeOptions{});
    b.open(request(path, s));
    for (int i = 0; i < 3; ++i) b.tell_complete(b.ask().number, 1.0 + i);
    lost_values = b.ask().values;  // trial 3: never told, as if the tuner was killed
    kill(b.pid(), SIGKILL);
  }
  OptunaBridge b(BridgeOptions{});
  const nlohmann::json opened = b.open(request(path, s));
  EXPECT_FALSE(opened["created"].get<bool>());
  ASSERT_EQ(opened["requeued"].size(), 1u);
  EXPECT_EQ(opened["requeued"][0]["number"], 3);
  const AskedTrial retry = b.ask();
  EXPECT_EQ(retry.number, 4);  // numbering continues
  EXPECT_EQ(retry.retry_of, 3);
  EXPECT_EQ(retry.values, lost_values);
  const nlohmann::json trials = b.trials();
  EXPECT_EQ(trials[3]["state"], "fail");
  EXPECT_EQ(trials[0]["state"], "complete");  // finished trials are kept
  EXPECT_EQ(trials[2]["value"], 3.0);
  std::filesystem::remove(path);
}

// A kill during trial 0 (the baseline): its retry is still the baseline.
TEST(OptunaBridge, ARetriedBaselineStaysTheBaseline) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("baseline_retry");
  const SearchSpace s = toy_space();
  {
    OptunaBridge b(BridgeOptions{});
    b.open(request(path, s));
    EXPECT_TRUE(b.ask().baseline);  // trial 0, never told: the tuner was killed
    kill(b.pid(), SIGKILL);
  }
  OptunaBridge b(BridgeOptions{});
  const nlohmann::json opened = b.open(request(path, s));
  ASSERT_EQ(opened["requeued"].size(), 1u);
  EXPECT_TRUE(opened["requeued"][0].value("baseline", false));
  const AskedTrial retry = b.ask();
  EXPECT_EQ(retry.retry_of, 0);
  EXPECT_TRUE(retry.baseline);
  EXPECT_EQ(retry.values, default_values(s));
  std::filesystem::remove(path);
}

// The record told with a trial is kept by the study; a trial whose record was stored but whose
// state was never told (the tuner died in between) is finished as recorded, not retried.
TEST(OptunaBridge, TheStudyKeepsTheRecordAndFinishesARecordedTrial) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("record");
  const SearchSpace s = toy_space();
  const nlohmann::json record = {{"number", 0},
                                 {"state", "complete"},
                                 {"value", 2.5},
                                 {"baseline", true},
                                 {"suite", "toy"},
                                 {"study", "toy"},
                                 {"rungs", nlohmann::json::array()}};
  {
    OptunaBridge b(BridgeOptions{});
    b.open(request(path, s));
    b.tell_complete(b.ask().number, 2.5, record);
    const nlohmann::json trials = b.trials();
    EXPECT_EQ(trials[0]["user_attrs"]["cuvil_record"], record);
    const int number = b.ask().number;  // trial 1: its record stored, then the tuner dies
    nlohmann::json lost = record;
    lost["number"] = number;
    lost["value"] = 1.5;
    lost["baseline"] = false;
    ASSERT_TRUE(
        b.call({{"op", "record"}, {"number", number}, {"record", lost}}).value("ok", false));
    kill(b.pid(), SIGKILL);
  }
  OptunaBridge b(BridgeOptions{});
  const nlohmann::json opened = b.open(request(path, s));
  EXPECT_TRUE(opened["requeued"].empty());
  ASSERT_EQ(opened["recovered"].size(), 1u);
  EXPECT_EQ(opened["recovered"][0]["number"], 1);
  const nlohmann::json trials = b.trials();
  ASSERT_EQ(trials.size(), 2u);
  EXPECT_EQ(trials[1]["state"], "complete");
  EXPECT_DOUBLE_EQ(trials[1]["value"].get<double>(), 1.5);
  EXPECT_EQ(b.best()["number"], 1);
  std::filesystem::remove(path);
}

TEST(OptunaBridge, AReaderNeverCreatesAStudyFile) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("missing");
  StudyRequest r = request(path, toy_space());
  r.readonly = true;
  OptunaBridge& b = *shared_bridge();
  try {
    b.open(r);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("no such study file"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  { std::ofstream(path) << "not a database\n"; }
  try {
    b.open(r);
    FAIL();
  } catch (const UserError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("not an Optuna study"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;  // one line
  }
  std::filesystem::remove(path);
}

TEST(OptunaBridge, StudyOfAnotherSpaceIsRefused) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  const std::string path = temp_study("mismatch");
  {
    OptunaBridge b(BridgeOptions{});
    b.open(request(path, toy_space()));
  }
  StudyRequest r = request(path, toy_space());
  r.attrs["suite"] = "other";
  OptunaBridge b(BridgeOptions{});
  EXPECT_THROW(b.open(r), UserError);
  r.allow_mismatch = true;
  EXPECT_NO_THROW(b.open(r));
  std::filesystem::remove(path);
}

TEST(OptunaBridge, UnknownSamplerAndBadStorageAreErrors) {
  if (!optuna_available()) GTEST_SKIP() << "python3-optuna is not installed";
  OptunaBridge& b = *shared_bridge();
  StudyRequest r = request(temp_study("bad"), toy_space());
  r.sampler = "annealing";
  EXPECT_THROW(b.open(r), UserError);
  r.sampler = "random";
  r.storage = "postgresql://nobody@127.0.0.1:1/none";
  EXPECT_THROW(b.open(r), UserError);
  // The process keeps serving after errors.
  EXPECT_FALSE(b.call({{"op", "nonsense"}}).value("ok", true));
}

TEST(OptunaBridge, MissingInterpreterIsAClearError) {
  BridgeOptions o;
  o.python = "/nonexistent/python3";
  try {
    OptunaBridge b(o);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/python3"), std::string::npos);
  }
}

TEST(OptunaBridge, InterpreterWithoutOptunaIsAClearError) {
  BridgeOptions o;
  o.python = "/bin/sh";  // runs, but is not Python: the handshake fails
  EXPECT_THROW(OptunaBridge b(o), UserError);
}

TEST(OptunaBridge, StorageUrlOfAFileIsAbsoluteSqlite) {
  EXPECT_EQ(storage_url("postgresql://u@h/db"), "postgresql://u@h/db");
  EXPECT_EQ(storage_url("/tmp/a.db"), "sqlite:////tmp/a.db");
  EXPECT_EQ(storage_url("x.db").rfind("sqlite:////", 0), 0u);
}

}  // namespace
}  // namespace cuvil::tuner
