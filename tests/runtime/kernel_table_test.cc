// The kernel table's naming: which registered kernels are library calls.
#include <gtest/gtest.h>

#include "runtime/kernel_table.h"

namespace cuvil::runtime {
namespace {

TEST(KernelTable, LoweringFromTheKernelName) {
  EXPECT_EQ(lowering_of("conv2d.onednn"), "onednn");
  EXPECT_EQ(lowering_of("linear.onednn"), "onednn");
  EXPECT_EQ(lowering_of("conv2d.im2col"), "generated");
  EXPECT_EQ(lowering_of("linear.gemm"), "generated");
  EXPECT_EQ(lowering_of("onednn"), "generated");  // no variant after a dot
}

TEST(KernelTable, EveryOnednnKernelIsNamedAsALibraryLowering) {
  for (const KernelInfo& k : kernel_table()) {
    const bool library = k.description.find("(library)") != std::string::npos;
    EXPECT_EQ(lowering_of(k.name) == "onednn", library) << k.name;
  }
}

}  // namespace
}  // namespace cuvil::runtime
