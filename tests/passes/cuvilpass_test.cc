#include "passes/cuvilpass.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "base/error.h"
#include "passes/registry.h"
#include "tests/base/user_error_of.h"

namespace cuvil::passes {
namespace {

using ::testing::HasSubstr;

// The message a rejected config gives, or "" when it was accepted.
std::string rejection(const std::string& text) {
  return user_error_of([&] { parse_cuvilpass(text, "bad.cuvilpass"); });
}

// Every rejection names the file, the line and the field, in that order, on one line.
void expect_rejected(const std::string& text, int line, const std::string& field,
                     const std::string& detail) {
  const std::string message = rejection(text);
  SCOPED_TRACE(text);
  EXPECT_THAT(message, HasSubstr("bad.cuvilpass:" + std::to_string(line) + ": " + field + ": "));
  EXPECT_THAT(message, HasSubstr(detail));
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

const char* const kValid = R"(# tuned for a test
cuvil_pass_version: 1
target: cpu
suite: resnet50
passes:
  - name: fold-batchnorm
  - name: fuse-elementwise
    params: { max_fusion_depth: 3 }
  - name: memory-plan
    params:
      strategy: first-fit
provenance:
  hardware: test-machine
  commit: abc123
  importance: { max_fusion_depth: 0.7 }
)";

// Silently accepted before: a second document, and a key given twice in one entry (the last won:
// a pass vanished, or another took its place).
TEST(Cuvilpass, ASecondYamlDocumentIsRejected) {
  EXPECT_THAT(rejection("cuvil_pass_version: 1\ntarget: cpu\npasses: []\n---\n"
                        "passes:\n  - name: bogus\n"),
              HasSubstr("bad.cuvilpass:4: yaml: a second YAML document"));
}

TEST(Cuvilpass, AKeyGivenTwiceInAnEntryIsRejected) {
  EXPECT_THAT(rejection("cuvil_pass_version: 1\ntarget: cpu\npasses:\n"
                        "  - name: layout\n    name: fuse-elementwise\n"),
              HasSubstr("bad.cuvilpass:5: name: given twice"));
  EXPECT_THAT(rejection("cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n"
                        "    params: { memory_layout: nchw }\n    params: {}\n"),
              HasSubstr("bad.cuvilpass:6: params: given twice"));
}

// Found by fuzz_cuvilpass: a suite name of bytes that are not UTF-8 read, but to_yaml wrote it
// back changed. Such names are errors; UTF-8 names (a model's file stem) round-trip.
TEST(Cuvilpass, ASuiteNameMustBeUtf8WithoutControlCharacters) {
  const std::string head = "cuvil_pass_version: 1\ntarget: cpu\nsuite: ";
  expect_rejected(head + "\"res\xffnet\"\npasses: []\n", 3, "suite", "not UTF-8 at byte 3");
  expect_rejected(head + "\"\xc0\xafx\"\npasses: []\n", 3, "suite", "not UTF-8 at byte 0");
  expect_rejected(head + "\"a\\eb\"\npasses: []\n", 3, "suite", "a control character at byte 1");
  const PipelineConfig config =
      parse_cuvilpass(head + "mod\xc3\xa8le-\xe2\x82\xac\npasses: []\n", "utf8.cuvilpass");
  EXPECT_EQ(config.suite, "mod\xc3\xa8le-\xe2\x82\xac");
  EXPECT_EQ(parse_cuvilpass(to_yaml(config), "again").suite, config.suite);
}

TEST(Cuvilpass, ADirectoryIsNotAConfig) {
  try {
    load_cuvilpass(CUVIL_SOURCE_DIR);
    FAIL() << "a directory was read as a config";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("is a directory"));
  }
}

TEST(Cuvilpass, ParsesValidFile) {
  const PipelineConfig c = parse_cuvilpass(kValid, "ok.cuvilpass");
  EXPECT_EQ(c.version, 1);
  EXPECT_EQ(c.target, "cpu");
  EXPECT_EQ(c.suite, "resnet50");
  EXPECT_EQ(c.source, "ok.cuvilpass");
  ASSERT_EQ(c.passes.size(), 3u);
  EXPECT_EQ(c.passes[0].name, "fold-batchnorm");
  EXPECT_EQ(param_int(c.passes[1].params, "max_fusion_depth"), 3);
  EXPECT_EQ(param_choice(c.passes[2].params, "strategy"), "first-fit");
  EXPECT_THAT(c.provenance_yaml, HasSubstr("test-machine"));
}

TEST(Cuvilpass, MissingParamsTakeDefaults) {
  const PipelineConfig c = parse_cuvilpass(kValid, "ok.cuvilpass");
  EXPECT_EQ(param_int(c.passes[2].params, "alignment"), 64);
}

TEST(Cuvilpass, UnlistedPassesAreOff) {
  const PipelineConfig c = parse_cuvilpass(kValid, "ok.cuvilpass");
  for (const PassInvocation& p : c.passes) EXPECT_NE(p.name, "layout");
}

TEST(Cuvilpass, EmptyPassListIsAllowed) {
  const PipelineConfig c =
      parse_cuvilpass("cuvil_pass_version: 1\ntarget: cuda\npasses: []\n", "ok.cuvilpass");
  EXPECT_TRUE(c.passes.empty());
  EXPECT_EQ(c.target, "cuda");
}

TEST(Cuvilpass, RoundTripKeepsEverything) {
  const PipelineConfig first = parse_cuvilpass(kValid, "ok.cuvilpass");
  const PipelineConfig second = parse_cuvilpass(to_yaml(first), "again.cuvilpass");
  EXPECT_EQ(second.version, first.version);
  EXPECT_EQ(second.target, first.target);
  EXPECT_EQ(second.suite, first.suite);
  ASSERT_EQ(second.passes.size(), first.passes.size());
  for (size_t i = 0; i < first.passes.size(); ++i) {
    EXPECT_EQ(second.passes[i].name, first.passes[i].name);
    EXPECT_EQ(second.passes[i].params, first.passes[i].params);
  }
  EXPECT_EQ(second.provenance_yaml, first.provenance_yaml);
  EXPECT_EQ(config_hash(second), config_hash(first));
}

TEST(Cuvilpass, SaveAndLoadRoundTrip) {
  const std::string path = ::testing::TempDir() + "/roundtrip.cuvilpass";
  const PipelineConfig first = parse_cuvilpass(kValid, "ok.cuvilpass");
  save_cuvilpass(first, path);
  const PipelineConfig loaded = load_cuvilpass(path);
  EXPECT_EQ(loaded.source, path);
  EXPECT_EQ(config_hash(loaded), config_hash(first));
  EXPECT_EQ(loaded.provenance_yaml, first.provenance_yaml);
  std::remove(path.c_str());
}

TEST(Cuvilpass, SavingMalformedProvenanceIsUserError) {
  PipelineConfig c = default_pipeline("cpu");
  c.provenance_yaml = "a: [unclosed";
  EXPECT_THROW(to_yaml(c), UserError);
}

TEST(Cuvilpass, ProvenanceIsWrittenBack) {
  PipelineConfig c = default_pipeline("cpu");
  c.provenance_yaml = "commit: abc123\nimportance: {max_fusion_depth: 0.7}";
  const std::string text = to_yaml(c);
  EXPECT_THAT(text, HasSubstr("provenance:"));
  EXPECT_THAT(parse_cuvilpass(text, "x.cuvilpass").provenance_yaml, HasSubstr("abc123"));
}

TEST(Cuvilpass, DefaultPipelineRoundTrips) {
  const PipelineConfig d = default_pipeline("cpu");
  const PipelineConfig again = parse_cuvilpass(to_yaml(d), "default.cuvilpass");
  EXPECT_EQ(config_hash(again), config_hash(d));
}

TEST(Cuvilpass, DefaultPipelineListsRegistryInOrder) {
  const PipelineConfig d = default_pipeline("cpu");
  std::vector<const Pass*> registry;
  for (const auto& pass : pass_registry()) {
    if (pass->applies_to("cpu")) registry.push_back(pass.get());
  }
  ASSERT_EQ(d.passes.size(), registry.size());
  for (size_t i = 0; i < registry.size(); ++i) EXPECT_EQ(d.passes[i].name, registry[i]->name());
}

TEST(Cuvilpass, DefaultPipelineRejectsUnknownTarget) {
  EXPECT_THROW(default_pipeline("tpu"), UserError);
}

TEST(Cuvilpass, HashIsStable) {
  EXPECT_EQ(config_hash(default_pipeline("cpu")), config_hash(default_pipeline("cpu")));
  EXPECT_EQ(config_hash(default_pipeline("cpu")).size(), 16u);
}

TEST(Cuvilpass, HashChangesWithAParameter) {
  PipelineConfig a = default_pipeline("cpu");
  PipelineConfig b = a;
  for (PassInvocation& p : b.passes) {
    if (p.name == "fuse-elementwise") p.params["max_fusion_depth"] = int64_t{2};
  }
  EXPECT_NE(config_hash(a), config_hash(b));
}

TEST(Cuvilpass, HashChangesWithTargetAndOrder) {
  const PipelineConfig cpu = default_pipeline("cpu");
  EXPECT_NE(config_hash(cpu), config_hash(default_pipeline("cuda")));
  PipelineConfig swapped = cpu;
  std::swap(swapped.passes[0], swapped.passes[1]);
  EXPECT_NE(config_hash(cpu), config_hash(swapped));
}

TEST(Cuvilpass, HashIgnoresProvenanceAndSuite) {
  PipelineConfig a = default_pipeline("cpu");
  PipelineConfig b = a;
  b.provenance_yaml = "commit: 1234";
  b.suite = "sdxl";
  EXPECT_EQ(config_hash(a), config_hash(b));
}

TEST(Cuvilpass, RejectsMalformedYaml) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\npasses: [\n  - name: x\n", 4, "yaml",
                  "malformed YAML");
}

