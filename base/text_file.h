// Whole-file reads of files that may be absent: /proc and /sys entries, and a config file already
// validated elsewhere whose text is recorded beside a result. Files a user names go through their
// own loader, which says what the file was meant to be when it cannot be read.
#pragma once

#include <string>

namespace cuvil {

// The file's bytes; "" when it is missing, not a regular file (a folder, FIFO or device) or
// unreadable.
std::string read_file_or_empty(const std::string& path);

}  // namespace cuvil
