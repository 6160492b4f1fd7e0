// What this build is: the project version (CMakeLists.txt project()) and the git commit the
// sources were at when it was built (empty when the build could not tell), for --version.
#pragma once

#include <string>

namespace cuvil {

struct BuildInfo {
  const char* version;     // "0.1.0"
  const char* git_commit;  // 40 hex digits, or "" when unknown
  bool modified;           // tracked files differed from that commit
};

// Both defined in a source generated at build time (cmake/version_info.cmake, library
// cuvil_version).
const BuildInfo& build_info();

// "cuvil-bench 0.1.0 (git 0123456789ab, modified)" or "... (git commit unknown)".
std::string version_line(const std::string& program);

}  // namespace cuvil
