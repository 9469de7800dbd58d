// What an MNT_Backend / MNT_Event handle points to in the cuda plugin. The
// ABI types stay opaque, so this and the CPU backend link into one binary.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_STATE_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_STATE_H_

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/cuda/allocator.h"
#include "plugins/backends/cuda/backend_options.h"
#include "plugins/backends/cuda/cudnn_graph.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

struct CudaEvent {
  cudaEvent_t event = nullptr;
  bool recorded = false;
};

// A cached cuBLASLt heuristic answer for one GEMM configuration.
struct GemmAlgo {
  cublasLtMatmulAlgo_t algo;
};

// A cached cuDNN algorithm choice for one convolution configuration.
struct ConvAlgoChoice {
  int algo = 0;            // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t workspace_bytes = 0;
};

struct CudaBackend {
  static constexpr uint64_t kMagic = 0x6d6e745f63756431ull;  // "mnt_cud1"
  static constexpr size_t kGemmWorkspaceBytes = size_t{32} << 20;

  uint64_t magic = kMagic;
  int device = 0;
  std::string device_name;
  int64_t total_memory_bytes = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cudnnHandle_t cudnn = nullptr;  // bound to `stream`; created on first use
  DeviceAllocator allocator;
  void* gemm_workspace = nullptr;  // kGemmWorkspaceBytes, WORKSPACE category
  unsigned* error_word = nullptr;  // kError* bits set by kernels
  std::map<std::string, GemmAlgo> gemm_algos;
  std::map<std::string, ConvAlgoChoice> conv_algos;
  CudaBackendOptions options;
  // cuDNN SDPA plans (or why none builds) per attention shape/dtype.
  std::map<std::string, std::unique_ptr<CudnnPlan>> sdpa_plans;
  std::set<CudaEvent*> events;

  ~CudaBackend();
};

inline CudaBackend* FromHandle(MNT_Backend* b) {
  return reinterpret_cast<CudaBackend*>(b);
}
inline MNT_Backend* ToHandle(CudaBackend* b) {
  return reinterpret_cast<MNT_Backend*>(b);
}
inline CudaEvent* FromHandle(MNT_Event* e) {
  return reinterpret_cast<CudaEvent*>(e);
}
inline MNT_Event* ToHandle(CudaEvent* e) { return reinterpret_cast<MNT_Event*>(e); }

// Reads and clears the device error word (a sync point): kernels flag bad
// ids/targets there instead of forcing a host round trip per launch.
sdk::Status CheckDeviceErrors(CudaBackend& b);

// Scratch memory (WORKSPACE category) released when the holder goes out of
// scope; reuse by later work is ordered by the single stream.
class Scratch {
 public:
  explicit Scratch(CudaBackend& b) : backend_(b) {}
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { (void)backend_.allocator.Free(data_); }
  sdk::Status Allocate(size_t bytes) {
    return backend_.allocator.Allocate(bytes, MNT_MEMORY_WORKSPACE, &data_);
  }
  void* data() const { return data_; }

 private:
  CudaBackend& backend_;
  void* data_ = nullptr;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_STATE_H_
