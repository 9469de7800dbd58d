#include "models/cnn/cnn_network.h"

#include <cmath>

#include "plugins/sdk/model/views.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cnn {
namespace {

using models::WeightLayout;
using sdk::Status;

constexpr float kBnEpsilon = 1e-5f;
constexpr int64_t kMaxSide = 1 << 14;
constexpr WeightLayout kHeadLayout = WeightLayout::kInOut;

// Every conv is 3x3, stride 1, "same" padding.
models::Conv2dSpec Same3x3() {
  models::Conv2dSpec s;
  s.pad_h = s.pad_w = 1;
  return s;
}

}  // namespace

Status CnnNetwork::Create(const MNT_Model_Create_Args& args,
                          std::unique_ptr<CnnNetwork>* out) {
  std::unique_ptr<CnnNetwork> net(new CnnNetwork());
  MNT_RETURN_IF_ERROR(net->Init(args));
  *out = std::move(net);
  return Status::Ok();
}

Status CnnNetwork::CheckData(const MNT_DataSpec& data) {
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
  return Status::Ok();
}

void CnnNetwork::AddUnit(const std::string& conv, const std::string& bn,
                         int64_t in_channels, int input, int residual,
                         std::vector<ParamSpec>* specs) {
  Unit u{};
  u.in_channels = in_channels;
  u.input = input;
  u.residual = residual;
  units_.push_back(u);
  const int64_t width = options_.width;
  const float he = static_cast<float>(std::sqrt(2.0 / (in_channels * 9)));
  specs->push_back({conv + ".weight", {width, in_channels, 3, 3},
                    MNT_PARAM_INIT_NORMAL, he, true});
  specs->push_back({bn + ".weight", {width}, MNT_PARAM_INIT_ONES, 0.0f, false});
  specs->push_back({bn + ".bias", {width}, MNT_PARAM_INIT_ZEROS, 0.0f, false});
}

Status CnnNetwork::Init(const MNT_Model_Create_Args& args) {
  MNT_RETURN_IF_ERROR(ParseCnnOptions(args.options, &options_));
  MNT_RETURN_IF_ERROR(models::CheckCreateArgs(
      {"cnn",
       {MNT_OP_CONV2D_FORWARD, MNT_OP_CONV2D_BACKWARD_DATA,
        MNT_OP_CONV2D_BACKWARD_FILTER, MNT_OP_BATCHNORM_FORWARD,
        MNT_OP_BATCHNORM_BACKWARD, MNT_OP_POOL2D_FORWARD,
        MNT_OP_POOL2D_BACKWARD, MNT_OP_GEMM, MNT_OP_CAST, MNT_OP_ADD,
        MNT_OP_FILL, MNT_OP_BIAS_GRAD, MNT_OP_ACTIVATION_FORWARD,
        MNT_OP_ACTIVATION_BACKWARD, MNT_OP_CROSS_ENTROPY, MNT_OP_REDUCE,
        MNT_OP_COUNT_CORRECT},
       " (ABI 1.3 conv ops needed)"},
      args, [this](const MNT_DataSpec& d) { return CheckData(d); }, &setup_));
  batch_norm_ = {options_.bn_momentum, kBnEpsilon};

  // Units and their parameters.
  const int64_t width = options_.width;
  std::vector<ParamSpec> specs;
  AddUnit("stem.conv", "stem.bn", in_channels_, -1, -1, &specs);
  for (int64_t b = 0; b < options_.depth; ++b) {
    const std::string p = "block" + std::to_string(b);
    const int block_in = static_cast<int>(units_.size()) - 1;
    AddUnit(p + ".conv1", p + ".bn1", width, block_in, -1, &specs);
    AddUnit(p + ".conv2", p + ".bn2", width, block_in + 1, block_in, &specs);
  }
  specs.push_back({"head.weight", {width, classes_}, MNT_PARAM_INIT_NORMAL,
                   static_cast<float>(std::sqrt(1.0 / width)), true, kHeadLayout});
  specs.push_back({"head.bias", {classes_}, MNT_PARAM_INIT_ZEROS, 0.0f, false});
  models::ExampleShape example;
  example.noun = "images";
  example.input_dims = input_dims_;
  example.min_training_batch = 2;
  example.min_training_batch_reason = "batch norm statistics";
  io_ = models::ModelIo("cnn", std::move(specs), example,
                        setup_.precision.weight_dtype,
                        setup_.precision.gradient_dtype, setup_.max_batch);

  PlanActivations();
  MNT_RETURN_IF_ERROR(models::AllocateActivations(setup_, &activations_));

  // Workspace: fp32 batch-norm statistics, per-example losses, targets.
  const double batch = static_cast<double>(setup_.max_batch);
  for (Unit& u : units_) {
    u.saved_mean = workspace_.Reserve(MNT_DTYPE_F32, width);
    u.saved_invstd = workspace_.Reserve(MNT_DTYPE_F32, width);
    u.running_mean = workspace_.Reserve(MNT_DTYPE_F32, width);
    u.running_var = workspace_.Reserve(MNT_DTYPE_F32, width);
  }
  losses_ = workspace_.Reserve(MNT_DTYPE_F32, batch);
  saved_targets_ = workspace_.Reserve(MNT_DTYPE_I32, batch);
  MNT_RETURN_IF_ERROR(workspace_.Allocate(setup_.client, MNT_MEMORY_WORKSPACE));
  for (const Unit& u : units_) {
    const models::BatchNormStats s = Stats(u);
    MNT_RETURN_IF_ERROR(setup_.ops.Fill(s.running_mean, 0.0));
    MNT_RETURN_IF_ERROR(setup_.ops.Fill(s.running_var, 1.0));
  }
  return Status::Ok();
}

