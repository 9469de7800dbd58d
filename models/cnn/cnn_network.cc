#include "models/cnn/cnn_network.h"

#include <cmath>

#include "models/common/tensor_checks.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cnn {
namespace {

using sdk::Status;

constexpr double kMaxActivationBytes = 1e15;
constexpr float kBnEpsilon = 1e-5f;
constexpr int64_t kMaxSide = 1 << 14;

Status CheckFloatDType(const char* what, MNT_DType t) {
  if (!sdk::IsFloatStorage(t)) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: precision.%s is %s, expected f32, f16 or bf16", what,
        sdk::DTypeName(t)));
  }
  return Status::Ok();
}

MNT_Tensor View(void* data, MNT_DType dtype, std::vector<int64_t> dims) {
  return sdk::MakeTensor(data, dtype, static_cast<int32_t>(dims.size()),
                         dims.data());
}

}  // namespace

Status CnnNetwork::Create(const MNT_Model_Create_Args& args,
                          std::unique_ptr<CnnNetwork>* out) {
  std::unique_ptr<CnnNetwork> net(new CnnNetwork());
  MNT_RETURN_IF_ERROR(net->Init(args));
  *out = std::move(net);
  return Status::Ok();
}

Status CnnNetwork::Init(const MNT_Model_Create_Args& args) {
  MNT_RETURN_IF_ERROR(ParseCnnOptions(args.options, &options_));
  if (args.backend_plugin == nullptr ||
      args.backend_plugin->backend == nullptr || args.backend == nullptr) {
    return sdk::InvalidArgument(
        "cnn: backend_plugin (with a backend API) and backend are required");
  }
  client_ = sdk::BackendClient(args.backend_plugin, args.backend);

  const MNT_DataSpec& data = args.data_spec;
  if (data.struct_size < MNT_DataSpec_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: data_spec.struct_size %zu is smaller than %zu", data.struct_size,
        static_cast<size_t>(MNT_DataSpec_STRUCT_SIZE)));
  }
  if (data.input_dtype != MNT_DTYPE_F32) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: input_dtype is %s; the CNN takes f32 images",
        sdk::DTypeName(data.input_dtype)));
  }
  if (data.input_rank != 2 && data.input_rank != 3) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: input_rank is %d; the CNN takes images [H, W] or [C, H, W]",
        data.input_rank));
  }
  for (int i = 0; i < data.input_rank; ++i) {
    if (data.input_dims[i] < 1 || data.input_dims[i] > kMaxSide) {
      return sdk::InvalidArgument(sdk::Format(
          "cnn: input_dims[%d] is %lld, expected 1..%lld", i,
          static_cast<long long>(data.input_dims[i]),
          static_cast<long long>(kMaxSide)));
    }
    input_dims_.push_back(data.input_dims[i]);
  }
  in_channels_ = data.input_rank == 3 ? data.input_dims[0] : 1;
  height_ = data.input_dims[data.input_rank - 2];
  width_px_ = data.input_dims[data.input_rank - 1];
  if (data.num_classes < 2 || data.num_classes > (int64_t{1} << 20)) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: num_classes is %lld, expected 2..%lld",
        static_cast<long long>(data.num_classes), (long long)(1 << 20)));
  }
  classes_ = data.num_classes;
  if (data.targets_per_example != 1) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: targets_per_example is %d; the CNN classifies, expected 1",
        data.targets_per_example));
  }

  precision_ = args.precision;
  if (precision_.struct_size < MNT_ModelPrecision_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: precision.struct_size %zu is smaller than %zu",
        precision_.struct_size,
        static_cast<size_t>(MNT_ModelPrecision_STRUCT_SIZE)));
  }
  MNT_RETURN_IF_ERROR(CheckFloatDType("weight_dtype", precision_.weight_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType("gradient_dtype", precision_.gradient_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType("activation_dtype", precision_.activation_dtype));
  const MNT_ComputeMode cm = precision_.matmul_compute;
  if (cm != MNT_COMPUTE_F32 && cm != MNT_COMPUTE_TF32 &&
      cm != MNT_COMPUTE_BF16 && cm != MNT_COMPUTE_F16) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: precision.matmul_compute is %d, not a valid compute mode",
        static_cast<int>(cm)));
  }
  if (args.max_batch_size < 1) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn: max_batch_size is %lld, expected at least 1",
        static_cast<long long>(args.max_batch_size)));
  }
  max_batch_ = args.max_batch_size;

  for (MNT_Op op :
       {MNT_OP_CONV2D_FORWARD, MNT_OP_CONV2D_BACKWARD_DATA,
        MNT_OP_CONV2D_BACKWARD_FILTER, MNT_OP_BATCHNORM_FORWARD,
        MNT_OP_BATCHNORM_BACKWARD, MNT_OP_POOL2D_FORWARD,
        MNT_OP_POOL2D_BACKWARD, MNT_OP_GEMM, MNT_OP_CAST, MNT_OP_ADD,
        MNT_OP_FILL, MNT_OP_BIAS_GRAD, MNT_OP_ACTIVATION_FORWARD,
        MNT_OP_ACTIVATION_BACKWARD, MNT_OP_CROSS_ENTROPY, MNT_OP_REDUCE,
        MNT_OP_COUNT_CORRECT}) {
    MNT_Backend_GetOpSupport_Args s{};
    s.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
    s.backend = args.backend;
    s.op = op;
    MNT_RETURN_IF_ERROR(sdk::StatusFromPluginError(
        args.backend_plugin,
        args.backend_plugin->backend->Backend_GetOpSupport(&s)));
    if (!s.supported) {
      return sdk::Unimplemented(sdk::Format(
          "cnn: backend '%s' does not support %s (ABI 1.3 conv ops needed)",
          args.backend_plugin->name, sdk::OpName(op)));
    }
  }

  // Units and their parameters.
  const int64_t width = options_.width;
  auto add_unit = [&](const std::string& conv, const std::string& bn,
                      int64_t in_ch, int input, int residual) {
    Unit u{};
    u.in_channels = in_ch;
    u.input = input;
    u.residual = residual;
    units_.push_back(u);
    const float he = static_cast<float>(std::sqrt(2.0 / (in_ch * 9)));
    specs_.push_back({conv + ".weight", {width, in_ch, 3, 3},
                      MNT_PARAM_INIT_NORMAL, he, true});
    specs_.push_back({bn + ".weight", {width}, MNT_PARAM_INIT_ONES, 0.0f, false});
    specs_.push_back({bn + ".bias", {width}, MNT_PARAM_INIT_ZEROS, 0.0f, false});
  };
  add_unit("stem.conv", "stem.bn", in_channels_, -1, -1);
  for (int64_t b = 0; b < options_.depth; ++b) {
    const std::string p = "block" + std::to_string(b);
    const int block_in = static_cast<int>(units_.size()) - 1;
    add_unit(p + ".conv1", p + ".bn1", width, block_in, -1);
    add_unit(p + ".conv2", p + ".bn2", width, block_in + 1, block_in);
  }
  specs_.push_back({"head.weight", {width, classes_}, MNT_PARAM_INIT_NORMAL,
                    static_cast<float>(std::sqrt(1.0 / width)), true});
  specs_.push_back({"head.bias", {classes_}, MNT_PARAM_INIT_ZEROS, 0.0f, false});

  // Activations: everything Backward reads, plus the gradient buffers.
  const size_t act = sdk::DTypeSize(precision_.activation_dtype);
  const double map = static_cast<double>(max_batch_) * width * height_ * width_px_;
  double planned = 0;
  auto reserve = [&](double elements) {
    planned += elements * act;
    return activations_.Reserve(static_cast<size_t>(elements) * act);
  };
  input_copy_ = reserve(static_cast<double>(max_batch_) * in_channels_ *
                        height_ * width_px_);
  for (Unit& u : units_) {
    u.z = reserve(map);
    u.u = reserve(map);
    u.a = reserve(map);
    u.da = reserve(map);
  }
  dz_ = reserve(map);
  pooled_ = reserve(static_cast<double>(max_batch_) * width);
  dpooled_ = reserve(static_cast<double>(max_batch_) * width);
  logits_ = reserve(static_cast<double>(max_batch_) * classes_);
  dlogits_ = reserve(static_cast<double>(max_batch_) * classes_);
  if (planned > kMaxActivationBytes) {
    return sdk::ResourceExhausted(sdk::Format(
        "cnn: activations for max_batch_size %lld would take %.3g bytes",
        static_cast<long long>(max_batch_), planned));
  }
  MNT_RETURN_IF_ERROR(activations_.Allocate(client_, MNT_MEMORY_ACTIVATIONS));

  // Workspace: fp32 batch-norm statistics, per-example losses, targets.
  const size_t stat = static_cast<size_t>(width) * 4;
  for (Unit& u : units_) {
    u.saved_mean = workspace_.Reserve(stat);
    u.saved_invstd = workspace_.Reserve(stat);
    u.running_mean = workspace_.Reserve(stat);
    u.running_var = workspace_.Reserve(stat);
  }
  losses_ = workspace_.Reserve(static_cast<size_t>(max_batch_) * 4);
  saved_targets_ = workspace_.Reserve(static_cast<size_t>(max_batch_) * 4);
  MNT_RETURN_IF_ERROR(workspace_.Allocate(client_, MNT_MEMORY_WORKSPACE));
  for (const Unit& u : units_) {
    MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
    MNT_FillParams one{MNT_FillParams_STRUCT_SIZE, 1.0};
    MNT_RETURN_IF_ERROR(
        client_.Run(MNT_OP_FILL, {}, {Stat(u.running_mean)}, &zero));
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_FILL, {}, {Stat(u.running_var)}, &one));
  }
  return Status::Ok();
}

