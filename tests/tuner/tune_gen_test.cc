// The trial log round trip and cuvil-tune-gen on a made-up log (no Optuna, no measuring).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "tuner/pruned_space.h"
#include "tuner/search_space.h"
#include "tuner/space_file.h"
#include "tuner/study_trials.h"
#include "tuner/trial_log.h"
#include "tuner/tune_gen.h"

namespace cuvil::tuner {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("cuvil_tunegen_" + std::to_string(getpid()) + "_" + name))
      .string();
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A log of 13 trials: the baseline, depth-dependent latencies, one failure; each trial's machine
// block is `machine`; trial `noisy_trial`'s rung (-1: none) was measured NOISY.
std::string write_log(const nlohmann::json& machine = nlohmann::json::object(),
                      int noisy_trial = -1) {
  const std::string path = temp_path("log.jsonl");
  std::filesystem::remove(path);
  const SearchSpace space = space_from_registry("cpu");
  for (int i = 0; i < 13; ++i) {
    TrialRecord r;
    r.number = i;
    r.suite = "resnet50";
    r.study = "cuvil-resnet50";
    r.sampler = "random";
    r.values = default_values(space);
    r.baseline = i == 0;
    r.machine = machine;
    r.finished = "2026-01-01T00:00:" + std::to_string(10 + i) + "Z";
    if (i == 5) {
      r.state = "fail";
      r.reason = "crashed (signal 11, SIGSEGV)";
    } else {
      const int depth = i == 0 ? 4 : i % 9;
      r.values["fuse-elementwise.max_fusion_depth"] = depth;
      r.values["layout.memory_layout"] = i % 2 ? "nchw" : "nhwc";
      r.state = "complete";
      RungSamples s;
      s.name = "b1";
      for (int k = 0; k < 7; ++k) s.samples_ns.push_back((60.0 - 4 * depth + 0.1 * k) * 1e6);
      s.median_ms = 60.0 - 4 * depth + 0.3;
      s.noisy = i == noisy_trial;
      r.rungs = {s};
      r.value = s.median_ms;
      r.has_value = true;
    }
    append_trial(path, r);
  }
  return path;
}

// Options for a fast tune-gen of the resnet50 log: no fANOVA, no verification, 5 refits,
// writing `output` (a name in the temporary folder).
TuneGenOptions fast_options(const std::string& trial_log, const std::string& output) {
  TuneGenOptions o;
  o.trial_log = trial_log;
  o.workload.suite = "resnet50";
  o.fanova = false;
  o.verify = false;
  o.refits = 5;
  o.output = temp_path(output);
  return o;
}

TEST(TrialLog, RoundTripsEveryField) {
  const std::string path = write_log();
  const std::vector<TrialRecord> records = read_trial_log(path);
  ASSERT_EQ(records.size(), 13u);
  EXPECT_TRUE(records[0].baseline);
  EXPECT_EQ(records[5].state, "fail");
  EXPECT_EQ(records[5].reason, "crashed (signal 11, SIGSEGV)");
  EXPECT_FALSE(records[5].has_value);
  EXPECT_EQ(records[3].rungs[0].samples_ns.size(), 7u);
  EXPECT_EQ(records[3].values["fuse-elementwise.max_fusion_depth"], 3);
  EXPECT_FALSE(records[3].rungs[0].noisy);
  std::filesystem::remove(path);
  const std::vector<TrialRecord> noisy = read_trial_log(write_log(nlohmann::json::object(), 3));
  EXPECT_TRUE(noisy[3].rungs[0].noisy);
  EXPECT_FALSE(noisy[4].rungs[0].noisy);
  std::filesystem::remove(path);
}

TEST(TrialLog, TornLastLineIsSkippedButAMalformedMiddleLineIsAnError) {
  const std::string path = write_log();
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"number\": 13, \"sta";
  }
  EXPECT_EQ(read_trial_log(path).size(), 13u);
  {
    std::ofstream out(path, std::ios::app);
    out << "\n{}\n";
  }
  EXPECT_THROW(read_trial_log(path), UserError);
  std::filesystem::remove(path);
}

