# The kernels with per-ISA micro-kernels on their other paths: the kernel tests of runtime_tests
# again with AVX-512 disabled (CUVIL_CPU_DISABLE=avx512, runtime/cpu/cpu_isa.h: AVX2 tiles where a
# family has them, else portable), so that every path is checked against the reference
# interpreter on CPUs that have AVX-512.
add_test(NAME runtime.kernel_isa_disabled
  COMMAND $<TARGET_FILE:runtime_tests>
    --gtest_filter=KernelIsa.*:ConvDirect*:ConvNchw16c*:ConvDepthwise*:ConvWinograd*:AttentionKernels.*:NormKernels.*:ActivationMath.*)
set_tests_properties(runtime.kernel_isa_disabled PROPERTIES TIMEOUT 900
  ENVIRONMENT CUVIL_CPU_DISABLE=avx512)

# The families that also have AVX2 tiles (what the run above picks for them on a CPU with AVX2):
# their portable tiles under CUVIL_ISA=ref.
add_test(NAME runtime.kernel_isa_portable
  COMMAND $<TARGET_FILE:runtime_tests>
    --gtest_filter=ConvDirect*:ConvDepthwise*:ConvWinograd*:ActivationMath.*)
set_tests_properties(runtime.kernel_isa_portable PROPERTIES TIMEOUT 900 ENVIRONMENT CUVIL_ISA=ref)

# The sources that compile code for an instruction set beyond -march, compiled as the portable
# build (-DCUVIL_NATIVE=OFF) compiles them: with -march=native they build whatever their target
# attributes say (scripts/check_portable.sh).
add_test(NAME build.portable_isa_sources
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/check_portable.sh ${PROJECT_BINARY_DIR}/portable)
set_tests_properties(build.portable_isa_sources PROPERTIES TIMEOUT 900)
