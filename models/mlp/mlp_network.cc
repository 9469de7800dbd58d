#include "models/mlp/mlp_network.h"

#include <algorithm>
#include <string>

#include "plugins/sdk/model/views.h"
#include "plugins/sdk/tensor.h"

namespace mnt::mlp {
namespace {

using models::WeightLayout;
using sdk::Status;

constexpr WeightLayout kLayout = WeightLayout::kInOut;

}  // namespace

Status MlpNetwork::Create(const MNT_Model_Create_Args& args,
                          std::unique_ptr<MlpNetwork>* out) {
  std::unique_ptr<MlpNetwork> net(new MlpNetwork());
  MNT_RETURN_IF_ERROR(net->Init(args));
  *out = std::move(net);
  return Status::Ok();
}

Status MlpNetwork::CheckData(const MNT_DataSpec& data) {
  if (data.input_dtype != MNT_DTYPE_F32) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: input_dtype is %s; the MLP takes f32 features",
        sdk::DTypeName(data.input_dtype)));
  }
  if (data.input_rank < 1 || data.input_rank > MNT_MAX_RANK - 1) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: input_rank is %d, expected 1..%d", data.input_rank,
        MNT_MAX_RANK - 1));
  }
  int64_t features = 1;
  for (int i = 0; i < data.input_rank; ++i) {
    if (data.input_dims[i] < 1 || data.input_dims[i] > kMaxWidth) {
      return sdk::InvalidArgument(sdk::Format(
          "mlp: input_dims[%d] is %lld, expected 1..%lld", i,
          static_cast<long long>(data.input_dims[i]),
          static_cast<long long>(kMaxWidth)));
    }
    features *= data.input_dims[i];
    if (features > kMaxWidth) {
      return sdk::InvalidArgument(sdk::Format(
          "mlp: %lld+ input features per example, at most %lld supported",
          static_cast<long long>(features), static_cast<long long>(kMaxWidth)));
    }
    input_dims_.push_back(data.input_dims[i]);
  }
  if (data.num_classes < 2 || data.num_classes > kMaxWidth) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: num_classes is %lld, expected 2..%lld",
        static_cast<long long>(data.num_classes),
        static_cast<long long>(kMaxWidth)));
  }
  if (data.targets_per_example != 1) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: targets_per_example is %d; the MLP classifies, expected 1",
        data.targets_per_example));
  }
  widths_.push_back(features);
  for (int64_t h : options_.hidden) widths_.push_back(h);
  widths_.push_back(data.num_classes);
  return Status::Ok();
}

Status MlpNetwork::Init(const MNT_Model_Create_Args& args) {
  MNT_RETURN_IF_ERROR(ParseMlpOptions(args.options, &options_));
  MNT_RETURN_IF_ERROR(models::CheckCreateArgs(
      {"mlp",
       {MNT_OP_GEMM, MNT_OP_CAST, MNT_OP_BIAS_GRAD, MNT_OP_ACTIVATION_FORWARD,
        MNT_OP_ACTIVATION_BACKWARD, MNT_OP_CROSS_ENTROPY, MNT_OP_REDUCE,
        MNT_OP_COUNT_CORRECT},
       ""},
      args, [this](const MNT_DataSpec& d) { return CheckData(d); }, &setup_));

  std::vector<ParamSpec> specs;
  for (int k = 0; k < num_layers(); ++k) {
    const int64_t in = widths_[k], out = widths_[k + 1];
    const std::string prefix = "layer" + std::to_string(k);
    specs.push_back({prefix + ".weight", {in, out}, MNT_PARAM_INIT_NORMAL,
                     WeightInitStd(options_.init, in, out), true, kLayout});
    specs.push_back(
        {prefix + ".bias", {out}, MNT_PARAM_INIT_ZEROS, 0.0f, false});
  }
  models::ExampleShape example;
  example.input_dims = input_dims_;
  io_ = models::ModelIo("mlp", std::move(specs), example,
                        setup_.precision.weight_dtype,
                        setup_.precision.gradient_dtype, setup_.max_batch);

  // Everything saved between Forward and Backward lives in one block in the
  // activation dtype, so 16-bit precisions take exactly half the bytes.
  const MNT_DType act = setup_.precision.activation_dtype;
  const double rows = static_cast<double>(setup_.max_batch);
  input_copy_ = activations_.Reserve(act, rows * widths_[0]);
  for (int k = 0; k + 1 < num_layers(); ++k) {
    pre_activation_.push_back(activations_.Reserve(act, rows * widths_[k + 1]));
    post_activation_.push_back(activations_.Reserve(act, rows * widths_[k + 1]));
  }
  logits_ = activations_.Reserve(act, rows * widths_.back());
  const int64_t grad_width = *std::max_element(widths_.begin() + 1, widths_.end());
  grad_buffer_[0] = activations_.Reserve(act, rows * grad_width);
  grad_buffer_[1] = activations_.Reserve(act, rows * grad_width);
  MNT_RETURN_IF_ERROR(models::AllocateActivations(setup_, &activations_));

  losses_ = workspace_.Reserve(MNT_DTYPE_F32, rows);
  saved_targets_ = workspace_.Reserve(MNT_DTYPE_I32, rows);
  return workspace_.Allocate(setup_.client, MNT_MEMORY_WORKSPACE);
}

