// GEMM's per-backend state (gemm.cu): the cuBLASLt handle, the heuristic's
// algorithm per configuration, and one workspace. Kept out of backend.h so
// that only gemm.cu and plugin.cc compile cuBLASLt's headers.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_H_

#include <cublasLt.h>

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "plugins/sdk/status.h"

namespace mnt::cuda {

struct GemmState {
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

  GemmState() = default;
  GemmState(const GemmState&) = delete;
  GemmState& operator=(const GemmState&) = delete;
  ~GemmState();

  cublasLtHandle_t lt = nullptr;
  // Cached heuristic answers per configuration; nullopt caches "cuBLASLt
  // has no algorithm" so that a refused shape is not re-queried every call.
  std::map<std::string, std::optional<cublasLtMatmulAlgo_t>> algos;
  // kWorkspaceBytes of the backend's memory (WORKSPACE category) on first
  // use; given back with the rest of the backend's memory.
  void* workspace = nullptr;
};

// The state with a fresh cuBLASLt handle.
sdk::Status CreateGemmState(std::unique_ptr<GemmState>* out);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_GEMM_H_
