// read_file_or_empty: a file's bytes, or "" for what is not a readable regular file (without
// blocking on a FIFO).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/text_file.h"

namespace cuvil {
namespace {

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("cuvil_text_file_" + std::to_string(::getpid()) + "_" + name);
}

TEST(ReadFileOrEmpty, ReadsEveryByte) {
  const std::filesystem::path path = scratch("bytes");
  const std::string bytes("a\0b\nlast", 8);
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(read_file_or_empty(path.string()), bytes);
  std::filesystem::remove(path);
}

TEST(ReadFileOrEmpty, MissingFileFolderAndEmptyPathReadEmpty) {
  EXPECT_EQ(read_file_or_empty(scratch("missing").string()), "");
  EXPECT_EQ(read_file_or_empty(std::filesystem::temp_directory_path().string()), "");
  EXPECT_EQ(read_file_or_empty(""), "");
}

TEST(ReadFileOrEmpty, FifoReadsEmptyWithoutBlocking) {
  const std::filesystem::path path = scratch("fifo");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(read_file_or_empty(path.string()), "");  // opening it would wait for a writer
  std::filesystem::remove(path);
}

TEST(ReadFileOrEmpty, ReadsProcFiles) {
  EXPECT_NE(read_file_or_empty("/proc/self/status").find("VmRSS"), std::string::npos);
}

}  // namespace
}  // namespace cuvil
