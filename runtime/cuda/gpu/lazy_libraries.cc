// The CUDA runtime, cuDNN, cuBLAS, cuBLASLt and NVRTC, loaded with dlopen on the first call into
// them. Linking them made every program that contains the CUDA backend (cuvil-bench,
// cuvil-tune-gen, the Python module, the test programs) pay their start-up whether or not it
// ever touched a GPU (cuBLASLt alone about 0.45 s per process: `cuvil-bench --version` took
// 0.5 s), and kept those programs from starting at all on a machine without the toolkit's
// libraries. The functions the backend calls are defined here against the toolkit headers'
// declarations and forward to the library's own. Where a library cannot be loaded, a call
// returns the library's generic failure status, and its status-string function names the
// library and dlerror()'s reason, so every error path (cuda_check.h) says why.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nvrtc.h>

#include <string>

#include "runtime/cuda/gpu/lazy_library.h"

namespace cuvil::runtime::cuda {
namespace {

#define CUVIL_STRINGIFY_INNER(x) #x
#define CUVIL_STRINGIFY(x) CUVIL_STRINGIFY_INNER(x)

// Each library is looked for on the loader's path, then in the toolkit directory the build used.
LazyLibrary& cudart() {
  // cudart's soname carries the toolkit's major version (libcudart.so.13 for CUDA 13.x).
  static LazyLibrary library(CUVIL_CUDART_SONAME, CUVIL_CUDA_LIBRARY_DIR);
  return library;
}
LazyLibrary& cudnn() {
  static LazyLibrary library("libcudnn.so." CUVIL_STRINGIFY(CUDNN_MAJOR), CUVIL_CUDA_LIBRARY_DIR);
  return library;
}
LazyLibrary& cublas() {
  static LazyLibrary library("libcublas.so." CUVIL_STRINGIFY(CUBLAS_VER_MAJOR),
                             CUVIL_CUDA_LIBRARY_DIR);
  return library;
}
LazyLibrary& cublas_lt() {
  static LazyLibrary library("libcublasLt.so." CUVIL_STRINGIFY(CUBLAS_VER_MAJOR),
                             CUVIL_CUDA_LIBRARY_DIR);
  return library;
}
LazyLibrary& nvrtc() {
  // NVRTC's soname carries the toolkit's major version (libnvrtc.so.13 for CUDA 13.x).
  static LazyLibrary library(CUVIL_NVRTC_SONAME, CUVIL_CUDA_LIBRARY_DIR);
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
using cuvil::runtime::cuda::cudart;
using cuvil::runtime::cuda::cudnn;
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

// The CUDA runtime (some names are macros for versioned symbols; the lookup uses the expansion).
#define CUVIL_CUDART(NAME, PARAMS, ARGS) \
  CUVIL_FORWARD(cudart, cudaErrorSharedObjectInitFailed, cudaError_t, NAME, PARAMS, ARGS)
CUVIL_FORWARD(cudart, failure_text(cudart()), const char*, cudaGetErrorString, (cudaError_t error),
              (error))
CUVIL_FORWARD(cudart, "cudaErrorSharedObjectInitFailed", const char*, cudaGetErrorName,
              (cudaError_t error), (error))
CUVIL_CUDART(cudaGetLastError, (void), ())
CUVIL_CUDART(cudaDriverGetVersion, (int* driverVersion), (driverVersion))
CUVIL_CUDART(cudaRuntimeGetVersion, (int* runtimeVersion), (runtimeVersion))
CUVIL_CUDART(cudaGetDeviceCount, (int* count), (count))
CUVIL_CUDART(cudaGetDevice, (int* device), (device))
CUVIL_CUDART(cudaSetDevice, (int device), (device))
CUVIL_CUDART(cudaGetDeviceProperties, (cudaDeviceProp * prop, int device), (prop, device))
CUVIL_CUDART(cudaDeviceGetAttribute, (int* value, cudaDeviceAttr attr, int device),
             (value, attr, device))
CUVIL_CUDART(cudaDeviceSynchronize, (void), ())
CUVIL_CUDART(cudaMalloc, (void** devPtr, size_t size), (devPtr, size))
CUVIL_CUDART(cudaFree, (void* devPtr), (devPtr))
CUVIL_CUDART(cudaMemcpy, (void* dst, const void* src, size_t count, cudaMemcpyKind kind),
             (dst, src, count, kind))
CUVIL_CUDART(cudaMemcpyAsync,
             (void* dst, const void* src, size_t count, cudaMemcpyKind kind, cudaStream_t stream),
             (dst, src, count, kind, stream))
CUVIL_CUDART(cudaMemsetAsync, (void* devPtr, int value, size_t count, cudaStream_t stream),
             (devPtr, value, count, stream))
CUVIL_CUDART(cudaStreamCreate, (cudaStream_t * pStream), (pStream))
CUVIL_CUDART(cudaStreamCreateWithFlags, (cudaStream_t * pStream, unsigned int flags),
             (pStream, flags))
CUVIL_CUDART(cudaStreamDestroy, (cudaStream_t stream), (stream))
CUVIL_CUDART(cudaStreamSynchronize, (cudaStream_t stream), (stream))
CUVIL_CUDART(cudaStreamBeginCapture, (cudaStream_t stream, cudaStreamCaptureMode mode),
             (stream, mode))
CUVIL_CUDART(cudaStreamEndCapture, (cudaStream_t stream, cudaGraph_t* pGraph), (stream, pGraph))
CUVIL_CUDART(cudaGraphInstantiate,
             (cudaGraphExec_t * pGraphExec, cudaGraph_t graph, unsigned long long flags),
             (pGraphExec, graph, flags))
CUVIL_CUDART(cudaGraphLaunch, (cudaGraphExec_t graphExec, cudaStream_t stream), (graphExec, stream))
CUVIL_CUDART(cudaGraphExecDestroy, (cudaGraphExec_t graphExec), (graphExec))
CUVIL_CUDART(cudaGraphDestroy, (cudaGraph_t graph), (graph))
CUVIL_CUDART(cudaEventCreate, (cudaEvent_t * event), (event))
CUVIL_CUDART(cudaEventDestroy, (cudaEvent_t event), (event))
CUVIL_CUDART(cudaEventRecord, (cudaEvent_t event, cudaStream_t stream), (event, stream))
CUVIL_CUDART(cudaEventSynchronize, (cudaEvent_t event), (event))
CUVIL_CUDART(cudaEventElapsedTime, (float* ms, cudaEvent_t start, cudaEvent_t end),
             (ms, start, end))
CUVIL_CUDART(cudaLibraryLoadData,
             (cudaLibrary_t * library, const void* code, cudaJitOption* jitOptions,
              void** jitOptionsValues, unsigned int numJitOptions,
              cudaLibraryOption* libraryOptions, void** libraryOptionValues,
              unsigned int numLibraryOptions),
             (library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
              libraryOptionValues, numLibraryOptions))
CUVIL_CUDART(cudaLibraryUnload, (cudaLibrary_t library), (library))
CUVIL_CUDART(cudaLibraryGetKernel,
             (cudaKernel_t * pKernel, cudaLibrary_t library, const char* name),
             (pKernel, library, name))
CUVIL_CUDART(cudaKernelSetAttributeForDevice,
             (cudaKernel_t kernel, cudaFuncAttribute attr, int value, int device),
             (kernel, attr, value, device))
CUVIL_CUDART(cudaLaunchKernel,
             (const void* func, dim3 gridDim, dim3 blockDim, void** args, size_t sharedMem,
              cudaStream_t stream),
             (func, gridDim, blockDim, args, sharedMem, stream))

// cuDNN.
#define CUVIL_CUDNN(NAME, PARAMS, ARGS) \
  CUVIL_FORWARD(cudnn, CUDNN_STATUS_NOT_INITIALIZED, cudnnStatus_t, NAME, PARAMS, ARGS)
CUVIL_FORWARD(cudnn, failure_text(cudnn()), const char*, cudnnGetErrorString,
              (cudnnStatus_t status), (status))
CUVIL_CUDNN(cudnnCreate, (cudnnHandle_t * handle), (handle))
CUVIL_CUDNN(cudnnDestroy, (cudnnHandle_t handle), (handle))
CUVIL_CUDNN(cudnnSetStream, (cudnnHandle_t handle, cudaStream_t streamId), (handle, streamId))
CUVIL_CUDNN(cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * tensorDesc), (tensorDesc))
CUVIL_CUDNN(cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t tensorDesc), (tensorDesc))
CUVIL_CUDNN(cudnnSetTensor4dDescriptor,
            (cudnnTensorDescriptor_t tensorDesc, cudnnTensorFormat_t format,
             cudnnDataType_t dataType, int n, int c, int h, int w),
            (tensorDesc, format, dataType, n, c, h, w))
CUVIL_CUDNN(cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * filterDesc), (filterDesc))
CUVIL_CUDNN(cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t filterDesc), (filterDesc))
CUVIL_CUDNN(cudnnSetFilter4dDescriptor,
            (cudnnFilterDescriptor_t filterDesc, cudnnDataType_t dataType,
             cudnnTensorFormat_t format, int k, int c, int h, int w),
            (filterDesc, dataType, format, k, c, h, w))