TEST(Cuvilpass, RejectsBadIndentation) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\n  passes: []\n", 3, "yaml",
                  "malformed YAML");
}

TEST(Cuvilpass, RejectsMissingVersion) {
  expect_rejected("target: cpu\npasses: []\n", 1, "cuvil_pass_version", "missing");
}

TEST(Cuvilpass, RejectsWrongVersion) {
  expect_rejected("target: cpu\ncuvil_pass_version: 2\npasses: []\n", 2, "cuvil_pass_version",
                  "unsupported version");
}

TEST(Cuvilpass, RejectsNonNumericVersion) {
  expect_rejected("cuvil_pass_version: one\ntarget: cpu\npasses: []\n", 1, "cuvil_pass_version",
                  "unsupported version");
}

TEST(Cuvilpass, RejectsNonMappingDocument) {
  expect_rejected("- just\n- a list\n", 1, "cuvil_pass_version", "expected a mapping");
}

TEST(Cuvilpass, CpuFeaturesAreReadAndWrittenBack) {
  const PipelineConfig c = parse_cuvilpass(
      "cuvil_pass_version: 1\ntarget: cpu\ncpu_features: [avx512, avx512_vnni, avx512_bf16]\n"
      "passes: []\n",
      "ok.cuvilpass");
  ASSERT_TRUE(c.cpu_features.has_value());
  EXPECT_EQ(*c.cpu_features, (std::vector<std::string>{"avx512", "avx512_vnni", "avx512_bf16"}));
  const PipelineConfig again = parse_cuvilpass(to_yaml(c), "again.cuvilpass");
  EXPECT_EQ(again.cpu_features, c.cpu_features);
  EXPECT_EQ(config_hash(again), config_hash(c));
}

