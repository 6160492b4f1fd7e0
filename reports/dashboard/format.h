// Text helpers of the dashboard's HTML and SVG: human units (escaping: reports/markup.h).
#pragma once

#include <string>

#include "reports/markup.h"

namespace cuvil::reports::dashboard {

// A time unit that shows `typical_ns` with a few digits before the point: ns, us, ms or s.
struct TimeUnit {
  const char* name;
  double ns_per_unit;
};
TimeUnit time_unit_for(double typical_ns);

// "12.35 ms": 4 significant digits in the unit chosen for the value itself.
std::string format_time(double ns);
// printf("%.*f") as a string; `signed_plus` writes "+" before positive values.
std::string format_fixed(double value, int decimals, bool signed_plus = false);
// A p-value as people read it: "<0.001" below a thousandth, else 3 significant digits.
std::string format_p_value(double p);
// The first 10 characters of a commit hash, or "-" when unknown.
std::string short_commit(const std::string& commit);

}  // namespace cuvil::reports::dashboard
