// Mantissa CNN model: a small ResNet (parameter specs, forward, backward),
// written against the op facade (plugins/sdk/model/ops.h), so it runs on any
// backend with the ABI 1.3 ops.
//
// Input F32 [B, C, H, W], or [B, H, W] read as one channel (the digits are
// [8, 8]). Every conv is 3x3, stride 1, padding 1, no bias (a batch norm
// follows), so all feature maps keep the input's H x W:
//   stem:     a0 = relu(bn(conv(x)))                         C -> width
//   block i:  t  = relu(bn1(conv1(a)))
//             a' = relu(bn2(conv2(t)) + a)                   residual add
//   head:     logits = global_avg_pool(a) [B, width] @ W + b
// Loss: mean softmax cross-entropy over the batch. Batch norm trains on
// batch statistics and evaluates (training=0) on its running statistics,
// which the model owns (fp32, updated with bn_momentum); they are not
// parameters, so a checkpoint does not carry them.
#ifndef MANTISSA_MODELS_CNN_CNN_NETWORK_H_
#define MANTISSA_MODELS_CNN_CNN_NETWORK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/cnn/cnn_options.h"
#include "plugins/sdk/model/create_args.h"
#include "plugins/sdk/model/device_arena.h"
#include "plugins/sdk/model/model_io.h"
#include "plugins/sdk/model/ops.h"
#include "plugins/sdk/model/param_spec.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/status.h"

namespace mnt::cnn {

using models::ParamSpec;

class CnnNetwork {
 public:
  // What it trains on (ABI 1.12; the trainer refuses other data): images
  // [H, W] or [C, H, W].
  static constexpr int32_t kDataKinds[] = {MNT_DATA_KIND_IMAGES};

  static sdk::Status Create(const MNT_Model_Create_Args& args,
                            std::unique_ptr<CnnNetwork>* out);

  CnnNetwork(const CnnNetwork&) = delete;
  CnnNetwork& operator=(const CnnNetwork&) = delete;

  const std::vector<ParamSpec>& param_specs() const { return io_.param_specs(); }

  sdk::Status Forward(const models::ForwardCall& call);
  sdk::Status Backward(const models::BackwardCall& call);
  const models::ModelSetup& setup() const { return setup_; }

 private:
  using Slot = models::DeviceArena::Slot;

  // One conv-bn(-add)-relu unit. Its parameters are at 3*index (conv
  // weight), 3*index+1 (bn gamma), 3*index+2 (bn beta).
  struct Unit {
    int64_t in_channels;
    int input;     // unit whose output `a` it reads; -1 = the input copy
    int residual;  // unit whose output is added before the relu; -1 = none
    // Activations (activation dtype, [B, width, H, W]): conv output z, batch
    // norm (+ residual) output u, relu output a, and the gradient for a.
    Slot z, u, a, da;
    // Workspace (F32 [width]).
    Slot saved_mean, saved_invstd, running_mean, running_var;
  };

  CnnNetwork() = default;
  sdk::Status Init(const MNT_Model_Create_Args& args);
  sdk::Status CheckData(const MNT_DataSpec& data);
  void AddUnit(const std::string& conv, const std::string& bn,
               int64_t in_channels, int input, int residual,
               std::vector<ParamSpec>* specs);
  void PlanActivations();
  // [batch, channels, H, W] view of a feature map.
  MNT_Tensor Map(Slot slot, int64_t batch, int64_t channels) const {
    return activations_.View(slot, {batch, channels, height_, width_px_});
  }
  // The feature map unit `u` reads (the input copy, or a unit's output).
  MNT_Tensor UnitInput(const Unit& u, int64_t batch) const;
  models::BatchNormStats Stats(const Unit& u) const;
  size_t head_index() const { return 3 * units_.size(); }

  CnnOptions options_;
  models::ModelSetup setup_;
  models::ModelIo io_;
  models::BatchNormSpec batch_norm_;
  int64_t in_channels_ = 0, height_ = 0, width_px_ = 0, classes_ = 0;
  std::vector<int64_t> input_dims_;  // per example, as the data gives it
  std::vector<Unit> units_;

  models::DeviceArena activations_;
  Slot input_copy_, dz_, pooled_, dpooled_, logits_, dlogits_;
  models::DeviceArena workspace_;
  Slot losses_, saved_targets_;

  int64_t saved_batch_ = 0;  // rows of the last training Forward; 0 = none
};

}  // namespace mnt::cnn

#endif  // MANTISSA_MODELS_CNN_CNN_NETWORK_H_
