// The kernel table's naming: which registered kernels are library calls, and bf16 variants.
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

// reduced-precision swaps a kernel for its bf16 variant: it must exist, for the same op.
TEST(KernelTable, EveryBf16VariantIsARegisteredKernelOfTheSameOp) {
  int variants = 0;
  for (const KernelInfo& k : kernel_table()) {
    if (k.bf16_variant.empty()) continue;
    ++variants;
    EXPECT_NE(find_kernel(k.op, k.bf16_variant), nullptr) << k.name << " -> " << k.bf16_variant;
  }
  EXPECT_GT(variants, 0);  // conv2d.winograd_nhwc -> conv2d.winograd_bf16
}

}  // namespace
}  // namespace cuvil::runtime
