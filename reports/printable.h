// Quoting outside text (file names, benchmark names, JSON keys and values) in messages without
// letting it drive the terminal: control characters are escaped, UTF-8 text is kept.
#pragma once

#include <string>
#include <string_view>

namespace cuvil::reports {

// `text` with bytes below 0x20 and 0x7f written as \xNN, the C1 controls U+0080..U+009F (which
// some terminals obey like ESC) as \u00NN, and bytes that are not part of valid UTF-8 as \xNN;
// everything else, UTF-8 included, is kept. The result is valid UTF-8 and printable(printable(s))
// == printable(s).
std::string printable(std::string_view text);

}  // namespace cuvil::reports
