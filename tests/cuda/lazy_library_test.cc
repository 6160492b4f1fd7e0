// Built only with the CUDA toolkit (runtime/cuda/gpu/ is).
#if CUVIL_HAVE_CUDA
#include "runtime/cuda/gpu/lazy_library.h"

#include <gtest/gtest.h>
#include <nvrtc.h>

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

}  // namespace
}  // namespace cuvil::runtime::cuda
#endif
