#include "models/mlp/mlp_network.h"

#include <algorithm>
#include <cmath>

#include "models/common/tensor_checks.h"
#include "plugins/sdk/tensor.h"

namespace mnt::mlp {
namespace {

using sdk::Status;

constexpr const char* kName = "mlp";
// Refuse activation plans beyond this many bytes before asking the backend.
constexpr double kMaxActivationBytes = 1e15;

bool IsValidComputeMode(MNT_ComputeMode m) {
  return m == MNT_COMPUTE_F32 || m == MNT_COMPUTE_TF32 ||
         m == MNT_COMPUTE_BF16 || m == MNT_COMPUTE_F16;
}

Status CheckFloatDType(const char* what, MNT_DType t) {
  if (!sdk::IsFloatStorage(t)) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: precision.%s is %s, expected f32, f16 or bf16", what,
        sdk::DTypeName(t)));
  }
  return Status::Ok();
}

MNT_Tensor View(void* data, MNT_DType dtype, std::vector<int64_t> dims) {
  return sdk::MakeTensor(data, dtype, static_cast<int32_t>(dims.size()),
                         dims.data());
}

}  // namespace

Status MlpNetwork::Create(const MNT_Model_Create_Args& args,
                          std::unique_ptr<MlpNetwork>* out) {
  std::unique_ptr<MlpNetwork> net(new MlpNetwork());
  MNT_RETURN_IF_ERROR(net->Init(args));
  *out = std::move(net);
  return Status::Ok();
}

Status MlpNetwork::Init(const MNT_Model_Create_Args& args) {
  MNT_RETURN_IF_ERROR(ParseMlpOptions(args.options, &options_));

  if (args.backend_plugin == nullptr || args.backend_plugin->backend == nullptr ||
      args.backend == nullptr) {
    return sdk::InvalidArgument(
        "mlp: backend_plugin (with a backend API) and backend are required");
  }
  client_ = sdk::BackendClient(args.backend_plugin, args.backend);

  const MNT_DataSpec& data = args.data_spec;
  if (data.struct_size < MNT_DataSpec_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: data_spec.struct_size %zu is smaller than %zu", data.struct_size,
        static_cast<size_t>(MNT_DataSpec_STRUCT_SIZE)));
  }
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

  precision_ = args.precision;
  if (precision_.struct_size < MNT_ModelPrecision_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: precision.struct_size %zu is smaller than %zu",
        precision_.struct_size,
        static_cast<size_t>(MNT_ModelPrecision_STRUCT_SIZE)));
  }
  MNT_RETURN_IF_ERROR(CheckFloatDType("weight_dtype", precision_.weight_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType("gradient_dtype", precision_.gradient_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType("activation_dtype", precision_.activation_dtype));
  if (!IsValidComputeMode(precision_.matmul_compute)) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: precision.matmul_compute is %d, not a valid compute mode",
        static_cast<int>(precision_.matmul_compute)));
  }
  if (args.max_batch_size < 1) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp: max_batch_size is %lld, expected at least 1",
        static_cast<long long>(args.max_batch_size)));
  }
  max_batch_ = args.max_batch_size;

  for (MNT_Op op : {MNT_OP_GEMM, MNT_OP_CAST, MNT_OP_BIAS_GRAD,
                    MNT_OP_ACTIVATION_FORWARD, MNT_OP_ACTIVATION_BACKWARD,
                    MNT_OP_CROSS_ENTROPY, MNT_OP_REDUCE,
                    MNT_OP_COUNT_CORRECT}) {
    MNT_Backend_GetOpSupport_Args s{};
    s.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
    s.backend = args.backend;
    s.op = op;
    MNT_RETURN_IF_ERROR(sdk::StatusFromPluginError(
        args.backend_plugin, args.backend_plugin->backend->Backend_GetOpSupport(&s)));
    if (!s.supported) {
      return sdk::Unimplemented(sdk::Format(
          "mlp: backend '%s' does not support %s", args.backend_plugin->name,
          sdk::OpName(op)));
    }
  }

  widths_.push_back(features);
  for (int64_t h : options_.hidden) widths_.push_back(h);
  widths_.push_back(data.num_classes);

  for (int k = 0; k < num_layers(); ++k) {
    const int64_t in = widths_[k], out = widths_[k + 1];
    const std::string prefix = "layer" + std::to_string(k);
    specs_.push_back({prefix + ".weight", {in, out}, MNT_PARAM_INIT_NORMAL,
                      WeightInitStd(options_.init, in, out), true});
    specs_.push_back(
        {prefix + ".bias", {out}, MNT_PARAM_INIT_ZEROS, 0.0f, false});
  }

  // Everything saved between Forward and Backward lives in one block in the
  // activation dtype, so 16-bit precisions take exactly half the bytes.
  const size_t act = sdk::DTypeSize(precision_.activation_dtype);
  double planned = 0;
  auto reserve = [&](int64_t width) {
    planned += static_cast<double>(max_batch_) * width * act;
    return activations_.Reserve(static_cast<size_t>(max_batch_ * width) * act);
  };
  input_copy_ = reserve(features);
  for (int k = 0; k + 1 < num_layers(); ++k) {
    pre_activation_.push_back(reserve(widths_[k + 1]));
    post_activation_.push_back(reserve(widths_[k + 1]));
  }
  logits_ = reserve(data.num_classes);
  grad_width_ = *std::max_element(widths_.begin() + 1, widths_.end());
  grad_buffer_[0] = reserve(grad_width_);
  grad_buffer_[1] = reserve(grad_width_);
  if (planned > kMaxActivationBytes) {
    return sdk::ResourceExhausted(sdk::Format(
        "mlp: activations for max_batch_size %lld would take %.3g bytes",
        static_cast<long long>(max_batch_), planned));
  }
  MNT_RETURN_IF_ERROR(activations_.Allocate(client_, MNT_MEMORY_ACTIVATIONS));

  losses_ = workspace_.Reserve(static_cast<size_t>(max_batch_) * 4);
  saved_targets_ = workspace_.Reserve(static_cast<size_t>(max_batch_) * 4);
  MNT_RETURN_IF_ERROR(workspace_.Allocate(client_, MNT_MEMORY_WORKSPACE));
  return Status::Ok();
}

