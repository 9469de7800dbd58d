// Mantissa MLP model: the network itself (parameter specs, forward,
// backward), written against the op facade (plugins/sdk/model/ops.h) so it runs
// on any backend.
//
// Layer k computes z_k = x_k @ W_k + b_k with W_k stored [in, out] (so no
// GEMM transposes in forward), then a_k = act(z_k) for hidden layers; the
// last layer's z is the logits. Loss: mean softmax cross-entropy over the
// batch (every target must be a valid class: the MLP divides by B).
#ifndef MANTISSA_MODELS_MLP_MLP_NETWORK_H_
#define MANTISSA_MODELS_MLP_MLP_NETWORK_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "plugins/sdk/model/create_args.h"
#include "plugins/sdk/model/device_arena.h"
#include "plugins/sdk/model/model_io.h"
#include "plugins/sdk/model/ops.h"
#include "plugins/sdk/model/param_spec.h"
#include "models/mlp/mlp_options.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/status.h"

namespace mnt::mlp {

using models::ParamSpec;

class MlpNetwork {
 public:
  // What it trains on (ABI 1.12; the trainer refuses other data): feature
  // vectors, and images (flattened).
  static constexpr int32_t kDataKinds[] = {MNT_DATA_KIND_FEATURES, MNT_DATA_KIND_IMAGES};

  // Validates `args` (options, data spec, precision, backend) and allocates
  // the activations for args.max_batch_size.
  static sdk::Status Create(const MNT_Model_Create_Args& args,
                            std::unique_ptr<MlpNetwork>* out);

  MlpNetwork(const MlpNetwork&) = delete;
  MlpNetwork& operator=(const MlpNetwork&) = delete;

  const std::vector<ParamSpec>& param_specs() const { return io_.param_specs(); }

  sdk::Status Forward(const models::ForwardCall& call);
  sdk::Status Backward(const models::BackwardCall& call);
  const models::ModelSetup& setup() const { return setup_; }

 private:
  MlpNetwork() = default;
  sdk::Status Init(const MNT_Model_Create_Args& args);
  sdk::Status CheckData(const MNT_DataSpec& data);
  int num_layers() const { return static_cast<int>(widths_.size()) - 1; }
  // [batch, width] view of an activation.
  MNT_Tensor Rows(models::DeviceArena::Slot slot, int64_t batch,
                  int64_t width) const {
    return activations_.View(slot, {batch, width});
  }
  // The input of layer k as the GEMM reads it.
  models::DeviceArena::Slot LayerInput(int k) const {
    return k == 0 ? input_copy_ : post_activation_[k - 1];
  }

  MlpOptions options_;
  models::ModelSetup setup_;
  models::ModelIo io_;
  std::vector<int64_t> input_dims_;  // per example, without the batch
  std::vector<int64_t> widths_;      // D, hidden..., num_classes

  // Activations (activation dtype): the input as the GEMM reads it, z and
  // a of every hidden layer, the logits, and two gradient ping-pong buffers.
  models::DeviceArena activations_;
  models::DeviceArena::Slot input_copy_;
  std::vector<models::DeviceArena::Slot> pre_activation_;   // z_k, hidden
  std::vector<models::DeviceArena::Slot> post_activation_;  // a_k, hidden
  models::DeviceArena::Slot logits_;
  models::DeviceArena::Slot grad_buffer_[2];
  // Workspace: per-example fp32 losses and the targets kept for Backward.
  models::DeviceArena workspace_;
  models::DeviceArena::Slot losses_, saved_targets_;

  int64_t saved_batch_ = 0;  // rows of the last training Forward; 0 = none
};

}  // namespace mnt::mlp

#endif  // MANTISSA_MODELS_MLP_MLP_NETWORK_H_
