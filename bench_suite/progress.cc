#include "bench_suite/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <utility>

#include "probes/clock.h"

namespace cuvil::bench {

namespace {

std::string format_duration(double seconds) {
  char buf[32];
  if (seconds < 60) {
    std::snprintf(buf, sizeof buf, "%.0fs", std::ceil(seconds));
  } else {
    const long total = static_cast<long>(std::ceil(seconds));
    std::snprintf(buf, sizeof buf, "%ldm%02lds", total / 60, total % 60);
  }
  return buf;
}

}  // namespace

std::string format_progress(const std::string& label, bool warming_up, int64_t count, double noise,
                            double max_noise, double eta_s) {
  char buf[160];
  if (warming_up) {
    std::snprintf(buf, sizeof buf, "  warm-up %lld", static_cast<long long>(count));
    return label + buf;
  }
  std::string text = label;
  std::snprintf(buf, sizeof buf, "  samples %lld", static_cast<long long>(count));
  text += buf;
  if (std::isfinite(noise)) {
    std::snprintf(buf, sizeof buf, "  noise %.1f%% (target %.1f%%)", noise * 100, max_noise * 100);
  } else {
    std::snprintf(buf, sizeof buf, "  noise ? (target %.1f%%)", max_noise * 100);
  }
  text += buf;
  text += "  ETA " + format_duration(eta_s);
  return text;
}

ProgressLine::ProgressLine(std::FILE* out, bool quiet)
    : ProgressLine(out, !quiet && out != nullptr && isatty(fileno(out)), 0) {}

ProgressLine::ProgressLine(std::FILE* out, bool enabled, int) : out_(out), enabled_(enabled) {}

ProgressLine ProgressLine::forced(std::FILE* out, bool enabled) {
  return ProgressLine(out, enabled, 0);
}

void ProgressLine::update(const std::string& text, bool force) {
  if (!enabled_) return;
  const int64_t now = probes::now_ns();
  if (drawn_ && !force && now - last_draw_ns_ < kMinRedrawNs) return;
  // Pad with spaces over the previous text rather than relying on terminal escape codes.
  std::string line = text;
  if (line.size() < last_width_) line.append(last_width_ - line.size(), ' ');
  std::fprintf(out_, "\r%s", line.c_str());
  std::fflush(out_);
  drawn_ = true;
  last_draw_ns_ = now;
  last_width_ = text.size();
}

void ProgressLine::clear() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(out_, "\r%s\r", std::string(last_width_, ' ').c_str());
  std::fflush(out_);
  drawn_ = false;
  last_width_ = 0;
}

std::string format_compile_progress(const std::string& label, const std::string& stage,
                                    double elapsed_s) {
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.0fs", std::max(0.0, elapsed_s));
  return label + "  compiling: " + stage + "  " + elapsed;
}

CompileProgress::CompileProgress(ProgressLine& line, std::string label)
    : line_(line), label_(std::move(label)), stage_("starting"), start_ns_(probes::now_ns()) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    draw();
  }
  if (!line_.enabled()) return;
  ticker_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) draw();
  });
}

CompileProgress::~CompileProgress() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  wake_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  line_.clear();
}

void CompileProgress::stage(const std::string& stage) {
  std::lock_guard<std::mutex> lock(mutex_);
  stage_ = stage;
  draw();
}

void CompileProgress::draw() {
  const double elapsed_s = static_cast<double>(probes::now_ns() - start_ns_) * 1e-9;
  line_.update(format_compile_progress(label_, stage_, elapsed_s), /*force=*/true);
}

}  // namespace cuvil::bench
