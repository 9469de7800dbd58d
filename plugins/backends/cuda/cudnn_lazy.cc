// cuDNN, loaded at its first call instead of at plugin load.
//
// The cuda backend links this file instead of libcudnn.so: it defines the
// cuDNN entry points the backend calls, and each one forwards to the same
// function of libcudnn.so.9, dlopen()ed once on first use. A machine that
// has cuBLAS but no cuDNN therefore still loads mnt_backend_cuda.so and runs
// every op that does not need cuDNN; the ops that do get
// CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED, and cudnnGetErrorString() of that
// status says why the library did not load (one line). cudnnGetVersion()
// returns 0, which attention=auto already reads as "no cuDNN SDPA" and runs
// the fallback kernels.
//
// $MANTISSA_CUDNN_LIBRARY names another file to load instead of
// "libcudnn.so.9" (found through the usual dlopen search).
//
// The definitions are hidden (see the BUILD target's copts): inside the
// plugin they bind to the callers at link time and never clash with a real
// libcudnn that something else in the process loaded.
//
// A new cuDNN call in the backend fails to link ("undefined reference to
// cudnnFoo") until it is added to MNT_CUDNN_FUNCTIONS below.
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

// X(name, parameter list, argument list) for every forwarded function; all
// of them return cudnnStatus_t.
#define MNT_CUDNN_FUNCTIONS(X)                                                        \
  X(cudnnCreate, (cudnnHandle_t * handle), (handle))                                  \
  X(cudnnDestroy, (cudnnHandle_t handle), (handle))                                   \
  X(cudnnSetStream, (cudnnHandle_t handle, cudaStream_t stream), (handle, stream))    \
  /* graph (backend) API: SDPA */                                                     \
  X(cudnnBackendCreateDescriptor,                                                     \
    (cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t * descriptor),       \
    (type, descriptor))                                                               \
  X(cudnnBackendDestroyDescriptor, (cudnnBackendDescriptor_t descriptor),             \
    (descriptor))                                                                     \
  X(cudnnBackendFinalize, (cudnnBackendDescriptor_t descriptor), (descriptor))        \
  X(cudnnBackendSetAttribute,                                                         \
    (cudnnBackendDescriptor_t descriptor, cudnnBackendAttributeName_t name,           \
     cudnnBackendAttributeType_t type, int64_t count, const void* elements),          \
    (descriptor, name, type, count, elements))                                        \
  X(cudnnBackendGetAttribute,                                                         \
    (cudnnBackendDescriptor_t const descriptor, cudnnBackendAttributeName_t name,     \
     cudnnBackendAttributeType_t type, int64_t requested, int64_t* count,             \
     void* elements),                                                                 \
    (descriptor, name, type, requested, count, elements))                             \
  X(cudnnBackendExecute,                                                              \
    (cudnnHandle_t handle, cudnnBackendDescriptor_t plan,                             \
     cudnnBackendDescriptor_t variant_pack),                                          \
    (handle, plan, variant_pack))                                                     \
  /* descriptors */                                                                   \
  X(cudnnCreateTensorDescriptor, (cudnnTensorDescriptor_t * d), (d))                  \
  X(cudnnDestroyTensorDescriptor, (cudnnTensorDescriptor_t d), (d))                   \
  X(cudnnSetTensor4dDescriptor,                                                       \
    (cudnnTensorDescriptor_t d, cudnnTensorFormat_t format, cudnnDataType_t type,     \
     int n, int c, int h, int w),                                                     \
    (d, format, type, n, c, h, w))                                                    \
  X(cudnnCreateFilterDescriptor, (cudnnFilterDescriptor_t * d), (d))                  \
  X(cudnnDestroyFilterDescriptor, (cudnnFilterDescriptor_t d), (d))                   \
  X(cudnnSetFilter4dDescriptor,                                                       \
    (cudnnFilterDescriptor_t d, cudnnDataType_t type, cudnnTensorFormat_t format,     \
     int k, int c, int h, int w),                                                     \
    (d, type, format, k, c, h, w))                                                    \
  X(cudnnCreateConvolutionDescriptor, (cudnnConvolutionDescriptor_t * d), (d))        \
  X(cudnnDestroyConvolutionDescriptor, (cudnnConvolutionDescriptor_t d), (d))         \
  X(cudnnSetConvolution2dDescriptor,                                                  \
    (cudnnConvolutionDescriptor_t d, int pad_h, int pad_w, int u, int v,              \
     int dilation_h, int dilation_w, cudnnConvolutionMode_t mode,                     \
     cudnnDataType_t compute_type),                                                   \
    (d, pad_h, pad_w, u, v, dilation_h, dilation_w, mode, compute_type))              \
  X(cudnnSetConvolutionGroupCount, (cudnnConvolutionDescriptor_t d, int groups),      \
    (d, groups))                                                                      \
  X(cudnnSetConvolutionMathType,                                                      \
    (cudnnConvolutionDescriptor_t d, cudnnMathType_t math), (d, math))                \
  /* convolutions */                                                                  \
  X(cudnnGetConvolutionForwardAlgorithm_v7,                                           \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x,                           \
     const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,        \
     const cudnnTensorDescriptor_t y, const int requested, int* returned,             \
     cudnnConvolutionFwdAlgoPerf_t* perf),                                            \
    (handle, x, w, conv, y, requested, returned, perf))                               \
  X(cudnnGetConvolutionForwardWorkspaceSize,                                          \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x,                           \
     const cudnnFilterDescriptor_t w, const cudnnConvolutionDescriptor_t conv,        \
     const cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo, size_t* bytes), \
    (handle, x, w, conv, y, algo, bytes))                                             \
  X(cudnnConvolutionForward,                                                          \
    (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t x_desc,   \
     const void* x, const cudnnFilterDescriptor_t w_desc, const void* w,              \
     const cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t algo,         \
     void* workspace, size_t workspace_bytes, const void* beta,                       \
     const cudnnTensorDescriptor_t y_desc, void* y),                                  \
    (handle, alpha, x_desc, x, w_desc, w, conv, algo, workspace, workspace_bytes,     \
     beta, y_desc, y))                                                                \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7,                                      \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t w,                           \
     const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,       \
     const cudnnTensorDescriptor_t dx, const int requested, int* returned,            \
     cudnnConvolutionBwdDataAlgoPerf_t* perf),                                        \
    (handle, w, dy, conv, dx, requested, returned, perf))                             \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize,                                     \
    (cudnnHandle_t handle, const cudnnFilterDescriptor_t w,                           \
     const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,       \
     const cudnnTensorDescriptor_t dx, cudnnConvolutionBwdDataAlgo_t algo,            \
     size_t* bytes),                                                                  \
    (handle, w, dy, conv, dx, algo, bytes))                                           \
  X(cudnnConvolutionBackwardData,                                                     \
    (cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t w_desc,   \
     const void* w, const cudnnTensorDescriptor_t dy_desc, const void* dy,            \
     const cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdDataAlgo_t algo,     \
     void* workspace, size_t workspace_bytes, const void* beta,                       \
     const cudnnTensorDescriptor_t dx_desc, void* dx),                                \
    (handle, alpha, w_desc, w, dy_desc, dy, conv, algo, workspace, workspace_bytes,   \
     beta, dx_desc, dx))                                                              \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7,                                    \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x,                           \
     const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,       \
     const cudnnFilterDescriptor_t dw, const int requested, int* returned,            \
     cudnnConvolutionBwdFilterAlgoPerf_t* perf),                                      \
    (handle, x, dy, conv, dw, requested, returned, perf))                             \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize,                                   \
    (cudnnHandle_t handle, const cudnnTensorDescriptor_t x,                           \
     const cudnnTensorDescriptor_t dy, const cudnnConvolutionDescriptor_t conv,       \
     const cudnnFilterDescriptor_t dw, cudnnConvolutionBwdFilterAlgo_t algo,          \
     size_t* bytes),                                                                  \
    (handle, x, dy, conv, dw, algo, bytes))                                           \
  X(cudnnConvolutionBackwardFilter,                                                   \
    (cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t x_desc,   \
     const void* x, const cudnnTensorDescriptor_t dy_desc, const void* dy,            \
     const cudnnConvolutionDescriptor_t conv, cudnnConvolutionBwdFilterAlgo_t algo,   \
     void* workspace, size_t workspace_bytes, const void* beta,                       \
     const cudnnFilterDescriptor_t dw_desc, void* dw),                                \
    (handle, alpha, x_desc, x, dy_desc, dy, conv, algo, workspace, workspace_bytes,   \
     beta, dw_desc, dw))

