// Built only with the CUDA toolkit (runtime/cuda/gpu/ is).
#if CUVIL_HAVE_CUDA
#include "runtime/cuda/gpu/lazy_library.h"

#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace cuvil::runtime::cuda {
namespace {

TEST(LazyLibrary, FindsASymbolOfALibraryOnThePath) {
  LazyLibrary library(CUVIL_NVRTC_SONAME);
  EXPECT_NE(library.symbol("nvrtcVersion"), nullptr);
  EXPECT_EQ(library.error(), "");
}

TEST(LazyLibrary, AMissingLibraryIsNamedWithTheLoadersReason) {
  LazyLibrary library("libcuvil-no-such-library.so.1");
  EXPECT_EQ(library.symbol("anything"), nullptr);
  EXPECT_EQ(library.symbol("anything"), nullptr);  // the failed load is remembered, not retried
  const std::string error = library.error();
  EXPECT_NE(error.find("libcuvil-no-such-library.so.1 could not be loaded ("), std::string::npos)
      << error;
}

TEST(LazyLibrary, AMissingLibraryNamesTheFallbackDirectorysReasonToo) {
  LazyLibrary library("libcuvil-no-such-library.so.1", "/cuvil-no-such-directory");
  EXPECT_EQ(library.symbol("anything"), nullptr);
  const std::string error = library.error();
  EXPECT_NE(error.find("libcuvil-no-such-library.so.1 could not be loaded ("), std::string::npos)
      << error;
  EXPECT_NE(error.find("/cuvil-no-such-directory/libcuvil-no-such-library.so.1"), std::string::npos)
      << error;
}

TEST(LazyLibrary, ALibraryOffTheLoadersPathIsFoundInTheFallbackDirectory) {
  // A copy of zlib under a name no directory on the loader's path holds.
  char dir_template[] = "/tmp/cuvil-lazy-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir(dir_template);
  std::filesystem::copy_file("/usr/lib/x86_64-linux-gnu/libz.so.1", dir / "libcuvil-zcopy.so.1");
  LazyLibrary off_path("libcuvil-zcopy.so.1");
  EXPECT_EQ(off_path.symbol("zlibVersion"), nullptr);
  LazyLibrary with_fallback("libcuvil-zcopy.so.1", dir.string());
  EXPECT_NE(with_fallback.symbol("zlibVersion"), nullptr) << with_fallback.error();
  std::filesystem::remove_all(dir);
}

TEST(LazyLibrary, AMissingSymbolIsNamed) {
  LazyLibrary library(CUVIL_NVRTC_SONAME);
  EXPECT_EQ(library.symbol("nvrtcNoSuchFunction"), nullptr);
  EXPECT_NE(library.error().find("has no symbol nvrtcNoSuchFunction"), std::string::npos);
}

TEST(LazyLibrary, TheForwardedNvrtcAnswersAsTheLibraryDoes) {
  // nvrtcVersion is cuvil's forwarding definition (the program does not link NVRTC).
  int major = 0, minor = -1;
  ASSERT_EQ(nvrtcVersion(&major, &minor), NVRTC_SUCCESS);
  EXPECT_GE(major, 11);
  EXPECT_GE(minor, 0);
  EXPECT_STREQ(nvrtcGetErrorString(NVRTC_SUCCESS), "NVRTC_SUCCESS");
}

TEST(LazyLibrary, TheForwardedCudaRuntimeAndCudnnAnswerAsTheLibrariesDo) {
  // Neither library is linked: these are cuvil's forwarding definitions. Neither call needs a
  // driver or a device.
  int version = 0;
  ASSERT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  EXPECT_EQ(version / 1000, CUDART_VERSION / 1000);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");
}

}  // namespace
}  // namespace cuvil::runtime::cuda
#endif