// Everything Backward reads, plus the gradient buffers.
void CnnNetwork::PlanActivations() {
  const MNT_DType act = setup_.precision.activation_dtype;
  const double batch = static_cast<double>(setup_.max_batch);
  const double width = static_cast<double>(options_.width);
  const double map = batch * width * height_ * width_px_;
  models::DeviceArena& a = activations_;
  input_copy_ = a.Reserve(act, batch * in_channels_ * height_ * width_px_);
  for (Unit& u : units_) {
    u.z = a.Reserve(act, map);
    u.u = a.Reserve(act, map);
    u.a = a.Reserve(act, map);
    u.da = a.Reserve(act, map);
  }
  dz_ = a.Reserve(act, map);
  pooled_ = a.Reserve(act, batch * width);
  dpooled_ = a.Reserve(act, batch * width);
  logits_ = a.Reserve(act, batch * classes_);
  dlogits_ = a.Reserve(act, batch * classes_);
}

MNT_Tensor CnnNetwork::UnitInput(const Unit& u, int64_t batch) const {
  return u.input < 0 ? Map(input_copy_, batch, in_channels_)
                     : Map(units_[u.input].a, batch, u.in_channels);
}

models::BatchNormStats CnnNetwork::Stats(const Unit& u) const {
  const std::vector<int64_t> c = {options_.width};
  return {workspace_.View(u.running_mean, c), workspace_.View(u.running_var, c),
          workspace_.View(u.saved_mean, c), workspace_.View(u.saved_invstd, c)};
}

Status CnnNetwork::Forward(const models::ForwardCall& call) {
  saved_batch_ = 0;
  int64_t batch = 0;
  MNT_RETURN_IF_ERROR(io_.CheckForward(call, &batch));
  const models::Ops& ops = setup_.ops;
  const MNT_Tensor* p = call.params;
  const int64_t width = options_.width;
  const models::Conv2dSpec conv = Same3x3();

  // The conv reads its input in the activation dtype (as autocast casts it),
  // and Backward needs it after `inputs` is gone.
  MNT_RETURN_IF_ERROR(ops.Cast(
      models::View(call.inputs->data, MNT_DTYPE_F32,
                   {batch, in_channels_, height_, width_px_}),
      Map(input_copy_, batch, in_channels_)));
  for (size_t j = 0; j < units_.size(); ++j) {
    const Unit& u = units_[j];
    const MNT_Tensor z = Map(u.z, batch, width), un = Map(u.u, batch, width);
    MNT_RETURN_IF_ERROR(ops.Conv2d(UnitInput(u, batch), p[3 * j], z, conv));
    MNT_RETURN_IF_ERROR(ops.BatchNorm(z, p[3 * j + 1], p[3 * j + 2], un,
                                      Stats(u), batch_norm_, call.training));
    if (u.residual >= 0) {
      MNT_RETURN_IF_ERROR(
          ops.Add(un, Map(units_[u.residual].a, batch, width), un));
    }
    MNT_RETURN_IF_ERROR(
        ops.Activation(MNT_ACTIVATION_RELU, un, Map(u.a, batch, width)));
  }

  // Global average pooling to [B, width, 1, 1], read as [B, width].
  const size_t h = head_index();
  MNT_RETURN_IF_ERROR(
      ops.Pool2d(Map(units_.back().a, batch, width),
                 activations_.View(pooled_, {batch, width, 1, 1}),
                 models::Pool2dSpec::GlobalAverage(height_, width_px_)));
  const MNT_Tensor logits = activations_.View(logits_, {batch, classes_});
  MNT_RETURN_IF_ERROR(ops.Linear(activations_.View(pooled_, {batch, width}),
                                 p[h], p[h + 1], logits, kHeadLayout));

  const MNT_Tensor targets =
      models::View(call.targets->data, MNT_DTYPE_I32, {batch});
  MNT_RETURN_IF_ERROR(ops.CrossEntropyLoss(
      logits, targets, classes_, workspace_.View(losses_, {batch}),
      *call.loss_out, models::Optional(call.correct_out)));
  if (call.training) {
    MNT_RETURN_IF_ERROR(
        ops.Copy(targets, workspace_.View(saved_targets_, {batch})));
    saved_batch_ = batch;
  }
  return Status::Ok();
}

