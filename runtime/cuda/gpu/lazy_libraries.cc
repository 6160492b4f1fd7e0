// cuBLAS, cuBLASLt and NVRTC, loaded with dlopen on the first call into them. Linking them made
// every program that contains the CUDA backend (cuvil-bench, cuvil-tune-gen, the Python module,
// the test programs) pay cuBLASLt's start-up, about 0.45 s per process, whether or not it ever
// touched a GPU: `cuvil-bench --version` took 0.5 s. The functions the backend calls are defined
// here against the toolkit headers' declarations and forward to the library's own. Where a
// library cannot be loaded, a call returns the library's generic failure status, and its
// status-string function names the library and dlerror()'s reason, so every error path
// (cuda_check.h) says why. cuDNN and the CUDA runtime start in milliseconds and stay linked.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <nvrtc.h>

#include <string>

#include "runtime/cuda/gpu/lazy_library.h"

namespace cuvil::runtime::cuda {
namespace {

#define CUVIL_STRINGIFY_INNER(x) #x
#define CUVIL_STRINGIFY(x) CUVIL_STRINGIFY_INNER(x)

LazyLibrary& cublas() {
  static LazyLibrary library("libcublas.so." CUVIL_STRINGIFY(CUBLAS_VER_MAJOR));
  return library;
}
LazyLibrary& cublas_lt() {
  static LazyLibrary library("libcublasLt.so." CUVIL_STRINGIFY(CUBLAS_VER_MAJOR));
  return library;
}
LazyLibrary& nvrtc() {
  // NVRTC's soname carries the toolkit's major version (libnvrtc.so.13 for CUDA 13.x).
  static LazyLibrary library(CUVIL_NVRTC_SONAME);
  return library;
}

// The text a status-string function returns when its library did not load: kept per thread, as
// the caller reads it after the call.
const char* failure_text(LazyLibrary& library) {
  thread_local std::string text;
  text = library.error();
  return text.c_str();
}

// The library's function `name`, looked up once, as the type of our definition of it.
template <class Fn>
Fn lookup(LazyLibrary& library, const char* name) {
  return reinterpret_cast<Fn>(library.symbol(name));
}

}  // namespace
}  // namespace cuvil::runtime::cuda

using cuvil::runtime::cuda::cublas;
using cuvil::runtime::cuda::cublas_lt;
using cuvil::runtime::cuda::failure_text;
using cuvil::runtime::cuda::lookup;
using cuvil::runtime::cuda::nvrtc;

// NAME's definition: forwards ARGS to the library's NAME, or returns FAIL where it is missing.
// (The headers overload some names with inline C++ wrappers, so the type is spelled out; a
// definition that does not match the header's extern "C" declaration leaves that symbol
// undefined, and the link fails.)
#define CUVIL_FORWARD(LIBRARY, FAIL, RET, NAME, PARAMS, ARGS)                       \
  RET NAME PARAMS {                                                                 \
    static const auto fn = lookup<RET(*) PARAMS>(LIBRARY(), CUVIL_STRINGIFY(NAME)); \
    return fn ? fn ARGS : FAIL;                                                     \
  }

// cuBLAS (cublas_v2.h's names are macros for the _v2 symbols).
#define CUVIL_CUBLAS(NAME, PARAMS, ARGS) \
  CUVIL_FORWARD(cublas, CUBLAS_STATUS_NOT_INITIALIZED, cublasStatus_t, NAME, PARAMS, ARGS)
CUVIL_CUBLAS(cublasCreate_v2, (cublasHandle_t * handle), (handle))
CUVIL_CUBLAS(cublasDestroy_v2, (cublasHandle_t handle), (handle))
CUVIL_CUBLAS(cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream), (handle, stream))
CUVIL_CUBLAS(cublasSetWorkspace_v2, (cublasHandle_t handle, void* workspace, size_t bytes),
             (handle, workspace, bytes))
CUVIL_CUBLAS(cublasGemmEx,
             (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
              int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
              const void* B, cudaDataType Btype, int ldb, const void* beta, void* C,
              cudaDataType Ctype, int ldc, cublasComputeType_t computeType, cublasGemmAlgo_t algo),
             (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
              ldc, computeType, algo))
CUVIL_CUBLAS(cublasGemmStridedBatchedEx,
             (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m,
              int n, int k, const void* alpha, const void* A, cudaDataType Atype, int lda,
              long long int strideA, const void* B, cudaDataType Btype, int ldb,
              long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
              long long int strideC, int batchCount, cublasComputeType_t computeType,
              cublasGemmAlgo_t algo),
             (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
              strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType, algo))