MNT_Tensor MlpNetwork::Activation(size_t handle, int64_t batch,
                                  int64_t width) const {
  return View(activations_.Data(handle), precision_.activation_dtype,
              {batch, width});
}

Status MlpNetwork::CheckParams(const char* call, const char* what,
                               const MNT_Tensor* tensors, size_t count,
                               MNT_DType dtype) const {
  const std::string context = std::string("mlp ") + call;
  if (count != specs_.size()) {
    return sdk::InvalidArgument(sdk::Format("%s: got %zu %s, expected %zu",
                                            context.c_str(), count, what,
                                            specs_.size()));
  }
  if (tensors == nullptr) {
    return sdk::InvalidArgument(context + ": " + what + " is NULL");
  }
  for (size_t i = 0; i < count; ++i) {
    MNT_RETURN_IF_ERROR(models::CheckTensor(
        context, std::string(what) + "[" + std::to_string(i) + "] " +
                     specs_[i].name,
        &tensors[i], dtype, specs_[i].dims));
  }
  return Status::Ok();
}

Status MlpNetwork::Forward(const models::ForwardCall& call) {
  const MNT_Tensor* params = call.params;
  const size_t num_params = call.num_params;
  const MNT_Tensor* inputs = call.inputs;
  const MNT_Tensor* targets = call.targets;
  const bool training = call.training;
  const MNT_Tensor* loss_out = call.loss_out;
  const MNT_Tensor* correct_out = call.correct_out;
  saved_batch_ = 0;  // this call overwrites what a previous Backward needed
  MNT_RETURN_IF_ERROR(CheckParams("Forward", "params", params, num_params,
                                  precision_.weight_dtype));
  if (inputs == nullptr || targets == nullptr) {
    return sdk::InvalidArgument("mlp Forward: inputs and targets are required");
  }
  const int64_t batch = inputs->rank >= 1 ? inputs->dims[0] : 0;
  if (batch < 1 || batch > max_batch_) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp Forward: batch of %lld rows (inputs %s), expected 1..%lld",
        static_cast<long long>(batch), sdk::Describe(*inputs).c_str(),
        static_cast<long long>(max_batch_)));
  }
  std::vector<int64_t> input_shape = {batch};
  input_shape.insert(input_shape.end(), input_dims_.begin(), input_dims_.end());
  MNT_RETURN_IF_ERROR(models::CheckTensor("mlp Forward", "inputs", inputs,
                                          MNT_DTYPE_F32, input_shape));
  if (targets->rank == 2) {
    MNT_RETURN_IF_ERROR(models::CheckTensor("mlp Forward", "targets", targets,
                                            MNT_DTYPE_I32, {batch, 1}));
  } else {
    MNT_RETURN_IF_ERROR(models::CheckTensor("mlp Forward", "targets", targets,
                                            MNT_DTYPE_I32, {batch}));
  }
  MNT_RETURN_IF_ERROR(
      models::CheckScalar("mlp Forward", "loss_out", loss_out, MNT_DTYPE_F32));
  if (correct_out != nullptr) {
    MNT_RETURN_IF_ERROR(models::CheckScalar("mlp Forward", "correct_out",
                                            correct_out, MNT_DTYPE_F32));
  }

  const MNT_DType act = precision_.activation_dtype;
  const int64_t features = widths_[0];
  const MNT_Tensor input_view = View(inputs->data, MNT_DTYPE_F32,
                                     {batch, features});
  const MNT_Tensor target_view = View(targets->data, MNT_DTYPE_I32, {batch});

  // The GEMM reads its input in the activation dtype (as autocast casts it).
  // Training keeps a copy, since `inputs` is only borrowed for this call.
  MNT_Tensor x = input_view;
  if (training || act != MNT_DTYPE_F32) {
    x = Activation(input_copy_, batch, features);
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_CAST, {input_view}, {x}));
  }

  MNT_GemmParams gemm{};
  gemm.struct_size = MNT_GemmParams_STRUCT_SIZE;
  gemm.alpha = 1.0f;
  gemm.beta = 0.0f;
  gemm.compute = precision_.matmul_compute;
  MNT_ActivationParams activation{};
  activation.struct_size = MNT_ActivationParams_STRUCT_SIZE;
  activation.activation = options_.activation;

  for (int k = 0; k < num_layers(); ++k) {
    const bool last = k + 1 == num_layers();
    const MNT_Tensor z =
        last ? Activation(logits_, batch, widths_[k + 1])
             : Activation(pre_activation_[k], batch, widths_[k + 1]);
    MNT_RETURN_IF_ERROR(client_.Run(
        MNT_OP_GEMM, {x, params[2 * k], params[2 * k + 1]}, {z}, &gemm));
    if (last) break;
    const MNT_Tensor a = Activation(post_activation_[k], batch, widths_[k + 1]);
    MNT_RETURN_IF_ERROR(
        client_.Run(MNT_OP_ACTIVATION_FORWARD, {z}, {a}, &activation));
    x = a;
  }

  const int64_t classes = widths_.back();
  const MNT_Tensor logits = Activation(logits_, batch, classes);
  const MNT_Tensor losses =
      View(workspace_.Data(losses_), MNT_DTYPE_F32, {batch});
  MNT_CrossEntropyParams ce{};
  ce.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  ce.grad_scale = 1.0f;
  ce.num_classes = classes;
  // Loss only: dlogits need Backward's loss_multiplier, and forming them
  // there rounds (softmax - onehot) * scale / B straight into the 16-bit
  // dtype instead of rounding an unscaled, possibly underflowing, value.
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_CROSS_ENTROPY, {logits, target_view}, {losses}, &ce));
  MNT_ReduceParams mean{};
  mean.struct_size = MNT_ReduceParams_STRUCT_SIZE;
  mean.kind = MNT_REDUCE_MEAN;
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_REDUCE, {losses}, {*loss_out}, &mean));
  if (correct_out != nullptr) {
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_COUNT_CORRECT,
                                    {logits, target_view}, {*correct_out},
                                    &ce));
  }
  if (training) {
    MNT_RETURN_IF_ERROR(client_.Copy(workspace_.Data(saved_targets_),
                                     targets->data,
                                     static_cast<size_t>(batch) * 4,
                                     MNT_COPY_DEVICE_TO_DEVICE));
    saved_batch_ = batch;
  }
  return Status::Ok();
}