MNT_Tensor CnnNetwork::Act(size_t handle, std::vector<int64_t> dims) const {
  return View(activations_.Data(handle), precision_.activation_dtype,
              std::move(dims));
}

MNT_Tensor CnnNetwork::Map(size_t handle, int64_t batch,
                           int64_t channels) const {
  return Act(handle, {batch, channels, height_, width_px_});
}

MNT_Tensor CnnNetwork::Stat(size_t handle) const {
  return View(workspace_.Data(handle), MNT_DTYPE_F32, {options_.width});
}

MNT_Conv2dParams CnnNetwork::ConvParams(bool accumulate) const {
  // 3x3, stride 1, "same" padding.
  return MNT_Conv2dParams{MNT_Conv2dParams_STRUCT_SIZE,  1, 1, 1, 1, 1, 1, 1,
                          precision_.matmul_compute, accumulate ? 1 : 0};
}

MNT_BatchNormParams CnnNetwork::BnParams(bool training, bool accumulate) const {
  return MNT_BatchNormParams{MNT_BatchNormParams_STRUCT_SIZE, training ? 1 : 0,
                             options_.bn_momentum, kBnEpsilon,
                             accumulate ? 1 : 0};
}

Status CnnNetwork::CheckParams(const char* call, const char* what,
                               const MNT_Tensor* tensors, size_t count,
                               MNT_DType dtype) const {
  const std::string context = std::string("cnn ") + call;
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
        context,
        std::string(what) + "[" + std::to_string(i) + "] " + specs_[i].name,
        &tensors[i], dtype, specs_[i].dims));
  }
  return Status::Ok();
}

