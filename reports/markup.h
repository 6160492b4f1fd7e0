// Escaping text for the SVG and HTML that reports write (flame graphs, the dashboard).
#pragma once

#include <string>

namespace cuvil::reports {

// Escapes &, <, >, " and ' for text and attribute values of XML 1.0 and HTML; control
// characters other than tab (not allowed in XML 1.0) become spaces.
std::string escape_markup(const std::string& text);

}  // namespace cuvil::reports