TEST(Cuvilpass, AnEmptyFeatureListIsAPlainAvx512Cpu) {
  const PipelineConfig c = parse_cuvilpass(
      "cuvil_pass_version: 1\ntarget: cpu\ncpu_features: []\npasses: []\n", "ok.cuvilpass");
  ASSERT_TRUE(c.cpu_features.has_value());
  EXPECT_TRUE(c.cpu_features->empty());
  EXPECT_FALSE(parse_cuvilpass(to_yaml(c), "again.cuvilpass").cpu_features->size());
}

TEST(Cuvilpass, HashChangesWithCpuFeaturesOnlyWhenNamed) {
  PipelineConfig host = default_pipeline("cpu");
  PipelineConfig none = host, bf16 = host;
  none.cpu_features = std::vector<std::string>{};
  bf16.cpu_features = std::vector<std::string>{"avx512_bf16"};
  EXPECT_NE(config_hash(host), config_hash(none));
  EXPECT_NE(config_hash(none), config_hash(bf16));
  EXPECT_EQ(config_hash(host), config_hash(default_pipeline("cpu")));
  PipelineConfig both = host, reversed = host;
  both.cpu_features = std::vector<std::string>{"avx512_bf16", "avx512_vnni"};
  reversed.cpu_features = std::vector<std::string>{"avx512_vnni", "avx512_bf16"};
  EXPECT_EQ(config_hash(both), config_hash(reversed));  // a set, not a sequence
}

