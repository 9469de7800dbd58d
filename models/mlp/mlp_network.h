// Mantissa MLP model: the network itself (parameter specs, forward,
// backward), issuing only backend calls so it runs on any backend.
//
// Layer k computes z_k = x_k @ W_k + b_k with W_k stored [in, out] (so no
// GEMM transposes in forward), then a_k = act(z_k) for hidden layers; the
// last layer's z is the logits. Loss: mean softmax cross-entropy over the
// batch (every target must be a valid class: the MLP divides by B).
#ifndef MANTISSA_MODELS_MLP_MLP_NETWORK_H_
#define MANTISSA_MODELS_MLP_MLP_NETWORK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/common/device_arena.h"
#include "models/common/model_io.h"
#include "models/mlp/mlp_options.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

namespace mnt::mlp {

struct ParamSpec {
  std::string name;  // "layer0.weight", "layer0.bias", ...
  std::vector<int64_t> dims;
  MNT_ParamInit init;
  float init_scale;
  bool weight_decay;
};

class MlpNetwork {
 public:
  // Validates `args` (options, data spec, precision, backend) and allocates
  // the activations for args.max_batch_size.
  static sdk::Status Create(const MNT_Model_Create_Args& args,
                            std::unique_ptr<MlpNetwork>* out);

  MlpNetwork(const MlpNetwork&) = delete;
  MlpNetwork& operator=(const MlpNetwork&) = delete;

  const std::vector<ParamSpec>& param_specs() const { return specs_; }

  sdk::Status Forward(const models::ForwardCall& call);
  sdk::Status Backward(const models::BackwardCall& call);

 private:
  MlpNetwork() = default;
  sdk::Status Init(const MNT_Model_Create_Args& args);
  sdk::Status CheckParams(const char* call, const char* what,
                          const MNT_Tensor* tensors, size_t count,
                          MNT_DType dtype) const;
  int num_layers() const { return static_cast<int>(widths_.size()) - 1; }
  // Views of the model's own buffers for a batch of `batch` rows.
  MNT_Tensor Activation(size_t handle, int64_t batch, int64_t width) const;

  MlpOptions options_;
  sdk::BackendClient client_;
  MNT_ModelPrecision precision_{};
  int64_t max_batch_ = 0;
  std::vector<int64_t> input_dims_;  // per example, without the batch
  std::vector<int64_t> widths_;      // D, hidden..., num_classes
  std::vector<ParamSpec> specs_;

  // Activations (activation dtype): the input as the GEMM reads it, z and
  // a of every hidden layer, the logits, and two gradient ping-pong buffers.
  models::DeviceArena activations_;
  size_t input_copy_ = 0;
  std::vector<size_t> pre_activation_;  // z_k, hidden layers
  std::vector<size_t> post_activation_;  // a_k, hidden layers
  size_t logits_ = 0;
  size_t grad_buffer_[2] = {0, 0};
  int64_t grad_width_ = 0;
  // Workspace: per-example fp32 losses and the targets kept for Backward.
  models::DeviceArena workspace_;
  size_t losses_ = 0;
  size_t saved_targets_ = 0;

  int64_t saved_batch_ = 0;  // rows of the last training Forward; 0 = none
};

}  // namespace mnt::mlp

#endif  // MANTISSA_MODELS_MLP_MLP_NETWORK_H_