Status MlpNetwork::Backward(const models::BackwardCall& call) {
  const MNT_Tensor* params = call.params;
  const size_t num_params = call.num_params;
  const MNT_Tensor* grads = call.grads;
  const size_t num_grads = call.num_grads;
  const float loss_multiplier = call.loss_multiplier;
  const bool accumulate = call.accumulate;
  if (saved_batch_ == 0) {
    return sdk::FailedPrecondition(
        "mlp Backward: no training Forward to back-propagate (call Forward "
        "with training=1 first)");
  }
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "params", params, num_params,
                                  precision_.weight_dtype));
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "grads", grads, num_grads,
                                  precision_.gradient_dtype));
  if (!std::isfinite(loss_multiplier)) {
    return sdk::InvalidArgument(sdk::Format(
        "mlp Backward: loss_multiplier is %g, expected a finite number",
        static_cast<double>(loss_multiplier)));
  }
  const int64_t batch = saved_batch_;
  const int64_t classes = widths_.back();

  // dlogits = (softmax - onehot) * loss_multiplier / B, the gradient of the
  // mean loss times the multiplier.
  MNT_CrossEntropyParams ce{};
  ce.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  ce.grad_scale = loss_multiplier / static_cast<float>(batch);
  ce.num_classes = classes;
  int current = 0;  // grad_buffer_ holding the gradient w.r.t. z_k
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_CROSS_ENTROPY,
      {Activation(logits_, batch, classes),
       View(workspace_.Data(saved_targets_), MNT_DTYPE_I32, {batch})},
      {View(workspace_.Data(losses_), MNT_DTYPE_F32, {batch}),
       Activation(grad_buffer_[current], batch, classes)},
      &ce));

  MNT_GemmParams weight_grad{};
  weight_grad.struct_size = MNT_GemmParams_STRUCT_SIZE;
  weight_grad.trans_a = 1;  // x^T [in, B] @ dz [B, out]
  weight_grad.alpha = 1.0f;
  weight_grad.beta = accumulate ? 1.0f : 0.0f;
  weight_grad.compute = precision_.matmul_compute;
  MNT_GemmParams input_grad{};
  input_grad.struct_size = MNT_GemmParams_STRUCT_SIZE;
  input_grad.trans_b = 1;  // dz [B, out] @ W^T [out, in]
  input_grad.alpha = 1.0f;
  input_grad.beta = 0.0f;
  input_grad.compute = precision_.matmul_compute;
  MNT_AccumulateParams bias_grad{};
  bias_grad.struct_size = MNT_AccumulateParams_STRUCT_SIZE;
  bias_grad.accumulate = accumulate ? 1 : 0;
  MNT_ActivationParams activation{};
  activation.struct_size = MNT_ActivationParams_STRUCT_SIZE;
  activation.activation = options_.activation;

  for (int k = num_layers() - 1; k >= 0; --k) {
    const int64_t in = widths_[k], out = widths_[k + 1];
    const MNT_Tensor dz = Activation(grad_buffer_[current], batch, out);
    const MNT_Tensor x = k == 0 ? Activation(input_copy_, batch, in)
                                : Activation(post_activation_[k - 1], batch, in);
    MNT_RETURN_IF_ERROR(
        client_.Run(MNT_OP_GEMM, {x, dz}, {grads[2 * k]}, &weight_grad));
    MNT_RETURN_IF_ERROR(
        client_.Run(MNT_OP_BIAS_GRAD, {dz}, {grads[2 * k + 1]}, &bias_grad));
    if (k == 0) break;
    const MNT_Tensor dx = Activation(grad_buffer_[1 - current], batch, in);
    MNT_RETURN_IF_ERROR(
        client_.Run(MNT_OP_GEMM, {dz, params[2 * k]}, {dx}, &input_grad));
    // dz_{k-1} = act'(z_{k-1}) * dx, in place.
    MNT_RETURN_IF_ERROR(client_.Run(
        MNT_OP_ACTIVATION_BACKWARD,
        {Activation(pre_activation_[k - 1], batch, in), dx}, {dx},
        &activation));
    current = 1 - current;
  }
  return Status::Ok();
}

}  // namespace mnt::mlp