Status CnnNetwork::Forward(const models::ForwardCall& call) {
  const MNT_Tensor* params = call.params;
  const size_t num_params = call.num_params;
  const MNT_Tensor* inputs = call.inputs;
  const MNT_Tensor* targets = call.targets;
  const bool training = call.training;
  const MNT_Tensor* loss_out = call.loss_out;
  const MNT_Tensor* correct_out = call.correct_out;
  saved_batch_ = 0;
  MNT_RETURN_IF_ERROR(CheckParams("Forward", "params", params, num_params,
                                  precision_.weight_dtype));
  if (inputs == nullptr || targets == nullptr) {
    return sdk::InvalidArgument("cnn Forward: inputs and targets are required");
  }
  const int64_t batch = inputs->rank >= 1 ? inputs->dims[0] : 0;
  if (batch < 1 || batch > max_batch_) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn Forward: batch of %lld images (inputs %s), expected 1..%lld",
        static_cast<long long>(batch), sdk::Describe(*inputs).c_str(),
        static_cast<long long>(max_batch_)));
  }
  if (training && batch < 2) {
    return sdk::InvalidArgument(
        "cnn Forward: training needs a batch of at least 2 images (batch "
        "norm statistics)");
  }
  std::vector<int64_t> input_shape = {batch};
  input_shape.insert(input_shape.end(), input_dims_.begin(), input_dims_.end());
  MNT_RETURN_IF_ERROR(models::CheckTensor("cnn Forward", "inputs", inputs,
                                          MNT_DTYPE_F32, input_shape));
  if (targets->rank == 2) {
    MNT_RETURN_IF_ERROR(models::CheckTensor("cnn Forward", "targets", targets,
                                            MNT_DTYPE_I32, {batch, 1}));
  } else {
    MNT_RETURN_IF_ERROR(models::CheckTensor("cnn Forward", "targets", targets,
                                            MNT_DTYPE_I32, {batch}));
  }
  MNT_RETURN_IF_ERROR(
      models::CheckScalar("cnn Forward", "loss_out", loss_out, MNT_DTYPE_F32));
  if (correct_out != nullptr) {
    MNT_RETURN_IF_ERROR(models::CheckScalar("cnn Forward", "correct_out",
                                            correct_out, MNT_DTYPE_F32));
  }

  const int64_t width = options_.width;
  // The conv reads its input in the activation dtype (as autocast casts it),
  // and Backward needs it after `inputs` is gone.
  const MNT_Tensor x = Map(input_copy_, batch, in_channels_);
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_CAST,
      {View(inputs->data, MNT_DTYPE_F32,
            {batch, in_channels_, height_, width_px_})},
      {x}));

  const MNT_Conv2dParams conv = ConvParams(false);
  const MNT_BatchNormParams bn = BnParams(training, false);
  MNT_ActivationParams relu{MNT_ActivationParams_STRUCT_SIZE,
                            MNT_ACTIVATION_RELU};
  MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  for (size_t j = 0; j < units_.size(); ++j) {
    const Unit& u = units_[j];
    const MNT_Tensor in =
        u.input < 0 ? x : Map(units_[u.input].a, batch, u.in_channels);
    const MNT_Tensor z = Map(u.z, batch, width);
    const MNT_Tensor un = Map(u.u, batch, width);
    MNT_RETURN_IF_ERROR(
        client_.Run(MNT_OP_CONV2D_FORWARD, {in, params[3 * j]}, {z}, &conv));
    std::vector<MNT_Tensor> bn_out = {un, Stat(u.running_mean),
                                      Stat(u.running_var)};
    if (training) {
      bn_out.push_back(Stat(u.saved_mean));
      bn_out.push_back(Stat(u.saved_invstd));
    }
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_BATCHNORM_FORWARD,
                                    {z, params[3 * j + 1], params[3 * j + 2]},
                                    bn_out, &bn));
    if (u.residual >= 0) {
      MNT_RETURN_IF_ERROR(client_.Run(
          MNT_OP_ADD, {un, Map(units_[u.residual].a, batch, width)}, {un},
          &add));
    }
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ACTIVATION_FORWARD, {un},
                                    {Map(u.a, batch, width)}, &relu));
  }

  // Global average pooling to [B, width, 1, 1], read as [B, width].
  const MNT_Pool2dParams gap{MNT_Pool2dParams_STRUCT_SIZE,
                             MNT_POOL_AVG,
                             static_cast<int32_t>(height_),
                             static_cast<int32_t>(width_px_),
                             1, 1, 0, 0, 1};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_POOL2D_FORWARD,
                                  {Map(units_.back().a, batch, width)},
                                  {Act(pooled_, {batch, width, 1, 1})}, &gap));
  MNT_GemmParams gemm{MNT_GemmParams_STRUCT_SIZE, 0, 0, 1.0f, 0.0f,
                      precision_.matmul_compute};
  const MNT_Tensor logits = Act(logits_, {batch, classes_});
  const size_t h = head_index();
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_GEMM, {Act(pooled_, {batch, width}), params[h], params[h + 1]},
      {logits}, &gemm));

  const MNT_Tensor target_view = View(targets->data, MNT_DTYPE_I32, {batch});
  const MNT_Tensor losses =
      View(workspace_.Data(losses_), MNT_DTYPE_F32, {batch});
  MNT_CrossEntropyParams ce{MNT_CrossEntropyParams_STRUCT_SIZE, 1.0f, classes_};
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_CROSS_ENTROPY, {logits, target_view}, {losses}, &ce));
  MNT_ReduceParams mean{MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_MEAN};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_REDUCE, {losses}, {*loss_out}, &mean));
  if (correct_out != nullptr) {
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_COUNT_CORRECT, {logits, target_view},
                                    {*correct_out}, &ce));
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