// The loaded library and one pointer per function; `error` is set (and every
// pointer null) when the library or any of its functions is missing.
struct Cudnn {
  size_t (*cudnnGetVersion)(void) = nullptr;
  const char* (*cudnnGetErrorString)(cudnnStatus_t) = nullptr;
#define MNT_CUDNN_POINTER(name, params, args) decltype(&::name) name = nullptr;
  MNT_CUDNN_FUNCTIONS(MNT_CUDNN_POINTER)
#undef MNT_CUDNN_POINTER
  std::string error;
};

template <typename Fn>
bool Resolve(void* handle, const char* name, Fn* out, std::string* missing) {
  *out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (*out == nullptr && missing->empty()) *missing = name;
  return *out != nullptr;
}

Cudnn LoadCudnn() {
  Cudnn c;
  const char* env = std::getenv("MANTISSA_CUDNN_LIBRARY");
  const std::string file = env != nullptr && *env != '\0' ? env : "libcudnn.so.9";
  dlerror();
  void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    c.error = std::string("cuDNN is not available: ") + (why != nullptr ? why : file);
  } else {
    std::string missing;
    Resolve(handle, "cudnnGetVersion", &c.cudnnGetVersion, &missing);
    Resolve(handle, "cudnnGetErrorString", &c.cudnnGetErrorString, &missing);
#define MNT_CUDNN_RESOLVE(name, params, args) Resolve(handle, #name, &c.name, &missing);
    MNT_CUDNN_FUNCTIONS(MNT_CUDNN_RESOLVE)
#undef MNT_CUDNN_RESOLVE
    if (!missing.empty()) {
      const std::string error =
          "cuDNN is not available: " + file + " has no " + missing + " (cuDNN 9 needed)";
      c = Cudnn();
      c.error = error;
      dlclose(handle);
    }
  }
  for (char& ch : c.error) {
    if (ch == '\n') ch = ' ';
  }
  if (!c.error.empty()) {
    // Once per process, so a run that needed cuDNN says why it was missing
    // even where the failing op's message is not shown.
    std::fprintf(stderr,
                 "mantissa: cuda backend: %s; ops that need cuDNN report this, "
                 "attention=auto uses the fallback kernels\n",
                 c.error.c_str());
  }
  return c;
}

const Cudnn& Lib() {
  static const Cudnn* const lib = new Cudnn(LoadCudnn());  // never destroyed
  return *lib;
}

}  // namespace

size_t cudnnGetVersion(void) {
  const Cudnn& c = Lib();
  return c.cudnnGetVersion != nullptr ? c.cudnnGetVersion() : 0;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  const Cudnn& c = Lib();
  if (c.cudnnGetErrorString == nullptr) {
    return status == CUDNN_STATUS_SUCCESS ? "CUDNN_STATUS_SUCCESS" : c.error.c_str();
  }
  return c.cudnnGetErrorString(status);
}

#define MNT_CUDNN_DEFINE(name, params, args)                                  \
  cudnnStatus_t name params {                                                 \
    const auto fn = Lib().name;                                               \
    return fn != nullptr ? fn args : CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED;  \
  }
MNT_CUDNN_FUNCTIONS(MNT_CUDNN_DEFINE)
#undef MNT_CUDNN_DEFINE
