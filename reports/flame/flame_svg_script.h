// The inline CSS and JavaScript of the flame-graph SVG (hover details, zoom, search).
#pragma once

namespace cuvil::reports::flame {

extern const char* const kFlameSvgStyle;
extern const char* const kFlameSvgScript;

}  // namespace cuvil::reports::flame