TEST(Cuvilpass, RejectsUnknownCpuFeature) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\ncpu_features:\n  - avx512_bf16\n  - sse9\n"
      "passes: []\n",
      5, "cpu_features[1]", "expected one of avx512, avx512_bf16, avx512_vnni, amx_bf16");
}

TEST(Cuvilpass, RejectsCpuFeatureListedTwice) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\ncpu_features:\n  - amx_bf16\n  - amx_bf16\n"
      "passes: []\n",
      5, "cpu_features[1]", "listed twice");
}

TEST(Cuvilpass, RejectsCpuFeaturesNotAList) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\ncpu_features: avx512_bf16\npasses: []\n", 3,
                  "cpu_features", "expected a list of CPU features");
}

TEST(Cuvilpass, RejectsCpuFeaturesForCuda) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cuda\ncpu_features: []\npasses: []\n", 3,
                  "cpu_features", "applies only to target cpu");
}

TEST(Cuvilpass, RejectsUnknownTopLevelKey) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\npasses: []\ntargte: cuda\n", 4, "targte",
                  "unknown key");
}

TEST(Cuvilpass, RejectsUnknownTarget) {
  expect_rejected("cuvil_pass_version: 1\ntarget: tpu\npasses: []\n", 2, "target",
                  "expected cpu or cuda");
}

TEST(Cuvilpass, RejectsMissingTarget) {
  expect_rejected("cuvil_pass_version: 1\npasses: []\n", 1, "target", "missing");
}

TEST(Cuvilpass, RejectsPassesNotAList) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\npasses:\n  name: layout\n", 4, "passes",
                  "expected a list");
}

TEST(Cuvilpass, RejectsEntryWithoutName) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n  - params: { a: 1 }\n", 5,
      "passes[1].name", "missing");
}

TEST(Cuvilpass, RejectsUnknownPassWithSuggestion) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwize\n", 4,
                  "passes[0].name", "did you mean 'fuse-elementwise'");
}

TEST(Cuvilpass, RejectsPassListedTwice) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n  - name: fold-batchnorm\n"
      "  - name: layout\n",
      6, "passes[2].name", "listed twice (first on line 4)");
}

TEST(Cuvilpass, RejectsUnknownParameter) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwise\n    params:\n"
      "      max_depth: 3\n",
      6, "passes[0].params.max_depth", "unknown parameter");
}

TEST(Cuvilpass, RejectsUnknownKeyInPassEntry) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n    parms: {}\n",
                  5, "passes[0].parms", "unknown key");
}

TEST(Cuvilpass, RejectsTextForInteger) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n"
      "  - name: fuse-elementwise\n    params: { max_fusion_depth: abc }\n",
      6, "passes[1].params.max_fusion_depth", "expected int in [0, 8]");
}

TEST(Cuvilpass, RejectsFractionForInteger) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwise\n"
      "    params: { max_fusion_depth: 3.5 }\n",
      5, "passes[0].params.max_fusion_depth", "got '3.5'");
}

TEST(Cuvilpass, RejectsQuotedNumberForInteger) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwise\n"
      "    params: { max_fusion_depth: \"3\" }\n",
      5, "passes[0].params.max_fusion_depth", "the string");
}

TEST(Cuvilpass, RejectsOutOfRangeInteger) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwise\n"
      "    params: { max_fusion_depth: 9 }\n",
      5, "passes[0].params.max_fusion_depth", "out of range: expected int in [0, 8]");
}

