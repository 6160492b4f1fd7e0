#include "reports/dashboard/flame_links.h"

#include <filesystem>
#include <sstream>

#include "reports/dashboard/style.h"
#include "reports/markup.h"

namespace cuvil::reports::dashboard {

namespace {

bool is_file(const std::filesystem::path& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

}  // namespace

std::string out_path_of(const std::string& command_line) {
  std::istringstream words(command_line);
  std::string word, found;
  bool next_is_path = false;
  while (words >> word) {
    if (next_is_path) {
      found = word;
      next_is_path = false;
    } else if (word == "--out" || word == "-o") {
      next_is_path = true;
    } else if (word.rfind("--out=", 0) == 0) {
      found = word.substr(6);
    }
  }
  return found;
}

std::string find_flame_graph(const HistoryPoint& point, const std::string& flame_dir) {
  namespace fs = std::filesystem;
  if (!flame_dir.empty()) {
    const fs::path by_id = fs::path(flame_dir) / ("run-" + std::to_string(point.run_id) + ".svg");
    if (is_file(by_id)) return by_id.string();
  }
  const std::string out = out_path_of(point.command_line);
  if (out.empty()) return {};
  fs::path svg = fs::path(out);
  svg.replace_extension(".svg");
  if (!flame_dir.empty() && is_file(fs::path(flame_dir) / svg.filename())) {
    return (fs::path(flame_dir) / svg.filename()).string();
  }
  if (svg.is_relative() && !point.working_directory.empty()) {
    const fs::path where_it_ran = fs::path(point.working_directory) / svg;
    if (is_file(where_it_ran)) return where_it_ran.string();
  }
  return is_file(svg) ? svg.string() : std::string();
}

std::string with_back_link(const std::string& svg, const std::string& href) {
  const size_t end = svg.rfind("</svg>");
  if (end == std::string::npos) return svg;
  const std::string link = "<a class=\"back-to-dashboard\" href=\"" + escape_markup(href) +
                           "\"><text x=\"10\" y=\"46\" font-family=\"sans-serif\" font-size=\"12\" "
                           "fill=\"" +
                           std::string(kLineColor) +
                           "\" text-decoration=\"underline\">&#8592; dashboard</text></a>\n";
  return svg.substr(0, end) + link + svg.substr(end);
}

}  // namespace cuvil::reports::dashboard
