#include "base/text_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace cuvil {

std::string read_file_or_empty(const std::string& path) {
  std::error_code ec;
  // Regular files only: a FIFO or device would block or never end.
  if (path.empty() || !std::filesystem::is_regular_file(path, ec)) return {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return {};
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace cuvil
