#include "models/common/model_io.h"

#include <cmath>
#include <utility>

#include "models/common/tensor_checks.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

using sdk::Status;

void BackwardCall::ReadyWhole(int64_t param) const {
  if (gradient_ready == nullptr) return;
  Ready(param, 0, sdk::NumElements(grads[param]));
}

ModelIo::ModelIo(std::string model, std::vector<ParamSpec> specs,
                 ExampleShape shape, MNT_DType weight_dtype,
                 MNT_DType gradient_dtype, int64_t max_batch)
    : model_(std::move(model)),
      specs_(std::move(specs)),
      shape_(std::move(shape)),
      weight_dtype_(weight_dtype),
      gradient_dtype_(gradient_dtype),
      max_batch_(max_batch) {}

Status ModelIo::CheckParams(const char* call, const char* what,
                            const MNT_Tensor* tensors, size_t count,
                            MNT_DType dtype) const {
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
    MNT_RETURN_IF_ERROR(CheckTensor(
        context,
        std::string(what) + "[" + std::to_string(i) + "] " + specs_[i].name,
        &tensors[i], dtype, specs_[i].dims));
  }
  return Status::Ok();
}

Status ModelIo::CheckForward(const ForwardCall& call, int64_t* batch) const {
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
  return Status::Ok();
}

Status ModelIo::CheckBackward(const BackwardCall& call,
                              int64_t saved_batch) const {
  if (saved_batch == 0) {
    return sdk::FailedPrecondition(
        model_ +
        " Backward: no training Forward to back-propagate (call Forward "
        "with training=1 first)");
  }
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "params", call.params,
                                  call.num_params, weight_dtype_));
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "grads", call.grads,
                                  call.num_grads, gradient_dtype_));
  if (const MNT_Tensor* d = call.loss_multiplier_device; d != nullptr) {
    if (d->dtype != MNT_DTYPE_F32 || d->rank != 1 || d->dims[0] != 1 || d->data == nullptr) {
      return sdk::InvalidArgument(sdk::Format(
          "%s Backward: loss_multiplier_device is %s, expected f32[1] on the device",
          model_.c_str(), sdk::Describe(*d).c_str()));
    }
    return Status::Ok();
  }
  if (!std::isfinite(call.loss_multiplier)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s Backward: loss_multiplier is %g, expected a finite number",
        model_.c_str(), static_cast<double>(call.loss_multiplier)));
  }
  return Status::Ok();
}

}  // namespace mnt::models