// Points XDG_CACHE_HOME at a folder of this test's own while alive: the provenance names the
// machine's cached peak, and tests running beside this one (ctest -j) may re-measure the shared
// cache between the two calls.
class PrivatePeakCache {
 public:
  PrivatePeakCache() : dir_(temp_path("peak-cache")) {
    if (const char* old = std::getenv("XDG_CACHE_HOME")) old_ = old;
    std::filesystem::create_directories(dir_);
    setenv("XDG_CACHE_HOME", dir_.c_str(), 1);
  }
  ~PrivatePeakCache() {
    old_.empty() ? unsetenv("XDG_CACHE_HOME") : setenv("XDG_CACHE_HOME", old_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }

 private:
  std::string dir_, old_;
};

TEST(TuneGen, WritesTheBestConfigDeterministicallyAndItLoads) {
  const PrivatePeakCache cache;
  const std::string log = write_log();
  TuneGenOptions o = fast_options(log, "a.cuvilpass");
  ASSERT_EQ(tune_gen(o), 0);
  const std::string first = read(o.output);
  ASSERT_EQ(tune_gen(o), 0);
  EXPECT_EQ(read(o.output), first);  // same input, same file

  const passes::PipelineConfig c = passes::load_cuvilpass(o.output);
  EXPECT_EQ(c.suite, "resnet50");
  bool found = false;
  for (const auto& p : c.passes) {
    if (p.name == "fuse-elementwise") {
      EXPECT_EQ(std::get<int64_t>(p.params.at("max_fusion_depth")), 8);  // trial 8 is the best
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_NE(c.provenance_yaml.find("speedup"), std::string::npos);
  EXPECT_NE(c.provenance_yaml.find("fuse-elementwise.max_fusion_depth"), std::string::npos);
  std::filesystem::remove(o.output);
  std::filesystem::remove(log);
}

TEST(TuneGen, ABestTrialMeasuredNoisySaysSoLoudly) {
  const PrivatePeakCache cache;
  TuneGenOptions o = fast_options("", "noisy.cuvilpass");
  for (const int noisy_trial : {8, 3}) {  // the best (depth 8), then another
    o.trial_log = write_log(nlohmann::json::object(), noisy_trial);
    testing::internal::CaptureStderr();
    ASSERT_EQ(tune_gen(o), 0);
    const std::string err = testing::internal::GetCapturedStderr();
    if (noisy_trial == 8) {
      EXPECT_NE(err.find("the best trial 8 (b1) measured NOISY"), std::string::npos) << err;
    } else {
      EXPECT_EQ(err.find("NOISY"), std::string::npos) << err;
    }
    std::filesystem::remove(o.trial_log);
  }
  std::filesystem::remove(o.output);
}

TEST(TuneGen, TheProvenanceNamesThePeakTheStudyMeasuredAgainst) {
  const PrivatePeakCache cache;
  TuneGenOptions o = fast_options("", "peak.cuvilpass");
  o.trial_log = write_log({{"cpu_model", "Test CPU"},
                           {"threads", 2},
                           {"peak_fp32_gflops", 123.5},
                           {"peak_mem_read_gbps", 45.25},
                           {"peak_measured_at", "2026-01-01"},
                           {"peak_provisional", true}});
  ASSERT_EQ(tune_gen(o), 0);
  const std::string with = passes::load_cuvilpass(o.output).provenance_yaml;
  EXPECT_NE(with.find("peak_fp32_gflops: 123.5"), std::string::npos) << with;
  EXPECT_NE(with.find("peak_mem_read_gbps: 45.25"), std::string::npos) << with;
  EXPECT_NE(with.find("the study (measured 2026-01-01, provisional"), std::string::npos) << with;
  std::filesystem::remove(o.trial_log);
  o.trial_log = write_log();  // an older study: its trials name no peak
  ASSERT_EQ(tune_gen(o), 0);
  const std::string without = passes::load_cuvilpass(o.output).provenance_yaml;
  EXPECT_NE(without.find("do not record the peak"), std::string::npos) << without;
  std::filesystem::remove(o.trial_log);
  std::filesystem::remove(o.output);
}

// The tuned file is compiled for the CPU its trials ran on, on every host: the trials' machine
// record names the features, tune-gen writes them as the file's cpu_features.
TEST(TuneGen, TheTunedFileNamesTheCpuItWasTunedFor) {
  TuneGenOptions o;
  o.workload.suite = "resnet50";
  o.fanova = false;
  o.verify = false;
  o.refits = 0;
  o.force = true;
  o.output = temp_path("features.cuvilpass");
  o.trial_log = write_log(
      {{"cpu_model", "Test CPU"}, {"cpu_features", nlohmann::json::array({"avx512_vnni"})}});
  ASSERT_EQ(tune_gen(o), 0);
  const passes::PipelineConfig named = passes::load_cuvilpass(o.output);
  ASSERT_TRUE(named.cpu_features.has_value());
  EXPECT_EQ(*named.cpu_features, std::vector<std::string>{"avx512_vnni"});
  std::filesystem::remove(o.trial_log);
  o.trial_log = write_log({{"cpu_model", "Test CPU"}});  // an older study: the host decides
  ASSERT_EQ(tune_gen(o), 0);
  EXPECT_FALSE(passes::load_cuvilpass(o.output).cpu_features.has_value());
  std::filesystem::remove(o.trial_log);
  o.trial_log = write_log({{"cpu_features", nlohmann::json::array({"avx512_vnni", "sse9"})}});
  try {
    tune_gen(o);
    ADD_FAILURE() << "an unknown feature in the log was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("machine.cpu_features: '\"sse9\"' is not one of"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(o.trial_log);
  std::filesystem::remove(o.output);
}

TEST(TuneGen, ThresholdResetsUnimportantParametersToDefaults) {
  const std::string log = write_log();
  TuneGenOptions o = fast_options(log, "b.cuvilpass");
  o.refits = 0;
  o.importance_threshold = 0.5;
  o.space_output = temp_path("pruned.yaml");
  o.force = true;  // 12 trials: too few to rank reliably, written anyway for this test
  ASSERT_EQ(tune_gen(o), 0);
  const passes::PipelineConfig c = passes::load_cuvilpass(o.output);
  for (const auto& p : c.passes) {
    if (p.name == "layout") {
      EXPECT_EQ(std::get<std::string>(p.params.at("memory_layout")), "nhwc");
    }
  }
  // The pruned space loads as a space file and leaves the important parameter searched.
  SearchSpace s = space_from_registry("cpu");
  load_space_file(s, o.space_output, "resnet50");
  EXPECT_FALSE(s.find("fuse-elementwise.max_fusion_depth")->fixed.has_value());
  EXPECT_TRUE(s.find("layout.memory_layout")->fixed.has_value());
  std::filesystem::remove(o.output);
  std::filesystem::remove(o.space_output);
  std::filesystem::remove(log);
}

TEST(TuneGen, NoCompleteTrialIsAnError) {
  const std::string path = temp_path("empty.jsonl");
  TrialRecord r;
  r.number = 0;
  r.suite = "resnet50";
  r.state = "fail";
  std::filesystem::remove(path);
  append_trial(path, r);
  TuneGenOptions o;
  o.trial_log = path;
  o.workload.suite = "resnet50";
  o.output = temp_path("c.cuvilpass");
  EXPECT_THROW(tune_gen(o), UserError);
  std::filesystem::remove(path);
}

TEST(TuneGen, SpeedupIntervalBracketsTheRatio) {
  TrialRecord base, best;
  base.value = 20;
  best.value = 10;
  RungSamples a{"b1", {19e6, 20e6, 21e6, 20e6, 20.5e6}, 20};
  RungSamples b{"b1", {9.5e6, 10e6, 10.5e6, 10e6, 10.2e6}, 10};
  base.rungs = {a};
  best.rungs = {b};
  const Speedup s = speedup_interval(base, best, 200, 1);
  EXPECT_DOUBLE_EQ(s.value, 2.0);
  EXPECT_LE(s.low, 2.0);
  EXPECT_GE(s.high, 2.0);
  EXPECT_GT(s.low, 1.7);
}

TEST(TuneGen, SpeedupIntervalWidensWhenATrialsMachineDrifted) {
  // The default's 40 samples: 20 ms, then 24 ms for the last 10 (a neighbour started), with
  // small jitter; the same samples spread evenly through the run have the same median and
  // spread but no drift. Had the neighbour come earlier, the first trial's median would differ.
  TrialRecord base, shuffled, best;
  RungSamples drifting{"b1", {}, 0}, mixed{"b1", {}, 0}, fast{"b1", {}, 10};
  for (int i = 0; i < 40; ++i) {
    const double jitter = (i % 5) * 0.02e6;
    drifting.samples_ns.push_back((i < 30 ? 20e6 : 24e6) + jitter);
    mixed.samples_ns.push_back((i % 4 == 3 ? 24e6 : 20e6) + jitter);
    fast.samples_ns.push_back(10e6 + jitter);
  }
  base.rungs = {drifting};
  shuffled.rungs = {mixed};
  best.rungs = {fast};
  base.value = shuffled.value = 20;
  best.value = 10;
  const Speedup apart = speedup_interval(base, best, 1000, 1);
  const Speedup steady = speedup_interval(shuffled, best, 1000, 1);
  EXPECT_GT(apart.high - apart.low, 1.5 * (steady.high - steady.low))
      << apart.low << ".." << apart.high << " against " << steady.low << ".." << steady.high;
}

// The second stage's space: written by tune-gen, read back by the same parser `tune --space` uses.
TEST(TuneGen, PrunedSpaceRoundTripsThroughTheSpaceFileParser) {
  SearchSpace study = space_from_registry("cpu");
  narrow_space(study,
               "passes:\n  attention-tiling: { freeze: true }\n  threading:\n    params:\n"
               "      threads: { min: 0, max: 8 }\n  memory-plan:\n    params:\n"
               "      alignment: { min: 16, max: 4096, power_of_two: true }\n",
               "study.yaml", "resnet50");
  ImportanceReport importance;
  importance.ranking = {{"threading.threads", 0.3, 0.6},
                        {"memory-plan.alignment", 0.1, 0.25},
                        {"fuse-elementwise", 0.05, 0.1},
                        {"layout.memory_layout", 0.01, 0.02}};
  nlohmann::json values = default_values(study);
  values["threading.threads"] = 2;
  values["memory-plan.alignment"] = 128;
  values["layout.memory_layout"] = "nchw";
  values["gemm-tiling.kc"] = 333;
  const std::string yaml = pruned_space_yaml("resnet50", study, values, importance, 0.05);

  SearchSpace pruned = space_from_registry("cpu");
  narrow_space(pruned, yaml, "pruned.yaml", "resnet50");
  std::vector<std::string> searched;
  for (const Dimension* d : pruned.searched()) searched.push_back(d->name);
  EXPECT_EQ(searched, (std::vector<std::string>{"fuse-elementwise", "threading.threads",
                                                "memory-plan.alignment"}));
  // Important parameters keep the study's ranges, not the registry's.
  EXPECT_EQ(pruned.find("threading.threads")->int_max, 8);
  EXPECT_TRUE(pruned.find("memory-plan.alignment")->power_of_two);
  EXPECT_EQ(pruned.find("memory-plan.alignment")->int_min, 16);
  // The rest is fixed at the written configuration's values.
  EXPECT_EQ(std::get<std::string>(*pruned.find("layout.memory_layout")->fixed), "nchw");
  EXPECT_EQ(std::get<int64_t>(*pruned.find("gemm-tiling.kc")->fixed), 333);
  EXPECT_TRUE(std::get<bool>(*pruned.find("layout")->fixed));
  // Its baseline is a valid pipeline.
  EXPECT_NO_THROW(config_from_values(pruned, default_values(pruned), "resnet50"));
  // A pruned space belongs to its suite.
  SearchSpace other = space_from_registry("cpu");
  EXPECT_THROW(narrow_space(other, yaml, "pruned.yaml", "llama3-8b"), UserError);
}

TEST(TuneGen, AToleranceOutsideZeroToOneIsAnError) {
  const std::string log = write_log();
  TuneGenOptions o;
  o.trial_log = log;
  o.workload.suite = "resnet50";
  o.fanova = false;
  o.verify = false;
  o.output = temp_path("d.cuvilpass");
  o.confirm = true;
  o.confirm_tolerance = -0.01;
  EXPECT_THROW(tune_gen(o), UserError);
  o.confirm_tolerance = 1.5;
  EXPECT_THROW(tune_gen(o), UserError);
  EXPECT_FALSE(std::filesystem::exists(o.output));
  std::filesystem::remove(log);
}

TEST(TuneGen, AnUnwritableSpaceOutputFailsBeforeAnythingIsWritten) {
  const std::string log = write_log();
  TuneGenOptions o;
  o.trial_log = log;
  o.workload.suite = "resnet50";
  o.fanova = false;
  o.verify = false;
  o.output = temp_path("e.cuvilpass");
  o.space_output = "/nonexistent-dir/pruned.yaml";
  EXPECT_THROW(tune_gen(o), UserError);
  EXPECT_FALSE(std::filesystem::exists(o.output));
  std::filesystem::remove(log);
}

TEST(TrialLog, ANoisyFlagThatIsNotABooleanNamesFileLineAndField) {
  const std::string path = write_log();
  {
    std::ofstream out(path, std::ios::app);
    out << "{\"number\": 13, \"state\": \"complete\", \"suite\": \"resnet50\", \"value\": 5, "
           "\"rungs\": [{\"name\": \"b1\", \"median_ms\": 5, \"noisy\": \"yes\"}]}\n";
  }
  try {
    read_trial_log(path);
    ADD_FAILURE() << "accepted noisy: \"yes\"";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ":14: field 'rungs[0].noisy': expected true or false, got \"yes\"");
  }
  std::filesystem::remove(path);
}

// Best values a log cannot hold: a clear error naming the file, the line and the field.
TEST(TrialLog, NonPositiveTimesAreBadInputNamingFileLineAndField) {
  for (const char* bad : {"-5", "0"}) {
    const std::string path = write_log();
    {
      std::ofstream out(path, std::ios::app);
      out << "{\"number\": 13, \"state\": \"complete\", \"suite\": \"resnet50\", \"value\": " << bad
          << "}\n";
      out << "{\"number\": 14, \"state\": \"fail\", \"suite\": \"resnet50\"}\n";
    }
    try {
      read_trial_log(path);
      ADD_FAILURE() << "accepted value " << bad;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()),
                path + ":14: field 'value': " + bad + " is not a positive finite time in ms");
    }
    std::filesystem::remove(path);
  }
  const std::string path = temp_path("rung.jsonl");
  {
    std::ofstream out(path);
    out << "{\"number\": 0, \"state\": \"complete\", \"value\": 2, \"rungs\": [{\"name\": \"b1\", "
           "\"median_ms\": -1, \"samples_ns\": [1]}]}\n{}\n";
  }
  try {
    read_trial_log(path);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":1: field 'rungs[0].median_ms'"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

TrialRecord complete(int number, double value, bool baseline = false) {
  TrialRecord r;
  r.number = number;
  r.state = "complete";
  r.value = value;
  r.has_value = true;
  r.baseline = baseline;
  r.suite = "resnet50";
  r.values = {{"x", number}};
  r.rungs = {RungSamples{"b1", {value * 1e6}, value}};
  return r;
}

nlohmann::json study_trial(const TrialRecord& r, bool with_record = true) {
  nlohmann::json attrs = {{"cuvil_values", r.values}};
  if (r.baseline) attrs["baseline"] = true;
  if (with_record) attrs["cuvil_record"] = to_json(r);
  return {{"number", r.number},
          {"state", r.state},
          {"value", r.has_value ? nlohmann::json(r.value) : nlohmann::json(nullptr)},
          {"values", r.values},
          {"user_attrs", attrs}};
}

// Defect: a kill between Optuna's tell and the log append left the best trial out of the log,
// and tune-gen wrote the default as the best.
TEST(Reconcile, ACompleteTrialMissingFromTheLogIsRecoveredFromTheStudy) {
  const std::vector<TrialRecord> log = {complete(0, 10, true), complete(1, 9)};
  nlohmann::json study = nlohmann::json::array();
  for (const TrialRecord& r : log) study.push_back(study_trial(r));
  study.push_back(study_trial(complete(2, 4)));  // the best: told, never logged
  const Reconciliation rec = reconcile_with_study(log, study, "study.db");
  EXPECT_EQ(rec.recovered, std::vector<int>{2});
  EXPECT_TRUE(rec.orphans.empty());
  EXPECT_TRUE(rec.disagreements.empty());
  ASSERT_EQ(rec.trials.size(), 3u);
  const TrialRecord* best = best_trial(rec.trials);
  ASSERT_NE(best, nullptr);
  EXPECT_EQ(best->number, 2);
  EXPECT_EQ(best->rungs.size(), 1u);  // the samples come from the study's record
  EXPECT_EQ(baseline_trial(rec.trials)->number, 0);
  EXPECT_EQ(rec.summary(),
            "reconciled with the study: 1 COMPLETE trial recovered from it (trial 2), 0 log "
            "entries without a study trial");
}

TEST(Reconcile, TheStudyIsTrustedOverTheLog) {
  std::vector<TrialRecord> log = {complete(0, 10, true), complete(1, 9), complete(7, 1)};
  log[1].value = 0.5;  // the log says 0.5 ms, the study 9 ms
  nlohmann::json study = nlohmann::json::array();
  study.push_back(study_trial(complete(0, 10, true)));
  study.push_back(study_trial(complete(1, 9)));
  TrialRecord running;
  running.number = 3;
  running.state = "running";
  study.push_back(study_trial(running, false));
  const Reconciliation rec = reconcile_with_study(log, study, "study.db");
  EXPECT_EQ(rec.orphans, std::vector<int>{7});  // trial 7 is not in the study
  ASSERT_EQ(rec.disagreements.size(), 1u);
  EXPECT_EQ(rec.disagreements[0], "trial 1: the log says 0.5 ms, the study 9 ms");
  ASSERT_EQ(rec.trials.size(), 2u);
  EXPECT_DOUBLE_EQ(rec.trials[1].value, 9);
  EXPECT_EQ(best_trial(rec.trials)->number, 1);
  EXPECT_NE(rec.summary().find("1 log entry without a study trial (trial 7, left out), 1 log "
                               "entry disagreeing with it (the study is trusted)"),
            std::string::npos)
      << rec.summary();
}

TEST(Reconcile, AStudyValueThatIsNotAPositiveTimeIsBadInput) {
  for (const nlohmann::json& bad :
       {nlohmann::json(-5.0), nlohmann::json(0), nlohmann::json("inf")}) {
    nlohmann::json t = study_trial(complete(4, 1));
    t["value"] = bad;
    try {
      reconcile_with_study({}, nlohmann::json::array({t}), "study.db");
      ADD_FAILURE() << bad;
    } catch (const UserError& e) {
      EXPECT_EQ(std::string(e.what()), "study.db: trial 4: field 'value': " + bad.dump() +
                                           " is not a positive finite time in ms");
    }
  }
}

// Defect: a kill during trial 0 left its retry without the baseline flag ("default_ms: not
// measured"). The retry of a baseline is the baseline, in the log as in the study.
TEST(Reconcile, TheRetryOfAnInterruptedBaselineIsTheBaseline) {
  TrialRecord interrupted;
  interrupted.number = 0;
  interrupted.state = "fail";
  interrupted.baseline = true;
  TrialRecord retry = complete(1, 10);
  retry.retry_of = 0;
  EXPECT_EQ(baseline_trial({interrupted, retry, complete(2, 5)})->number, 1);
  // From the study: the baseline attribute of the retry wins over a log line without it.
  nlohmann::json study = nlohmann::json::array();
  study.push_back(study_trial(interrupted, false));
  nlohmann::json t = study_trial(retry);
  t["user_attrs"]["baseline"] = true;
  t["user_attrs"]["retry_of"] = 0;
  study.push_back(t);
  TrialRecord logged_retry = retry;
  logged_retry.retry_of = -1;
  const Reconciliation rec = reconcile_with_study({logged_retry}, study, "study.db");
  ASSERT_NE(baseline_trial(rec.trials), nullptr);
  EXPECT_EQ(baseline_trial(rec.trials)->number, 1);
}

TEST(TuneGen, AMissingStudyIsAnErrorAndIsNotCreated) {
  const std::string path = temp_path("missing.db");
  std::filesystem::remove(path);
  TuneGenOptions o;
  o.study = path;
  o.workload.suite = "resnet50";
  o.output = temp_path("f.cuvilpass");
  try {
    tune_gen(o);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": no such study"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(o.output));
  { std::ofstream(path) << "just text\n"; }
  try {
    tune_gen(o);
    ADD_FAILURE();
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": not an Optuna study (not an SQLite database)");
  }
  EXPECT_FALSE(std::filesystem::exists(o.output));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace cuvil::tuner
