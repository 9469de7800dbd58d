// Mantissa models: the arguments of Model_Forward / Model_Backward as a
// network receives them, and their checks, written once for every model.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_MODEL_IO_H_
#define MANTISSA_PLUGINS_SDK_MODEL_MODEL_IO_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/model/param_spec.h"
#include "plugins/sdk/model/tensor_checks.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

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
    // A frozen parameter (its gradient's data NULL, ABI 1.13) hands over nothing.
    if (gradient_ready != nullptr && count > 0 && grads[param].data != nullptr) {
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
  // frozen_allowed: a tensor may have NULL data (a frozen parameter's
  // gradient, ABI 1.13); its dtype and dims are still checked.
  sdk::Status CheckParams(const char* call, const char* what,
                          const MNT_Tensor* tensors, size_t count,
                          MNT_DType dtype, bool frozen_allowed = false) const;

  std::string model_;
  std::vector<ParamSpec> specs_;
  ExampleShape shape_;
  MNT_DType weight_dtype_ = MNT_DTYPE_F32;
  MNT_DType gradient_dtype_ = MNT_DTYPE_F32;
  int64_t max_batch_ = 0;
};

// Implementation (header-only: the SDK ships no library).

inline void BackwardCall::ReadyWhole(int64_t param) const {
  if (gradient_ready == nullptr) return;
  Ready(param, 0, sdk::NumElements(grads[param]));
}

inline ModelIo::ModelIo(std::string model, std::vector<ParamSpec> specs, ExampleShape shape,
                        MNT_DType weight_dtype, MNT_DType gradient_dtype, int64_t max_batch)
    : model_(std::move(model)),
      specs_(std::move(specs)),
      shape_(std::move(shape)),
      weight_dtype_(weight_dtype),
      gradient_dtype_(gradient_dtype),
      max_batch_(max_batch) {}

inline sdk::Status ModelIo::CheckParams(const char* call, const char* what,
                                        const MNT_Tensor* tensors, size_t count,
                                        MNT_DType dtype, bool frozen_allowed) const {
  const std::string context = model_ + " " + call;
  if (count != specs_.size()) {
    return sdk::InvalidArgument(sdk::Format("%s: got %zu %s, expected %zu",
                                            context.c_str(), count, what,
                                            specs_.size()));
  }
  if (tensors == nullptr) {
    return sdk::InvalidArgument(context + ": " + what + " is NULL");
  }
  for (size_t i = 0; i < count; ++i) {
    MNT_Tensor checked = tensors[i];
    // The shape check wants memory; a frozen gradient has none by design.
    if (frozen_allowed && checked.data == nullptr) checked.data = &checked;
    MNT_RETURN_IF_ERROR(CheckTensor(
        context,
        std::string(what) + "[" + std::to_string(i) + "] " + specs_[i].name,
        &checked, dtype, specs_[i].dims));
  }
  return sdk::Status::Ok();
}

inline sdk::Status ModelIo::CheckForward(const ForwardCall& call, int64_t* batch) const {
  const std::string context = model_ + " Forward";
  MNT_RETURN_IF_ERROR(CheckParams("Forward", "params", call.params,
                                  call.num_params, weight_dtype_));
  if (call.inputs == nullptr || call.targets == nullptr) {
    return sdk::InvalidArgument(context + ": inputs and targets are required");
  }
  const MNT_Tensor& inputs = *call.inputs;
  const int64_t b = inputs.rank >= 1 ? inputs.dims[0] : 0;
  if (b < 1 || b > max_batch_) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: batch of %lld %s (inputs %s), expected 1..%lld", context.c_str(),
        static_cast<long long>(b), shape_.noun, sdk::Describe(inputs).c_str(),
        static_cast<long long>(max_batch_)));
  }
  if (call.training && b < shape_.min_training_batch) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: training needs a batch of at least %lld %s (%s)", context.c_str(),
        static_cast<long long>(shape_.min_training_batch), shape_.noun,
        shape_.min_training_batch_reason));
  }
  std::vector<int64_t> input_dims = {b};
  input_dims.insert(input_dims.end(), shape_.input_dims.begin(),
                    shape_.input_dims.end());
  MNT_RETURN_IF_ERROR(CheckTensor(context, "inputs", call.inputs,
                                  shape_.input_dtype, input_dims));
  std::vector<int64_t> target_dims = {b};
  if (shape_.target_dims.empty()) {
    if (call.targets->rank == 2) target_dims.push_back(1);
  } else {
    target_dims.insert(target_dims.end(), shape_.target_dims.begin(),
                       shape_.target_dims.end());
  }
  MNT_RETURN_IF_ERROR(CheckTensor(context, "targets", call.targets,
                                  MNT_DTYPE_I32, target_dims));
  MNT_RETURN_IF_ERROR(
      CheckScalar(context, "loss_out", call.loss_out, MNT_DTYPE_F32));
  if (call.correct_out != nullptr) {
    MNT_RETURN_IF_ERROR(
        CheckScalar(context, "correct_out", call.correct_out, MNT_DTYPE_F32));
  }
  *batch = b;
  return sdk::Status::Ok();
}

inline sdk::Status ModelIo::CheckBackward(const BackwardCall& call, int64_t saved_batch) const {
  if (saved_batch == 0) {
    return sdk::FailedPrecondition(
        model_ +
        " Backward: no training Forward to back-propagate (call Forward "
        "with training=1 first)");
  }
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "params", call.params,
                                  call.num_params, weight_dtype_));
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "grads", call.grads,
                                  call.num_grads, gradient_dtype_, /*frozen_allowed=*/true));
  if (const MNT_Tensor* d = call.loss_multiplier_device; d != nullptr) {
    if (d->dtype != MNT_DTYPE_F32 || d->rank != 1 || d->dims[0] != 1 || d->data == nullptr) {
      return sdk::InvalidArgument(sdk::Format(
          "%s Backward: loss_multiplier_device is %s, expected f32[1] on the device",
          model_.c_str(), sdk::Describe(*d).c_str()));
    }
    return sdk::Status::Ok();
  }
  if (!std::isfinite(call.loss_multiplier)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s Backward: loss_multiplier is %g, expected a finite number",
        model_.c_str(), static_cast<double>(call.loss_multiplier)));
  }
  return sdk::Status::Ok();
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_MODEL_IO_H_
