// Mantissa CNN model: a small ResNet (parameter specs, forward, backward),
// issuing only backend calls so it runs on any backend with the ABI 1.3 ops.
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
#include "models/common/device_arena.h"
#include "models/common/model_io.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

namespace mnt::cnn {

struct ParamSpec {
  std::string name;  // "stem.conv.weight", "block0.bn1.bias", "head.weight"
  std::vector<int64_t> dims;
  MNT_ParamInit init;
  float init_scale;
  bool weight_decay;
};

class CnnNetwork {
 public:
  static sdk::Status Create(const MNT_Model_Create_Args& args,
                            std::unique_ptr<CnnNetwork>* out);

  CnnNetwork(const CnnNetwork&) = delete;
  CnnNetwork& operator=(const CnnNetwork&) = delete;

  const std::vector<ParamSpec>& param_specs() const { return specs_; }

  sdk::Status Forward(const models::ForwardCall& call);
  sdk::Status Backward(const models::BackwardCall& call);

 private:
  // One conv-bn(-add)-relu unit. Its parameters are at 3*index (conv
  // weight), 3*index+1 (bn gamma), 3*index+2 (bn beta).
  struct Unit {
    int64_t in_channels;
    int input;     // unit whose output `a` it reads; -1 = the input copy
    int residual;  // unit whose output is added before the relu; -1 = none
    // Activations (activation dtype, [B, width, H, W]).
    size_t z, u, a, da;
    // Workspace (F32 [width]).
    size_t saved_mean, saved_invstd, running_mean, running_var;
  };

  CnnNetwork() = default;
  sdk::Status Init(const MNT_Model_Create_Args& args);
  sdk::Status CheckParams(const char* call, const char* what,
                          const MNT_Tensor* tensors, size_t count,
                          MNT_DType dtype) const;
  MNT_Tensor Act(size_t handle, std::vector<int64_t> dims) const;
  MNT_Tensor Map(size_t handle, int64_t batch, int64_t channels) const;
  MNT_Tensor Stat(size_t handle) const;
  MNT_Conv2dParams ConvParams(bool accumulate) const;
  MNT_BatchNormParams BnParams(bool training, bool accumulate) const;
  size_t head_index() const { return 3 * units_.size(); }

  CnnOptions options_;
  sdk::BackendClient client_;
  MNT_ModelPrecision precision_{};
  int64_t max_batch_ = 0;
  int64_t in_channels_ = 0, height_ = 0, width_px_ = 0, classes_ = 0;
  std::vector<int64_t> input_dims_;  // per example, as the data gives it
  std::vector<ParamSpec> specs_;
  std::vector<Unit> units_;

  models::DeviceArena activations_;
  size_t input_copy_ = 0, dz_ = 0, pooled_ = 0, dpooled_ = 0, logits_ = 0,
         dlogits_ = 0;
  models::DeviceArena workspace_;
  size_t losses_ = 0, saved_targets_ = 0;

  int64_t saved_batch_ = 0;  // rows of the last training Forward; 0 = none
};

}  // namespace mnt::cnn

#endif  // MANTISSA_MODELS_CNN_CNN_NETWORK_H_
