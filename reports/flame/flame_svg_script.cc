#include "reports/flame/flame_svg_script.h"

namespace cuvil::reports::flame {

const char* const kFlameSvgStyle = R"css(
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: #000; }
#title { font-size: 17px; text-anchor: middle; }
#subtitle { fill: #555; text-anchor: middle; }
#details, #matched { fill: #222; }
#matched { text-anchor: end; }
.button { cursor: pointer; fill: #1a4f9c; }
.button:hover { text-decoration: underline; }
g.f rect { stroke: #fff; stroke-width: 0.4; }
g.f:hover rect { stroke: #000; stroke-width: 0.8; }
g.f text { pointer-events: none; font-size: 11px; }
g.f { cursor: pointer; }
.hide { display: none; }
g.parent rect { opacity: 0.55; }
)css";

// Frames keep their drawn geometry in _x/_w/_y; zoom and search only change attributes, so
// "Reset Zoom" and "Reset Search" restore the drawing exactly.
const char* const kFlameSvgScript = R"js(
"use strict";
var svg, frames, details, matched, unzoomButton, searchButton, plotX, plotW, charW;
var searching = false;
function init() {
  svg = document.documentElement;
  plotX = parseFloat(svg.getAttribute("data-plot-x"));
  plotW = parseFloat(svg.getAttribute("data-plot-w"));
  charW = parseFloat(svg.getAttribute("data-char-w"));
  details = document.getElementById("details");
  matched = document.getElementById("matched");
  unzoomButton = document.getElementById("unzoom");
  searchButton = document.getElementById("search");
  frames = Array.prototype.slice.call(document.querySelectorAll("g.f"));
  frames.forEach(function (g) {
    var r = g.querySelector("rect");
    g._x = parseFloat(r.getAttribute("x"));
    g._w = parseFloat(r.getAttribute("width"));
    g._y = parseFloat(r.getAttribute("y"));
    g._fill = r.getAttribute("fill");
    g._name = g.getAttribute("data-name");
    g._info = g.querySelector("title").textContent.replace(/\n/g, "  |  ");
  });
  var layer = document.getElementById("frames");
  layer.addEventListener("mouseover", function (e) {
    var g = e.target.closest("g.f");
    if (g) details.textContent = g._info;
  });
  layer.addEventListener("mouseout", function () { details.textContent = " "; });
  layer.addEventListener("click", function (e) {
    var g = e.target.closest("g.f");
    if (g) zoom(g);
  });
  unzoomButton.addEventListener("click", unzoom);
  searchButton.addEventListener("click", function () {
    if (searching) resetSearch(); else askSearch();
  });
  window.addEventListener("keydown", function (e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") { e.preventDefault(); askSearch(); }
    if (e.key === "Escape") { resetSearch(); unzoom(); }
  });
  // ?s=REGEX searches and ?z=NAME zooms to the first frame of that name: shareable views.
  var params = new URLSearchParams(window.location.search);
  if (params.get("s")) search(params.get("s"));
  var target = frames.filter(function (g) { return g._name === params.get("z"); })[0];
  if (target) zoom(target);
}
function label(g, w) {
  var t = g.querySelector("text"), fit = Math.floor((w - 6) / charW), name = g._name;
  t.textContent = fit < 3 ? "" : name.length <= fit ? name : name.slice(0, fit - 2) + "..";
}
function place(g, x, w) {
  var r = g.querySelector("rect");
  r.setAttribute("x", x.toFixed(3));
  r.setAttribute("width", w.toFixed(3));
  g.querySelector("text").setAttribute("x", (x + 3).toFixed(3));
  label(g, w);
}
function zoom(z) {
  var eps = 1e-6, scale = plotW / z._w;
  frames.forEach(function (g) {
    // The root is drawn at the bottom: ancestors sit below (larger y) and span z.
    var below = g._y > z._y, left = g._x, right = g._x + g._w;
    if (below && left <= z._x + eps && right >= z._x + z._w - eps) {
      g.classList.remove("hide");
      g.classList.add("parent");
      place(g, plotX, plotW);
    } else if (!below && left >= z._x - eps && right <= z._x + z._w + eps) {
      g.classList.remove("hide", "parent");
      place(g, plotX + (g._x - z._x) * scale, g._w * scale);
    } else {
      g.classList.add("hide");
    }
  });
  unzoomButton.classList.remove("hide");
}
function unzoom() {
  frames.forEach(function (g) {
    g.classList.remove("hide", "parent");
    place(g, g._x, g._w);
  });
  unzoomButton.classList.add("hide");
}
function askSearch() {
  var term = window.prompt("Search frames (regular expression, case-insensitive)", "");
  if (term) search(term);
}
function search(term) {
  var re = null;
  try { re = new RegExp(term, "i"); } catch (err) { re = null; }
  var needle = term.toLowerCase(), spans = [];
  frames.forEach(function (g) {
    var hit = re ? re.test(g._name) : g._name.toLowerCase().indexOf(needle) >= 0;
    g.querySelector("rect").setAttribute("fill", hit ? "rgb(230,0,230)" : g._fill);
    if (hit) spans.push([g._x, g._x + g._w]);
  });
  // A matching frame above a matching frame counts once: measure the union of their spans.
  spans.sort(function (a, b) { return a[0] - b[0]; });
  var covered = 0, end = -Infinity;
  spans.forEach(function (s) {
    if (s[1] <= end) return;
    covered += s[1] - Math.max(s[0], end);
    end = s[1];
  });
  matched.textContent = "Matched: " + (100 * covered / plotW).toFixed(1) + "% (" + spans.length +
      " frames)";
  searchButton.textContent = "Reset Search";
  searching = true;
}
function resetSearch() {
  frames.forEach(function (g) { g.querySelector("rect").setAttribute("fill", g._fill); });
  matched.textContent = " ";
  searchButton.textContent = "Search";
  searching = false;
}
)js";

}  // namespace cuvil::reports::flame
