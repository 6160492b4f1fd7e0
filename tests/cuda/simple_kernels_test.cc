// The runtime's own NVRTC kernels compile for the H200's architecture here (no GPU needed), and
// their host-side geometry helpers hold.
#include "runtime/cuda/kernels_simple.h"

#include <gtest/gtest.h>

#include "runtime/cuda/codegen/kernel_cache.h"

namespace cuvil::runtime::cuda {
namespace {

TEST(CudaSimpleKernels, CompileForSm90WithEveryEntryPoint) {
  const codegen::KernelSource source{"cuvil_simple_kernels", simple::source(), {"-std=c++17"}};
  const codegen::CompiledKernel compiled = codegen::compile_kernel(source, 90, /*want_ptx=*/true);
  EXPECT_FALSE(compiled.cubin.empty());
  for (const char* name : simple::kKernelNames) {
    EXPECT_NE(compiled.ptx.find(std::string(".entry ") + name), std::string::npos) << name;
  }
}

TEST(CudaSimpleKernels, GridCoversSmallAndHugeTotals) {
  EXPECT_EQ(simple::grid_for(0), 1u);
  EXPECT_EQ(simple::grid_for(1), 1u);
  EXPECT_EQ(simple::grid_for(257), 2u);
  EXPECT_EQ(simple::grid_for(int64_t{1} << 40), 1u << 20);  // grid-stride loops cover the rest
}

TEST(CudaSimpleKernels, ParamsAreEightByteFieldsOnly) {
  // Host and device structs must agree: all fields 8 bytes wide, no padding.
  EXPECT_EQ(sizeof(simple::EwParams), 8 * (6 + 3 * simple::kMaxRank));
  EXPECT_EQ(sizeof(simple::SdpaParams), 8 * 13);
  EXPECT_EQ(sizeof(simple::PoolParams), 8 * 16);
  EXPECT_EQ(sizeof(simple::TransposeParams), 8 * (4 + 2 * simple::kMaxRank));
}

}  // namespace
}  // namespace cuvil::runtime::cuda
