// A one-line progress display on stderr for long work, redrawn in place with '\r'. Off when the
// stream is not a terminal (logs and pipes get no control characters) or when asked to be quiet.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace cuvil::bench {

// "resnet50/b1  warm-up 2" or "resnet50/b1  samples 17  noise 3.1% (target 2.0%)  ETA 4s".
std::string format_progress(const std::string& label, bool warming_up, int64_t count, double noise,
                            double max_noise, double eta_s);

class ProgressLine {
 public:
  // Enabled only when `quiet` is false and `out` is a terminal.
  ProgressLine(std::FILE* out, bool quiet);
  // Enabled as asked, whatever `out` is (tests).
  static ProgressLine forced(std::FILE* out, bool enabled);

  bool enabled() const { return enabled_; }
  // Redraws the line; at most every kMinRedrawNs unless `force`.
  void update(const std::string& text, bool force = false);
  // Erases the line so that the next output starts clean.
  void clear();

  static constexpr int64_t kMinRedrawNs = 100'000'000;

 private:
  ProgressLine(std::FILE* out, bool enabled, int);
  std::FILE* out_;
  bool enabled_;
  bool drawn_ = false;
  int64_t last_draw_ns_ = 0;
  size_t last_width_ = 0;
};

// "resnet50/b1  compiling: pass fuse-elementwise  12s".
std::string format_compile_progress(const std::string& label, const std::string& stage,
                                    double elapsed_s);

// The progress line while a rung compiles (70 s on SDXL): its stage and the time since it began,
// redrawn each second by a thread of its own (none when the line is disabled) and at each stage.
// Clears the line when destroyed.
class CompileProgress {
 public:
  CompileProgress(ProgressLine& line, std::string label);
  ~CompileProgress();
  CompileProgress(const CompileProgress&) = delete;
  CompileProgress& operator=(const CompileProgress&) = delete;

  // Sets the stage ("building the graph", "pass fold-batchnorm", "lowering") and redraws.
  void stage(const std::string& stage);

 private:
  void draw();  // with mutex_ held
  ProgressLine& line_;
  std::string label_;
  std::string stage_;
  int64_t start_ns_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread ticker_;
};

}  // namespace cuvil::bench