Status CnnNetwork::Backward(const models::BackwardCall& call) {
  const MNT_Tensor* params = call.params;
  const size_t num_params = call.num_params;
  const MNT_Tensor* grads = call.grads;
  const size_t num_grads = call.num_grads;
  const float loss_multiplier = call.loss_multiplier;
  const bool accumulate = call.accumulate;
  if (saved_batch_ == 0) {
    return sdk::FailedPrecondition(
        "cnn Backward: no training Forward to back-propagate (call Forward "
        "with training=1 first)");
  }
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "params", params, num_params,
                                  precision_.weight_dtype));
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "grads", grads, num_grads,
                                  precision_.gradient_dtype));
  if (!std::isfinite(loss_multiplier)) {
    return sdk::InvalidArgument(sdk::Format(
        "cnn Backward: loss_multiplier is %g, expected a finite number",
        static_cast<double>(loss_multiplier)));
  }
  const int64_t batch = saved_batch_, width = options_.width;
  const size_t h = head_index();

  // Head: dlogits = (softmax - onehot) * loss_multiplier / B.
  MNT_CrossEntropyParams ce{MNT_CrossEntropyParams_STRUCT_SIZE,
                            loss_multiplier / static_cast<float>(batch),
                            classes_};
  const MNT_Tensor dlogits = Act(dlogits_, {batch, classes_});
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_CROSS_ENTROPY,
      {Act(logits_, {batch, classes_}),
       View(workspace_.Data(saved_targets_), MNT_DTYPE_I32, {batch})},
      {View(workspace_.Data(losses_), MNT_DTYPE_F32, {batch}), dlogits}, &ce));
  MNT_GemmParams weight_grad{MNT_GemmParams_STRUCT_SIZE, 1, 0, 1.0f,
                             accumulate ? 1.0f : 0.0f,
                             precision_.matmul_compute};
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_GEMM, {Act(pooled_, {batch, width}), dlogits}, {grads[h]},
      &weight_grad));
  MNT_AccumulateParams bias_grad{MNT_AccumulateParams_STRUCT_SIZE,
                                 accumulate ? 1 : 0};
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_BIAS_GRAD, {dlogits}, {grads[h + 1]}, &bias_grad));
  MNT_GemmParams input_grad{MNT_GemmParams_STRUCT_SIZE, 0, 1, 1.0f, 0.0f,
                            precision_.matmul_compute};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_GEMM, {dlogits, params[h]},
                                  {Act(dpooled_, {batch, width})}, &input_grad));
  const MNT_Pool2dParams gap{MNT_Pool2dParams_STRUCT_SIZE,
                             MNT_POOL_AVG,
                             static_cast<int32_t>(height_),
                             static_cast<int32_t>(width_px_),
                             1, 1, 0, 0, 1};
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_POOL2D_BACKWARD,
      {Act(dpooled_, {batch, width, 1, 1}), Map(units_.back().a, batch, width)},
      {Map(units_.back().da, batch, width)}, &gap));

  // Units in reverse. A unit's da is complete when it is reached: only later
  // units read its output. The first contribution overwrites, later ones add.
  std::vector<bool> written(units_.size(), false);
  written.back() = true;
  const MNT_Conv2dParams conv_fresh = ConvParams(false);
  const MNT_Conv2dParams conv_acc = ConvParams(true);
  const MNT_Conv2dParams conv_grad = ConvParams(accumulate);
  const MNT_BatchNormParams bn = BnParams(true, accumulate);
  MNT_ActivationParams relu{MNT_ActivationParams_STRUCT_SIZE,
                            MNT_ACTIVATION_RELU};
  for (size_t jj = units_.size(); jj-- > 0;) {
    const Unit& u = units_[jj];
    const MNT_Tensor da = Map(u.da, batch, width);
    // du = relu'(u) * da, in place.
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ACTIVATION_BACKWARD,
                                    {Map(u.u, batch, width), da}, {da}, &relu));
    if (u.residual >= 0) {
      const MNT_Tensor dres = Map(units_[u.residual].da, batch, width);
      MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
      if (written[u.residual]) {
        MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ADD, {da, dres}, {dres}, &add));
      } else {
        MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_CAST, {da}, {dres}));
        written[u.residual] = true;
      }
    }
    const MNT_Tensor dz = Map(dz_, batch, width);
    MNT_RETURN_IF_ERROR(client_.Run(
        MNT_OP_BATCHNORM_BACKWARD,
        {da, Map(u.z, batch, width), params[3 * jj + 1], Stat(u.saved_mean),
         Stat(u.saved_invstd)},
        {dz, grads[3 * jj + 1], grads[3 * jj + 2]}, &bn));
    const MNT_Tensor in = u.input < 0
                              ? Map(input_copy_, batch, in_channels_)
                              : Map(units_[u.input].a, batch, u.in_channels);
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_CONV2D_BACKWARD_FILTER, {dz, in},
                                    {grads[3 * jj]}, &conv_grad));
    if (u.input < 0) continue;  // no gradient for the data
    const bool add = written[u.input];
    MNT_RETURN_IF_ERROR(client_.Run(
        MNT_OP_CONV2D_BACKWARD_DATA, {dz, params[3 * jj]},
        {Map(units_[u.input].da, batch, u.in_channels)},
        add ? &conv_acc : &conv_fresh));
    written[u.input] = true;
  }
  return Status::Ok();
}

}  // namespace mnt::cnn
