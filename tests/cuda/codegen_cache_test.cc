// Built only with the CUDA toolkit (the generators link NVRTC).
#if CUVIL_HAVE_CUDA
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/cuda/codegen/kernel_cache.h"
#include "tests/cuda/codegen_test_util.h"

namespace cuvil::runtime::cuda::codegen {
namespace {

// A tiny kernel: the cache's behaviour does not depend on what it compiles.
KernelSource tiny(const std::string& constant = "1.0f") {
  return KernelSource{"cuvil_test_tiny",
                      "extern \"C\" __global__ void cuvil_test_tiny(float* x) { x[threadIdx.x] "
                      "+= " +
                          constant + "; }\n",
                      {}};
}

class KernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = std::filesystem::temp_directory_path() /
                 ("cuvil-kernel-cache-test-" + std::to_string(::getpid()) + "-" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(directory_);
  }
  void TearDown() override { std::filesystem::remove_all(directory_); }
  std::filesystem::path directory_;
};

TEST_F(KernelCacheTest, MissCompilesAndWritesThenHitReadsBack) {
  KernelCache cache(directory_.string());
  const CompiledKernel first = cache.get(tiny(), 90);
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_TRUE(std::filesystem::exists(cache.path_for(cache.key(tiny(), 90))));
  KernelCache again(directory_.string());  // a new process would see the same file
  const CompiledKernel second = again.get(tiny(), 90);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(again.hits(), 1);
  EXPECT_EQ(again.misses(), 0);
  EXPECT_EQ(second.cubin, first.cubin);
  EXPECT_EQ(second.name, "cuvil_test_tiny");
}

TEST_F(KernelCacheTest, KeyDependsOnSourceOptionsAndArch) {
  KernelCache cache(directory_.string());
  const std::string base = cache.key(tiny(), 90);
  EXPECT_EQ(base, cache.key(tiny(), 90));
  EXPECT_NE(base, cache.key(tiny("2.0f"), 90));
  EXPECT_NE(base, cache.key(tiny(), 80));
  KernelSource with_option = tiny();
  with_option.options.push_back("--use_fast_math");
  EXPECT_NE(base, cache.key(with_option, 90));
  EXPECT_EQ(base.size(), 32u);
}

TEST_F(KernelCacheTest, CorruptFileIsRecompiledAndRepaired) {
  KernelCache cache(directory_.string());
  const CompiledKernel good = cache.get(tiny(), 90);
  const std::string path = cache.path_for(cache.key(tiny(), 90));
  {  // flip one byte inside the cubin
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-20, std::ios::end);
    file.put('\x5a');
  }
  KernelCache reader(directory_.string());
  const CompiledKernel recompiled = reader.get(tiny(), 90);
  EXPECT_FALSE(recompiled.from_cache);
  EXPECT_EQ(reader.misses(), 1);
  EXPECT_EQ(recompiled.cubin, good.cubin);
  EXPECT_TRUE(reader.get(tiny(), 90).from_cache);  // the file was rewritten
}

TEST_F(KernelCacheTest, TruncatedFileIsRecompiled) {
  KernelCache cache(directory_.string());
  cache.get(tiny(), 90);
  const std::string path = cache.path_for(cache.key(tiny(), 90));
  std::filesystem::resize_file(path, std::filesystem::file_size(path) / 2);
  KernelCache reader(directory_.string());
  EXPECT_FALSE(reader.get(tiny(), 90).from_cache);
  std::filesystem::resize_file(path, 0);
  EXPECT_FALSE(KernelCache(directory_.string()).get(tiny(), 90).from_cache);
}

TEST_F(KernelCacheTest, WritesLeaveNoTemporaryFiles) {
  KernelCache cache(directory_.string());
  cache.get(tiny(), 90);
  cache.get(tiny("3.0f"), 90);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(directory_)) {
    EXPECT_EQ(entry.path().extension(), ".cubin") << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 2);
}

TEST(KernelCacheDirectory, FollowsXdgCacheHomeElseHome) {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old_xdg != nullptr ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg-test", 1);
  EXPECT_EQ(default_kernel_cache_directory(), "/tmp/xdg-test/cuvil/cuda-kernels");
  ::unsetenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (home != nullptr) {
    EXPECT_EQ(default_kernel_cache_directory(), std::string(home) + "/.cache/cuvil/cuda-kernels");
  }
  if (old_xdg != nullptr) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

TEST(NvrtcCompile, CompileErrorNamesTheLogAndOffendingLine) {
  const KernelSource broken{"cuvil_test_broken",
                            "extern \"C\" __global__ void cuvil_test_broken(float* x) {\n"
                            "  x[0] = undefined_thing;\n"
                            "}\n",
                            {}};
  EXPECT_DEATH(compile_kernel(broken, 90), "undefined_thing");
  EXPECT_DEATH(compile_kernel(broken, 90), "line 2:");
}

TEST(NvrtcCompile, ReportsVersion) {
  const std::string version = nvrtc_version();
  EXPECT_NE(version.find('.'), std::string::npos);
}

}  // namespace
}  // namespace cuvil::runtime::cuda::codegen
#endif  // CUVIL_HAVE_CUDA