TEST(Cuvilpass, RejectsNegativeOutOfRangeInteger) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: memory-plan\n"
      "    params: { alignment: -64 }\n",
      5, "passes[0].params.alignment", "out of range");
}

TEST(Cuvilpass, RejectsYesForBool) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwise\n"
      "    params: { fuse_binary: yes }\n",
      5, "passes[0].params.fuse_binary", "expected bool");
}

// This session's knobs go through the same validation: out of range or not a listed choice.
TEST(Cuvilpass, RejectsConvTilingVectorsOutOfRange) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: conv-tiling\n"
      "    params: { vectors: 5 }\n",
      5, "passes[0].params.vectors", "out of range: expected int in [0, 4]");
}

TEST(Cuvilpass, RejectsChannelsPerPassBelowOneBlock) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: conv-tiling\n"
      "    params: { channels_per_pass: 8 }\n",
      5, "passes[0].params.channels_per_pass", "out of range");
}

TEST(Cuvilpass, RejectsWinogradTileNotAChoice) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: conv-tiling\n"
      "    params: { winograd_tile: 3x3 }\n",
      5, "passes[0].params.winograd_tile", "one of auto|2x2|4x4");
}

TEST(Cuvilpass, RejectsWinogradBlockBelowRange) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: conv-tiling\n"
      "    params: { winograd_block_kib: 8 }\n",
      5, "passes[0].params.winograd_block_kib", "out of range");
}

TEST(Cuvilpass, RejectsWinogradMaxTileKibBelowOne) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: select-lowering\n"
      "    params: { winograd_max_tile_kib: 0 }\n",
      5, "passes[0].params.winograd_max_tile_kib", "out of range: expected int in [1, 1048576]");
}

TEST(Cuvilpass, RejectsUnknownThreadRuntime) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: threading\n"
      "    params: { runtime: tbb }\n",
      5, "passes[0].params.runtime", "one of auto|pool|openmp");
}

TEST(Cuvilpass, RejectsNegativeSpin) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: threading\n"
      "    params: { spin_us: -1 }\n",
      5, "passes[0].params.spin_us", "out of range");
}

TEST(Cuvilpass, AcceptsTrueAndFalseForBool) {
  const PipelineConfig c = parse_cuvilpass(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: fuse-elementwise\n"
      "    params: { fuse_binary: false }\n",
      "ok.cuvilpass");
  EXPECT_FALSE(param_bool(c.passes[0].params, "fuse_binary"));
}

TEST(Cuvilpass, RejectsChoiceNotAmongChoices) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n"
      "    params: { memory_layout: nchw16c }\n",
      5, "passes[0].params.memory_layout", "one of nchw|nhwc");
}

TEST(Cuvilpass, RejectsListAsParameterValue) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n"
      "    params: { memory_layout: [nhwc] }\n",
      5, "passes[0].params.memory_layout", "got a list");
}

TEST(Cuvilpass, RejectsParamsNotAMapping) {
  expect_rejected(
      "cuvil_pass_version: 1\ntarget: cpu\npasses:\n  - name: layout\n    params: nhwc\n", 5,
      "passes[0].params", "expected a mapping");
}

TEST(Cuvilpass, RejectsDuplicateTopLevelKey) {
  expect_rejected("cuvil_pass_version: 1\ntarget: cpu\ntarget: cuda\npasses: []\n", 3, "target",
                  "given twice");
}

TEST(Cuvilpass, MissingFileNamesThePath) {
  const std::string path = ::testing::TempDir() + "/does-not-exist.cuvilpass";
  try {
    load_cuvilpass(path);
    FAIL() << "loading a missing file succeeded";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path));
  }
}

TEST(Cuvilpass, LoadReportsTheFilePath) {
  const std::string path = ::testing::TempDir() + "/bad-target.cuvilpass";
  {
    std::ofstream out(path);
    out << "cuvil_pass_version: 1\ntarget: gpu\npasses: []\n";
  }
  try {
    load_cuvilpass(path);
    FAIL() << "a bad target was accepted";
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr(path + ":2: target: "));
  }
  std::remove(path.c_str());
}

}  // namespace
}  // namespace cuvil::passes