CUVIL_FORWARD(cublas, failure_text(cublas()), const char*, cublasGetStatusString,
              (cublasStatus_t status), (status))
CUVIL_FORWARD(cublas, "CUBLAS_NOT_LOADED", const char*, cublasGetStatusName,
              (cublasStatus_t status), (status))

// cuBLASLt.
#define CUVIL_CUBLASLT(NAME, PARAMS, ARGS) \
  CUVIL_FORWARD(cublas_lt, CUBLAS_STATUS_NOT_INITIALIZED, cublasStatus_t, NAME, PARAMS, ARGS)
CUVIL_CUBLASLT(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
CUVIL_CUBLASLT(cublasLtDestroy, (cublasLtHandle_t handle), (handle))
CUVIL_CUBLASLT(cublasLtMatmulDescCreate,
               (cublasLtMatmulDesc_t * desc, cublasComputeType_t computeType,
                cudaDataType_t scaleType),
               (desc, computeType, scaleType))
CUVIL_CUBLASLT(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
CUVIL_CUBLASLT(cublasLtMatmulDescSetAttribute,
               (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const void* buf,
                size_t size),
               (desc, attr, buf, size))
CUVIL_CUBLASLT(cublasLtMatrixLayoutCreate,
               (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows, uint64_t cols,
                int64_t ld),
               (layout, type, rows, cols, ld))
CUVIL_CUBLASLT(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout), (layout))
CUVIL_CUBLASLT(cublasLtMatrixLayoutSetAttribute,
               (cublasLtMatrixLayout_t layout, cublasLtMatrixLayoutAttribute_t attr,
                const void* buf, size_t size),
               (layout, attr, buf, size))
CUVIL_CUBLASLT(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * pref), (pref))
CUVIL_CUBLASLT(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t pref), (pref))
CUVIL_CUBLASLT(cublasLtMatmulPreferenceSetAttribute,
               (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                const void* buf, size_t size),
               (pref, attr, buf, size))
CUVIL_CUBLASLT(cublasLtMatmulAlgoGetHeuristic,
               (cublasLtHandle_t handle, cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                cublasLtMatmulPreference_t pref, int requested,
                cublasLtMatmulHeuristicResult_t heuristicResultsArray[], int* returned),
               (handle, op, a, b, c, d, pref, requested, heuristicResultsArray, returned))
CUVIL_CUBLASLT(cublasLtMatmul,
               (cublasLtHandle_t handle, cublasLtMatmulDesc_t op, const void* alpha, const void* A,
                cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                size_t workspaceSize, cudaStream_t stream),
               (handle, op, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo, workspace,
                workspaceSize, stream))

// NVRTC.
#define CUVIL_NVRTC(NAME, PARAMS, ARGS) \
  CUVIL_FORWARD(nvrtc, NVRTC_ERROR_INTERNAL_ERROR, nvrtcResult, NAME, PARAMS, ARGS)
CUVIL_FORWARD(nvrtc, failure_text(nvrtc()), const char*, nvrtcGetErrorString, (nvrtcResult result),
              (result))
CUVIL_NVRTC(nvrtcVersion, (int* major, int* minor), (major, minor))
CUVIL_NVRTC(nvrtcCreateProgram,
            (nvrtcProgram * prog, const char* src, const char* name, int numHeaders,
             const char* const* headers, const char* const* includeNames),
            (prog, src, name, numHeaders, headers, includeNames))
CUVIL_NVRTC(nvrtcDestroyProgram, (nvrtcProgram * prog), (prog))
CUVIL_NVRTC(nvrtcCompileProgram, (nvrtcProgram prog, int numOptions, const char* const* options),
            (prog, numOptions, options))
CUVIL_NVRTC(nvrtcGetPTXSize, (nvrtcProgram prog, size_t* size), (prog, size))
CUVIL_NVRTC(nvrtcGetPTX, (nvrtcProgram prog, char* ptx), (prog, ptx))
CUVIL_NVRTC(nvrtcGetCUBINSize, (nvrtcProgram prog, size_t* size), (prog, size))
CUVIL_NVRTC(nvrtcGetCUBIN, (nvrtcProgram prog, char* cubin), (prog, cubin))
CUVIL_NVRTC(nvrtcGetProgramLogSize, (nvrtcProgram prog, size_t* size), (prog, size))
CUVIL_NVRTC(nvrtcGetProgramLog, (nvrtcProgram prog, char* log), (prog, log))
