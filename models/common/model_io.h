// Mantissa models: the arguments of Model_Forward / Model_Backward as a
// network receives them, and their checks, written once for every model.
#ifndef MANTISSA_MODELS_COMMON_MODEL_IO_H_
#define MANTISSA_MODELS_COMMON_MODEL_IO_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "models/common/param_spec.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/status.h"

namespace mnt::models {

// One Model_Forward, as ModelApi hands it over (tensors borrowed for the
// call).
struct ForwardCall {
  const MNT_Tensor* params = nullptr;
  size_t num_params = 0;
  const MNT_Tensor* inputs = nullptr;
  const MNT_Tensor* targets = nullptr;
  bool training = false;
  const MNT_Tensor* loss_out = nullptr;
  const MNT_Tensor* correct_out = nullptr;  // may be NULL
};

// One Model_Backward.
struct BackwardCall {
  const MNT_Tensor* params = nullptr;
  size_t num_params = 0;
  const MNT_Tensor* grads = nullptr;
  size_t num_grads = 0;
  float loss_multiplier = 1.0f;
  bool accumulate = false;
  // Since ABI 1.6: F32 [1] on the device replacing loss_multiplier; NULL
  // when the host passed a float.
  const MNT_Tensor* loss_multiplier_device = nullptr;
  // Since ABI 1.11 (MNT_CAPABILITY_MODEL_GRADIENT_READY): the host's
  // MNT_GradientReadyFn; NULL when the host gave none (or its struct ends
  // before it).
  MNT_GradientReadyFn* gradient_ready = nullptr;
  void* gradient_ready_user_data = nullptr;

  // Reports that the last op writing elements [first, first + count) of
  // gradient `param` has been issued; a no-op without a callback. A
  // Network's Backward calls it exactly once for every element of every
  // gradient, never before that region's last write.
  void Ready(int64_t param, int64_t first, int64_t count) const {
    if (gradient_ready != nullptr && count > 0) {
      gradient_ready(gradient_ready_user_data, param, first, count);
    }
  }
  // The whole of gradient `param` (grads[param] must exist).
  void ReadyWhole(int64_t param) const;
};

// One example as a model's Forward takes it.
struct ExampleShape {
  const char* noun = "rows";  // "batch of 9 rows": images, sequences, ...
  MNT_DType input_dtype = MNT_DTYPE_F32;
  std::vector<int64_t> input_dims;  // per example, without the batch
  // Per example, without the batch; empty: one class id, targets [B] or
  // [B, 1].
  std::vector<int64_t> target_dims;
  // Training batches smaller than this are refused, giving the reason.
  int64_t min_training_batch = 1;
  const char* min_training_batch_reason = "";
};

// Checks every Forward and Backward against the model's parameters, its
// example shape and its batch limit, with one-line messages
// "<model> Forward: ...".
class ModelIo {
 public:
  ModelIo() = default;
  ModelIo(std::string model, std::vector<ParamSpec> specs, ExampleShape shape,
          MNT_DType weight_dtype, MNT_DType gradient_dtype,
          int64_t max_batch);

  const std::vector<ParamSpec>& param_specs() const { return specs_; }

  // Params, inputs [B, input_dims...], targets, loss_out and correct_out;
  // on success *batch is B.
  sdk::Status CheckForward(const ForwardCall& call, int64_t* batch) const;
  // A training Forward came first (saved_batch > 0), params and grads have
  // the spec shapes, the loss multiplier is finite (a device one is F32 [1];
  // its value is not read).
  sdk::Status CheckBackward(const BackwardCall& call,
                            int64_t saved_batch) const;

 private:
  sdk::Status CheckParams(const char* call, const char* what,
                          const MNT_Tensor* tensors, size_t count,
                          MNT_DType dtype) const;

  std::string model_;
  std::vector<ParamSpec> specs_;
  ExampleShape shape_;
  MNT_DType weight_dtype_ = MNT_DTYPE_F32;
  MNT_DType gradient_dtype_ = MNT_DTYPE_F32;
  int64_t max_batch_ = 0;
};

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_MODEL_IO_H_
