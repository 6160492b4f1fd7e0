#include "reports/flame/folded.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "base/error.h"
#include "reports/printable.h"

namespace cuvil::reports::flame {

namespace {

std::vector<std::string> split_frames(const std::string& stack) {
  std::vector<std::string> frames;
  size_t start = 0;
  while (true) {
    const size_t semi = stack.find(';', start);
    frames.push_back(stack.substr(start, semi - start));
    if (semi == std::string::npos) break;
    start = semi + 1;
  }
  return frames;
}

// The byte offset of the first byte that is not well-formed UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing past U+10FFFF), or npos. Every writer downstream (SVG, speedscope JSON,
// the Chrome trace) promises UTF-8.
size_t first_invalid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const unsigned char c = p[i];
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return i;
    }
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k) {
      const unsigned char b = p[i + k];
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += len;
  }
  return std::string::npos;
}

// Appends one "frame;frame count" line per node with self weight, depth first, from an explicit
// stack (stacks may be thousands of frames deep).
void append_stacks(const FrameNode& root, std::string& out) {
  std::vector<const std::string*> path;
  std::vector<std::pair<const FrameNode*, size_t>> pending;  // a node and its depth below root
  for (auto c = root.children.rbegin(); c != root.children.rend(); ++c)
    pending.emplace_back(c->get(), 0);
  while (!pending.empty()) {
    const auto [node, depth] = pending.back();
    pending.pop_back();
    path.resize(depth);
    path.push_back(&node->name);
    const double count = std::round(node->self);
    if (count > 0) {
      for (size_t i = 0; i < path.size(); ++i) {
        if (i) out += ';';
        out += *path[i];
      }
      char buf[32];
      std::snprintf(buf, sizeof buf, " %.0f\n", count);
      out += buf;
    }
    for (auto c = node->children.rbegin(); c != node->children.rend(); ++c) {
      pending.emplace_back(c->get(), depth + 1);
    }
  }
}

}  // namespace

FrameTree parse_folded(const std::string& text, const std::string& source) {
  FrameTree tree("all", "samples");
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    const std::string where = source + ":" + std::to_string(number);
    const size_t space = line.find_last_of(' ');
    if (space == std::string::npos || space == 0) {
      throw UserError(printable(where) + ": expected 'frame;frame;... count'");
    }
    const std::string count_text = line.substr(space + 1);
    char* end = nullptr;
    errno = 0;
    const double count = std::strtod(count_text.c_str(), &end);
    if (count_text.empty() || *end != '\0' || errno != 0 || !std::isfinite(count) || count < 0) {
      throw UserError(
          printable(where + ": the count '" + count_text + "' is not a non-negative number"));
    }
    if (const size_t bad = first_invalid_utf8(line); bad != std::string::npos) {
      throw UserError(printable(where) + ": byte " + std::to_string(bad + 1) +
                      " is not UTF-8 text (frame names must be UTF-8; convert with iconv)");
    }
    const std::vector<std::string> frames = split_frames(line.substr(0, space));
    for (const std::string& f : frames) {
      if (f.empty()) throw UserError(printable(where) + ": an empty frame name in the stack");
    }
    tree.add_stack(frames, count);
    if (!std::isfinite(tree.total())) {
      throw UserError(printable(where) + ": the counts add up beyond a double's range");
    }
  }
  return tree;
}

FrameTree read_folded_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw UserError(printable(path) + ": is a folder");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(printable(path) + ": cannot read the folded stacks file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_folded(text.str(), path);
}

std::string to_folded(const FrameTree& tree) {
  std::string out;
  append_stacks(tree.root(), out);
  return out;
}

}  // namespace cuvil::reports::flame
