// The progress line: its text, and that it writes nothing when disabled.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>

#include "bench_suite/progress.h"

namespace cuvil::bench {
namespace {

std::string read_all(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string text;
  int c;
  while ((c = std::fgetc(f)) != EOF) text.push_back(static_cast<char>(c));
  return text;
}

TEST(Progress, SamplingLineNamesRungSamplesNoiseAndEta) {
  const std::string text = format_progress("resnet50/b1", false, 17, 0.031, 0.02, 4.2);
  EXPECT_EQ(text, "resnet50/b1  samples 17  noise 3.1% (target 2.0%)  ETA 5s");
}

TEST(Progress, UnknownNoiseAndLongEta) {
  const std::string text =
      format_progress("sdxl/512px", false, 1, std::numeric_limits<double>::infinity(), 0.02, 125);
  EXPECT_EQ(text, "sdxl/512px  samples 1  noise ? (target 2.0%)  ETA 2m05s");
}

TEST(Progress, WarmupLine) {
  EXPECT_EQ(format_progress("llama3-8b/decode", true, 3, 0, 0.02, 0),
            "llama3-8b/decode  warm-up 3");
}

TEST(Progress, DisabledWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line = ProgressLine::forced(f, false);
  line.update("hello", true);
  line.clear();
  EXPECT_EQ(read_all(f), "");
  std::fclose(f);
}

TEST(Progress, NotATerminalMeansDisabled) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(ProgressLine(f, /*quiet=*/false).enabled());
  EXPECT_FALSE(ProgressLine(f, /*quiet=*/true).enabled());
  std::fclose(f);
}

TEST(Progress, EnabledRedrawsInPlaceAndClears) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line = ProgressLine::forced(f, true);
  line.update("abcdef", true);
  line.update("xy", true);  // shorter: padded over the old text
  line.clear();             // erases what is visible
  EXPECT_EQ(read_all(f), "\rabcdef\rxy    \r  \r");
  std::fclose(f);
}

TEST(Progress, CompileLineSaysStageAndElapsedTime) {
  EXPECT_EQ(format_compile_progress("sdxl/256px", "pass fuse-elementwise", 12.4),
            "sdxl/256px  compiling: pass fuse-elementwise  12s");
  EXPECT_EQ(format_compile_progress("r/b1", "lowering", -1), "r/b1  compiling: lowering  0s");
}

TEST(Progress, CompileProgressDrawsEachStageAndClears) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line = ProgressLine::forced(f, true);
  {
    CompileProgress compiling(line, "resnet50/b1");
    compiling.stage("building the graph");
    compiling.stage("pass fold-batchnorm");
    compiling.stage("lowering");
  }
  const std::string text = read_all(f);
  for (const char* stage : {"starting", "building the graph", "pass fold-batchnorm", "lowering"}) {
    EXPECT_NE(text.find(std::string("resnet50/b1  compiling: ") + stage + "  "), std::string::npos)
        << stage << " in " << text;
  }
  EXPECT_EQ(text.back(), '\r');  // cleared at the end
  std::fclose(f);
}

TEST(Progress, CompileProgressOnADisabledLineWritesNothing) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLine line = ProgressLine::forced(f, false);
  {
    CompileProgress compiling(line, "r/b1");
    compiling.stage("lowering");
  }
  EXPECT_EQ(read_all(f), "");
  std::fclose(f);
}

}  // namespace
}  // namespace cuvil::bench