Status MlpNetwork::Forward(const models::ForwardCall& call) {
  saved_batch_ = 0;  // this call overwrites what a previous Backward needed
  int64_t batch = 0;
  MNT_RETURN_IF_ERROR(io_.CheckForward(call, &batch));
  const models::Ops& ops = setup_.ops;
  const int64_t classes = widths_.back();
  const MNT_Tensor inputs =
      models::View(call.inputs->data, MNT_DTYPE_F32, {batch, widths_[0]});
  const MNT_Tensor targets =
      models::View(call.targets->data, MNT_DTYPE_I32, {batch});

  // The GEMM reads its input in the activation dtype (as autocast casts it).
  // Training keeps a copy, since `inputs` is only borrowed for this call.
  MNT_Tensor x = inputs;
  if (call.training || setup_.precision.activation_dtype != MNT_DTYPE_F32) {
    x = Rows(input_copy_, batch, widths_[0]);
    MNT_RETURN_IF_ERROR(ops.Cast(inputs, x));
  }
  for (int k = 0; k < num_layers(); ++k) {
    const int64_t out = widths_[k + 1];
    const bool last = k + 1 == num_layers();
    const MNT_Tensor z = Rows(last ? logits_ : pre_activation_[k], batch, out);
    MNT_RETURN_IF_ERROR(
        ops.Linear(x, call.params[2 * k], call.params[2 * k + 1], z, kLayout));
    if (last) break;
    x = Rows(post_activation_[k], batch, out);
    MNT_RETURN_IF_ERROR(ops.Activation(options_.activation, z, x));
  }

  MNT_RETURN_IF_ERROR(ops.CrossEntropyLoss(
      Rows(logits_, batch, classes), targets, classes,
      workspace_.View(losses_, {batch}), *call.loss_out,
      models::Optional(call.correct_out)));
  if (call.training) {
    MNT_RETURN_IF_ERROR(
        ops.Copy(targets, workspace_.View(saved_targets_, {batch})));
    saved_batch_ = batch;
  }
  return Status::Ok();
}

Status MlpNetwork::Backward(const models::BackwardCall& call) {
  MNT_RETURN_IF_ERROR(io_.CheckBackward(call, saved_batch_));
  const models::Ops& ops = setup_.ops;
  const int64_t batch = saved_batch_;
  const int64_t classes = widths_.back();

  // dlogits = (softmax - onehot) * loss_multiplier / B, the gradient of the
  // mean loss times the multiplier.
  int current = 0;  // grad_buffer_ holding the gradient w.r.t. z_k
  MNT_RETURN_IF_ERROR(ops.CrossEntropyBackward(
      Rows(logits_, batch, classes), workspace_.View(saved_targets_, {batch}),
      classes,
      models::MeanLossGradScale(call.loss_multiplier, call.loss_multiplier_device, batch),
      workspace_.View(losses_, {batch}),
      Rows(grad_buffer_[current], batch, classes)));

  for (int k = num_layers() - 1; k >= 0; --k) {
    const int64_t in = widths_[k], out = widths_[k + 1];
    const MNT_Tensor dz = Rows(grad_buffer_[current], batch, out);
    const MNT_Tensor dx = Rows(grad_buffer_[1 - current], batch, in);
    MNT_RETURN_IF_ERROR(ops.LinearBackward(
        Rows(LayerInput(k), batch, in), call.params[2 * k], dz,
        call.grads[2 * k], call.grads[2 * k + 1],
        k == 0 ? std::nullopt : models::OptionalTensor(dx), call.accumulate,
        kLayout));
    // Layer k's weight and bias gradients are final (ABI 1.11 hand-over).
    call.ReadyWhole(2 * k);
    call.ReadyWhole(2 * k + 1);
    if (k == 0) break;
    // dz_{k-1} = act'(z_{k-1}) * dx, in place.
    MNT_RETURN_IF_ERROR(ops.ActivationBackward(
        options_.activation, Rows(pre_activation_[k - 1], batch, in), dx, dx));
    current = 1 - current;
  }
  return Status::Ok();
}

}  // namespace mnt::mlp