Status CnnNetwork::Backward(const models::BackwardCall& call) {
  MNT_RETURN_IF_ERROR(io_.CheckBackward(call, saved_batch_));
  const models::Ops& ops = setup_.ops;
  const MNT_Tensor* p = call.params;
  const MNT_Tensor* g = call.grads;
  const bool accumulate = call.accumulate;
  const int64_t batch = saved_batch_, width = options_.width;
  const size_t h = head_index();
  const models::Conv2dSpec conv = Same3x3();

  // Head: dlogits = (softmax - onehot) * loss_multiplier / B.
  const MNT_Tensor dlogits = activations_.View(dlogits_, {batch, classes_});
  MNT_RETURN_IF_ERROR(ops.CrossEntropyBackward(
      activations_.View(logits_, {batch, classes_}),
      workspace_.View(saved_targets_, {batch}), classes_,
      models::MeanLossGradScale(call.loss_multiplier, call.loss_multiplier_device, batch),
      workspace_.View(losses_, {batch}), dlogits));
  MNT_RETURN_IF_ERROR(ops.LinearBackward(
      activations_.View(pooled_, {batch, width}), p[h], dlogits, g[h], g[h + 1],
      activations_.View(dpooled_, {batch, width}), accumulate, kHeadLayout));
  // The head's weight and bias gradients are final (ABI 1.11 hand-over).
  call.ReadyWhole(static_cast<int64_t>(h));
  call.ReadyWhole(static_cast<int64_t>(h + 1));
  MNT_RETURN_IF_ERROR(
      ops.Pool2dBackward(activations_.View(dpooled_, {batch, width, 1, 1}),
                         Map(units_.back().a, batch, width),
                         Map(units_.back().da, batch, width),
                         models::Pool2dSpec::GlobalAverage(height_, width_px_)));

  // Units in reverse. A unit's da is complete when it is reached: only later
  // units read its output. The first contribution overwrites, later ones add.
  std::vector<bool> written(units_.size(), false);
  written.back() = true;
  for (size_t j = units_.size(); j-- > 0;) {
    const Unit& u = units_[j];
    const MNT_Tensor da = Map(u.da, batch, width);
    // du = relu'(u) * da, in place.
    MNT_RETURN_IF_ERROR(ops.ActivationBackward(
        MNT_ACTIVATION_RELU, Map(u.u, batch, width), da, da));
    if (u.residual >= 0) {
      const MNT_Tensor dres = Map(units_[u.residual].da, batch, width);
      MNT_RETURN_IF_ERROR(written[u.residual] ? ops.Add(da, dres, dres)
                                              : ops.Cast(da, dres));
      written[u.residual] = true;
    }
    const MNT_Tensor dz = Map(dz_, batch, width);
    MNT_RETURN_IF_ERROR(ops.BatchNormBackward(
        da, Map(u.z, batch, width), p[3 * j + 1], Stats(u), dz, g[3 * j + 1],
        g[3 * j + 2], batch_norm_, accumulate));
    call.ReadyWhole(static_cast<int64_t>(3 * j + 1));  // batch-norm scale
    call.ReadyWhole(static_cast<int64_t>(3 * j + 2));  // batch-norm shift
    MNT_RETURN_IF_ERROR(ops.Conv2dBackwardFilter(dz, UnitInput(u, batch),
                                                 g[3 * j], conv, accumulate));
    call.ReadyWhole(static_cast<int64_t>(3 * j));  // conv filter
    if (u.input < 0) continue;  // no gradient for the data
    MNT_RETURN_IF_ERROR(ops.Conv2dBackwardData(
        dz, p[3 * j], Map(units_[u.input].da, batch, u.in_channels), conv,
        written[u.input]));
    written[u.input] = true;
  }
  return Status::Ok();
}

}  // namespace mnt::cnn
