#include "reports/dashboard/format.h"

#include <cmath>
#include <cstdio>

namespace cuvil::reports::dashboard {

namespace {

constexpr size_t kShortCommit = 10;

}  // namespace

TimeUnit time_unit_for(double typical_ns) {
  const double v = std::fabs(typical_ns);
  if (v >= 1e9) return {"s", 1e9};
  if (v >= 1e6) return {"ms", 1e6};
  if (v >= 1e3) return {"us", 1e3};
  return {"ns", 1};
}

std::string format_time(double ns) {
  const TimeUnit unit = time_unit_for(ns);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g %s", ns / unit.ns_per_unit, unit.name);
  return buf;
}

std::string format_fixed(double value, int decimals, bool signed_plus) {
  char buf[64];
  std::snprintf(buf, sizeof buf, signed_plus ? "%+.*f" : "%.*f", decimals, value);
  return buf;
}

std::string format_p_value(double p) {
  if (p < 1e-3) return "<0.001";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", p);
  return buf;
}

std::string short_commit(const std::string& commit) {
  return commit.empty() ? "-" : commit.substr(0, kShortCommit);
}

}  // namespace cuvil::reports::dashboard
