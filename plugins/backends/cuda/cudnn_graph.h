// A thin layer over cuDNN 9's backend graph API (cudnnBackendCreateDescriptor
// / SetAttribute / Finalize / Execute): tensors and operations are added to
// a GraphBuilder, which finalizes the operation graph, asks heuristics mode
// A for engine configurations and keeps the first execution plan that
// finalizes. Every cuDNN status becomes an sdk::Status naming the call.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_CUDNN_GRAPH_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_CUDNN_GRAPH_H_

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/sdk/status.h"

namespace mnt::cuda {

// Owns one backend descriptor.
class CudnnDescriptor {
 public:
  CudnnDescriptor() = default;
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;
  CudnnDescriptor(CudnnDescriptor&& o) noexcept : d_(o.d_) { o.d_ = nullptr; }
  CudnnDescriptor& operator=(CudnnDescriptor&& o) noexcept;
  ~CudnnDescriptor();

  sdk::Status Create(cudnnBackendDescriptorType_t type, const char* what);
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

// A finalized execution plan with everything it was built from, or (when
// `failure` is not empty) the reason none could be built, cached so a shape
// cuDNN refuses is not retried on every call.
struct CudnnPlan {
  std::vector<CudnnDescriptor> parts;  // tensors, ops, graph, engine configs
  CudnnDescriptor plan;
  int64_t workspace_bytes = 0;
  std::string failure;
};

struct CudnnTensorSpec {
  int64_t uid = 0;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  std::vector<int64_t> dims, strides;
  bool is_virtual = false;
  bool by_value = false;  // a host scalar passed in the variant pack
};

using CudnnTensor = cudnnBackendDescriptor_t;  // owned by the builder

class GraphBuilder {
 public:
  explicit GraphBuilder(cudnnHandle_t handle) : handle_(handle) {}

  sdk::Status Tensor(const CudnnTensorSpec& spec, CudnnTensor* out);
  // y = mode(x [, b] [, t]); `math` is the compute type; `axis` only for
  // GEN_INDEX.
  sdk::Status Pointwise(cudnnPointwiseMode_t mode, cudnnDataType_t math, CudnnTensor x,
                        CudnnTensor b, CudnnTensor t, CudnnTensor y, int64_t axis = -1);
  // c = a @ b over the last two dims (fp32 accumulation).
  sdk::Status Matmul(CudnnTensor a, CudnnTensor b, CudnnTensor c);
  // y = op(x) over the dims where y is 1 (fp32).
  sdk::Status Reduce(cudnnReduceTensorOp_t op, CudnnTensor x, CudnnTensor y);
  // y = x with other dims/strides (a transposed view).
  sdk::Status Reshape(CudnnTensor x, CudnnTensor y);

  // Operation graph -> heuristics -> the first plan that finalizes. Moves
  // every descriptor into *plan. UNIMPLEMENTED when no engine takes the
  // graph (the message says why the last candidate was refused).
  sdk::Status Build(const char* what, CudnnPlan* plan);

 private:
  sdk::Status NewDescriptor(cudnnBackendDescriptorType_t type, const char* what,
                            cudnnBackendDescriptor_t* out);

  cudnnHandle_t handle_;
  std::vector<CudnnDescriptor> owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
};

// Runs `plan` with the tensors uids[i] at pointers[i] (host pointers for
// by-value scalars) and `workspace` (at least plan.workspace_bytes). `what`
// (the op's name) is only formatted into a message when cuDNN fails.
sdk::Status ExecuteCudnnPlan(cudnnHandle_t handle, const CudnnPlan& plan,
                             const std::vector<int64_t>& uids,
                             const std::vector<void*>& pointers, void* workspace,
                             const char* what);

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_CUDNN_GRAPH_H_