CUVIL_CUDNN(cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t * convDesc), (convDesc))
CUVIL_CUDNN(cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t convDesc), (convDesc))
CUVIL_CUDNN(cudnnSetConvolution2dDescriptor,
            (cudnnConvolutionDescriptor_t convDesc, int pad_h, int pad_w, int u, int v,
             int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,
             cudnnDataType_t computeType),
            (convDesc, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, computeType))
CUVIL_CUDNN(cudnnSetConvolutionGroupCount, (cudnnConvolutionDescriptor_t convDesc, int groupCount),
            (convDesc, groupCount))
CUVIL_CUDNN(cudnnSetConvolutionMathType,
            (cudnnConvolutionDescriptor_t convDesc, cudnnMathType_t mathType), (convDesc, mathType))
CUVIL_CUDNN(cudnnGetConvolution2dForwardOutputDim,
            (const cudnnConvolutionDescriptor_t convDesc,
             const cudnnTensorDescriptor_t inputTensorDesc,
             const cudnnFilterDescriptor_t filterDesc, int* n, int* c, int* h, int* w),
            (convDesc, inputTensorDesc, filterDesc, n, c, h, w))
CUVIL_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7,
            (cudnnHandle_t handle, const cudnnTensorDescriptor_t srcDesc,
             const cudnnFilterDescriptor_t filterDesc, const cudnnConvolutionDescriptor_t convDesc,
             const cudnnTensorDescriptor_t destDesc, const int requestedAlgoCount,
             int* returnedAlgoCount, cudnnConvolutionFwdAlgoPerf_t* perfResults),
            (handle, srcDesc, filterDesc, convDesc, destDesc, requestedAlgoCount, returnedAlgoCount,
             perfResults))
CUVIL_CUDNN(cudnnConvolutionForward,
            (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc,
             const void* x, const cudnnFilterDescriptor_t wDesc, const void* w,
             const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionFwdAlgo_t algo,
             void* workSpace, size_t workSpaceSizeInBytes, const void* beta,
             const cudnnTensorDescriptor_t yDesc, void* y),
            (handle, alpha, xDesc, x, wDesc, w, convDesc, algo, workSpace, workSpaceSizeInBytes,
             beta, yDesc, y))

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
