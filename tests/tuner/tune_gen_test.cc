// The trial log round trip and cuvil-tune-gen on a made-up log (no Optuna, no measuring).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "passes/ir/error.h"
#include "tuner/search_space.h"
#include "tuner/space_file.h"
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

// A log of 13 trials: the baseline, depth-dependent latencies, one failure.
std::string write_log() {
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
      r.rungs = {s};
      r.value = s.median_ms;
      r.has_value = true;
    }
    append_trial(path, r);
  }
  return path;
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

TEST(TuneGen, WritesTheBestConfigDeterministicallyAndItLoads) {
  const std::string log = write_log();
  TuneGenOptions o;
  o.trial_log = log;
  o.workload.suite = "resnet50";
  o.fanova = false;
  o.verify = false;
  o.refits = 5;
  o.output = temp_path("a.cuvilpass");
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

TEST(TuneGen, ThresholdResetsUnimportantParametersToDefaults) {
  const std::string log = write_log();
  TuneGenOptions o;
  o.trial_log = log;
  o.workload.suite = "resnet50";
  o.fanova = false;
  o.verify = false;
  o.refits = 0;
  o.importance_threshold = 0.5;
  o.output = temp_path("b.cuvilpass");
  o.space_output = temp_path("pruned.yaml");
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

}  // namespace
}  // namespace cuvil::tuner
