// An out-of-tree Mantissa model plugin on the SDK's model layer: "resmlp",
// a residual MLP classifier,
//
//   x [F] -> stem Linear [W] -> blocks x { h += fc2(GELU(fc1(LayerNorm(h)))) }
//     -> head Linear [classes], mean cross-entropy
//
// (F the flattened example, W `width`, fc1 W -> `hidden` -> fc2 -> W). It
// is written with the layer calls the built-in models use
// (plugins/sdk/model/ops.h: Linear and its two backward GEMMs, LayerNorm,
// GELU, the residual add, cross-entropy with the device loss multiplier),
// so it gets what they get without code of its own: FP8 GEMMs under
// --precision=fp8 (every Linear whose weight is a parameter matrix),
// fused GEMM epilogues where the backend has them, the gradient hand-over
// that lets data parallelism overlap the exchange with the backward, and
// gradient checkpointing (recompute.h). The entry points, their argument
// checks and the plugin's capabilities and declared data come from
// model_api.h.
//
// Options (--model_options): width=128, hidden=256, blocks=2,
// checkpointing=0|1 (--gradient_checkpointing sets it: only the residual
// stream is kept, each block is recomputed in the backward).
//
// Parameter names give --debug_overflow its layer names: "block0.fc1.weight"
// is layer "block0.fc1" (the name without its last part).
//
// Built against the SDK bundle only:
//   g++ -std=c++17 -O2 -Wall -Wextra -Werror -shared -fPIC
//       $(pkg-config --cflags mantissa) resmlp.cc -o mnt_model_resmlp.so
//       $(pkg-config --variable=plugin_ldflags mantissa)
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/model/create_args.h"
#include "plugins/sdk/model/device_arena.h"
#include "plugins/sdk/model/model_api.h"
#include "plugins/sdk/model/model_io.h"
#include "plugins/sdk/model/ops.h"
#include "plugins/sdk/model/param_spec.h"
#include "plugins/sdk/model/recompute.h"
#include "plugins/sdk/model/views.h"
#include "plugins/sdk/options.h"
#include "plugins/sdk/status.h"

namespace resmlp {

namespace models = mnt::models;
namespace sdk = mnt::sdk;
using models::DeviceArena;
using models::WeightLayout;
using sdk::Status;

// PyTorch's nn.Linear layout: W [out, in], y = x·Wᵀ + b.
constexpr WeightLayout kLayout = WeightLayout::kOutIn;
constexpr int64_t kMaxWidth = int64_t{1} << 16;

struct Options {
  int64_t width = 128;
  int64_t hidden = 256;
  int64_t blocks = 2;
  bool checkpointing = false;
};

Status ParseOptions(const char* text, Options* out) {
  constexpr const char* kContext = "resmlp options";
  sdk::Options opts;
  MNT_RETURN_IF_ERROR(sdk::Options::Parse(text, kContext, &opts));
  MNT_RETURN_IF_ERROR(
      opts.CheckKnown({"width", "hidden", "blocks", models::kCheckpointingOption}));
  Options o;
  struct Bounded {
    const char* key;
    int64_t* value;
    int64_t max;
  };
  for (const Bounded& b : {Bounded{"width", &o.width, kMaxWidth},
                           Bounded{"hidden", &o.hidden, kMaxWidth}, Bounded{"blocks", &o.blocks, 64}}) {
    long long v = *b.value;
    MNT_RETURN_IF_ERROR(opts.GetInt(b.key, &v));
    if (v < 1 || v > b.max) {
      return sdk::InvalidArgument(sdk::Format("%s: %s=%lld, expected 1..%lld", kContext, b.key, v,
                                              static_cast<long long>(b.max)));
    }
    *b.value = v;
  }
  MNT_RETURN_IF_ERROR(models::ReadCheckpointingOption(opts, kContext, &o.checkpointing));
  *out = o;
  return Status::Ok();
}

class ResMlp {
 public:
  // ABI 1.12: what it trains on. The trainer refuses other data, naming
  // these (--dataset=digits or idx).
  static constexpr int32_t kDataKinds[] = {MNT_DATA_KIND_FEATURES, MNT_DATA_KIND_IMAGES};

  static Status Create(const MNT_Model_Create_Args& args, std::unique_ptr<ResMlp>* out) {
    std::unique_ptr<ResMlp> net(new ResMlp());
    MNT_RETURN_IF_ERROR(net->Init(args));
    *out = std::move(net);
    return Status::Ok();
  }

  const std::vector<models::ParamSpec>& param_specs() const { return io_.param_specs(); }
  const models::ModelSetup& setup() const { return setup_; }
  Status Forward(const models::ForwardCall& call);
  Status Backward(const models::BackwardCall& call);

 private:
  // Parameter indices: the stem, six per block, the head.
  static constexpr int kStem = 0;
  int Block(int k) const { return 2 + 6 * k; }  // norm.w, norm.b, fc1.w, fc1.b, fc2.w, fc2.b
  int Head() const { return 2 + 6 * static_cast<int>(options_.blocks); }

  // One block's activations, as its backward reads them.
  struct BlockSlots {
    DeviceArena::Slot ln, mean, rstd;  // LayerNorm(h) and its statistics
    DeviceArena::Slot pre, act;        // fc1's output and its GELU
  };
  struct BlockViews {
    models::LayerNormOutput ln;
    MNT_Tensor pre, act;
  };

  Status Init(const MNT_Model_Create_Args& args);
  Status CheckData(const MNT_DataSpec& data);
  MNT_Tensor Rows(DeviceArena::Slot slot, int64_t batch, int64_t width) const {
    return activations_.View(slot, {batch, width});
  }
  BlockViews Views(int k, int64_t batch) const {
    const BlockSlots& s = sets_[recompute_.SetOf(k)];
    return {{Rows(s.ln, batch, options_.width), activations_.View(s.mean, {batch}),
             activations_.View(s.rstd, {batch})},
            Rows(s.pre, batch, options_.hidden),
            Rows(s.act, batch, options_.hidden)};
  }
  // Block k from the residual stream h[k]: what its backward reads, and
  // with `to_next` its output h[k + 1] = h[k] + fc2(GELU(fc1(LN(h[k])))).
  Status BlockForward(const MNT_Tensor* p, int k, int64_t batch, bool to_next);

  Options options_;
  models::ModelSetup setup_;
  models::ModelIo io_;
  int64_t features_ = 0, classes_ = 0;
  models::Recompute recompute_;

  DeviceArena activations_;
  DeviceArena::Slot input_;                 // the example, in the activation dtype
  std::vector<DeviceArena::Slot> residual_;  // h[0..blocks]
  std::vector<BlockSlots> sets_;            // per block, or one with checkpointing
  DeviceArena::Slot logits_, dlogits_, dh_, dln_, dpre_, scratch_;
  DeviceArena workspace_;
  DeviceArena::Slot losses_, targets_;  // fp32 per-example losses, the kept targets
  int64_t saved_batch_ = 0;             // rows of the last training Forward
};

Status ResMlp::CheckData(const MNT_DataSpec& data) {
  if (data.input_dtype != MNT_DTYPE_F32 || data.targets_per_example != 1) {
    return sdk::InvalidArgument(sdk::Format(
        "resmlp: takes f32 examples with one class each, got %s inputs with %d targets each",
        sdk::DTypeName(data.input_dtype), data.targets_per_example));
  }
  if (data.input_rank < 1 || data.input_rank > 3) {
    return sdk::InvalidArgument(
        sdk::Format("resmlp: input_rank is %d, expected 1 to 3", data.input_rank));
  }
  features_ = 1;
  for (int i = 0; i < data.input_rank; ++i) {
    if (data.input_dims[i] < 1 || data.input_dims[i] > kMaxWidth) {
      return sdk::InvalidArgument(sdk::Format("resmlp: input_dims[%d] is %lld", i,
                                              static_cast<long long>(data.input_dims[i])));
    }
    features_ *= data.input_dims[i];
  }
  if (features_ > kMaxWidth || data.num_classes < 2 || data.num_classes > kMaxWidth) {
    return sdk::InvalidArgument(sdk::Format(
        "resmlp: %lld features and %lld classes, expected at most %lld features and 2 to %lld "
        "classes",
        static_cast<long long>(features_), static_cast<long long>(data.num_classes),
        static_cast<long long>(kMaxWidth), static_cast<long long>(kMaxWidth)));
  }
  classes_ = data.num_classes;
  return Status::Ok();
}

Status ResMlp::Init(const MNT_Model_Create_Args& args) {
  MNT_RETURN_IF_ERROR(ParseOptions(args.options, &options_));
  MNT_RETURN_IF_ERROR(models::CheckCreateArgs(
      {"resmlp",
       {MNT_OP_GEMM, MNT_OP_CAST, MNT_OP_BIAS_GRAD, MNT_OP_ACTIVATION_FORWARD,
        MNT_OP_ACTIVATION_BACKWARD, MNT_OP_LAYERNORM_FORWARD, MNT_OP_LAYERNORM_BACKWARD,
        MNT_OP_ADD, MNT_OP_CROSS_ENTROPY, MNT_OP_REDUCE, MNT_OP_COUNT_CORRECT},
       "",
       // Fused forms the facade takes where the backend has them.
       {MNT_OP_GEMM_BIAS_GELU, MNT_OP_GEMM_DGELU, MNT_OP_GEMM_BIAS_GRAD,
        MNT_OP_RESIDUAL_LAYERNORM_BACKWARD}},
      args, [this](const MNT_DataSpec& d) { return CheckData(d); }, &setup_));

  const int64_t W = options_.width, H = options_.hidden;
  const auto normal = [](const std::string& name, std::vector<int64_t> dims, double std) {
    return models::ParamSpec{name, std::move(dims), MNT_PARAM_INIT_NORMAL,
                             static_cast<float>(std), true};
  };
  const auto constant = [](const std::string& name, int64_t n, MNT_ParamInit init) {
    return models::ParamSpec{name, {n}, init, 0.0f, false};
  };
  std::vector<models::ParamSpec> specs = {
      normal("stem.weight", {W, features_}, 1.0 / std::sqrt(double(features_))),
      constant("stem.bias", W, MNT_PARAM_INIT_ZEROS)};
  for (int k = 0; k < options_.blocks; ++k) {
    const std::string b = "block" + std::to_string(k);
    specs.push_back(constant(b + ".norm.weight", W, MNT_PARAM_INIT_ONES));
    specs.push_back(constant(b + ".norm.bias", W, MNT_PARAM_INIT_ZEROS));
    specs.push_back(normal(b + ".fc1.weight", {H, W}, 1.0 / std::sqrt(double(W))));
    specs.push_back(constant(b + ".fc1.bias", H, MNT_PARAM_INIT_ZEROS));
    // Each block starts near the identity (GPT-2's scaled residual init).
    specs.push_back(normal(b + ".fc2.weight", {W, H},
                           1.0 / std::sqrt(double(H) * 2.0 * double(options_.blocks))));
    specs.push_back(constant(b + ".fc2.bias", W, MNT_PARAM_INIT_ZEROS));
  }
  specs.push_back(normal("head.weight", {classes_, W}, 1.0 / std::sqrt(double(W))));
  specs.push_back(constant("head.bias", classes_, MNT_PARAM_INIT_ZEROS));
  models::ExampleShape example;
  example.noun = "examples";
  for (int i = 0; i < args.data_spec.input_rank; ++i) {
    example.input_dims.push_back(args.data_spec.input_dims[i]);
  }
  io_ = models::ModelIo("resmlp", std::move(specs), example, setup_.precision.weight_dtype,
                        setup_.precision.gradient_dtype, setup_.max_batch);

  // What the backward reads, sized for the largest batch, in one block in
  // the activation dtype (fp32 statistics): half the bytes in 16-bit.
  recompute_ = models::Recompute(options_.checkpointing, static_cast<int>(options_.blocks));
  const MNT_DType act = setup_.precision.activation_dtype;
  const double B = static_cast<double>(setup_.max_batch);
  DeviceArena& a = activations_;
  input_ = a.Reserve(act, B * features_);
  for (int k = 0; k <= options_.blocks; ++k) residual_.push_back(a.Reserve(act, B * W));
  for (int s = 0; s < recompute_.sets(); ++s) {
    sets_.push_back({a.Reserve(act, B * W), a.Reserve(MNT_DTYPE_F32, B),
                     a.Reserve(MNT_DTYPE_F32, B), a.Reserve(act, B * H), a.Reserve(act, B * H)});
  }
  logits_ = a.Reserve(act, B * classes_);
  dlogits_ = a.Reserve(act, B * classes_);
  dh_ = a.Reserve(act, B * W);
  dln_ = a.Reserve(act, B * W);
  dpre_ = a.Reserve(act, B * H);
  scratch_ = a.Reserve(act, B * W);
  MNT_RETURN_IF_ERROR(models::AllocateActivations(setup_, &activations_));
  losses_ = workspace_.Reserve(MNT_DTYPE_F32, B);
  targets_ = workspace_.Reserve(MNT_DTYPE_I32, B);
  return workspace_.Allocate(setup_.client, MNT_MEMORY_WORKSPACE);
}

Status ResMlp::BlockForward(const MNT_Tensor* p, int k, int64_t batch, bool to_next) {
  const models::Ops& ops = setup_.ops;
  const int i = Block(k);
  const BlockViews v = Views(k, batch);
  const MNT_Tensor h = Rows(residual_[k], batch, options_.width);
  MNT_RETURN_IF_ERROR(ops.LayerNorm(h, p[i], p[i + 1], v.ln));
  MNT_RETURN_IF_ERROR(ops.LinearGelu(v.ln.y, p[i + 2], p[i + 3], v.pre, v.act, kLayout));
  if (!to_next) return Status::Ok();
  const MNT_Tensor next = Rows(residual_[k + 1], batch, options_.width);
  MNT_RETURN_IF_ERROR(ops.Linear(v.act, p[i + 4], p[i + 5], next, kLayout));
  return ops.Add(h, next, next);  // the skip connection
}

Status ResMlp::Forward(const models::ForwardCall& call) {
  saved_batch_ = 0;  // this call overwrites what a Backward would read
  int64_t batch = 0;
  MNT_RETURN_IF_ERROR(io_.CheckForward(call, &batch));
  const models::Ops& ops = setup_.ops;
  const MNT_Tensor* p = call.params;
  // The GEMMs read the example in the activation dtype (as autocast casts it).
  const MNT_Tensor x = Rows(input_, batch, features_);
  MNT_RETURN_IF_ERROR(ops.Cast(models::View(call.inputs->data, MNT_DTYPE_F32, {batch, features_}), x));
  MNT_RETURN_IF_ERROR(ops.Linear(x, p[kStem], p[kStem + 1],
                                 Rows(residual_[0], batch, options_.width), kLayout));
  for (int k = 0; k < options_.blocks; ++k) {
    MNT_RETURN_IF_ERROR(BlockForward(p, k, batch, /*to_next=*/true));
  }
  const MNT_Tensor logits = Rows(logits_, batch, classes_);
  MNT_RETURN_IF_ERROR(ops.Linear(Rows(residual_[options_.blocks], batch, options_.width),
                                 p[Head()], p[Head() + 1], logits, kLayout));
  const MNT_Tensor targets = models::View(call.targets->data, MNT_DTYPE_I32, {batch});
  MNT_RETURN_IF_ERROR(ops.CrossEntropyLoss(logits, targets, classes_,
                                           workspace_.View(losses_, {batch}), *call.loss_out,
                                           models::Optional(call.correct_out)));
  if (call.training) {
    // The targets are only borrowed for this call; the backward needs them.
    MNT_RETURN_IF_ERROR(ops.Copy(targets, workspace_.View(targets_, {batch})));
    saved_batch_ = batch;
  }
  return Status::Ok();
}

Status ResMlp::Backward(const models::BackwardCall& call) {
  MNT_RETURN_IF_ERROR(io_.CheckBackward(call, saved_batch_));
  const models::Ops& ops = setup_.ops;
  const int64_t B = saved_batch_, W = options_.width;
  const MNT_Tensor* p = call.params;
  const MNT_Tensor* g = call.grads;
  const bool acc = call.accumulate;
  const MNT_Tensor dh = Rows(dh_, B, W);

  // dlogits = (softmax - onehot) · m / B, with the multiplier m on the host
  // or on the device (the trainer's loss scale, read by the kernel).
  const MNT_Tensor dlogits = Rows(dlogits_, B, classes_);
  MNT_RETURN_IF_ERROR(ops.CrossEntropyBackward(
      Rows(logits_, B, classes_), workspace_.View(targets_, {B}), classes_,
      models::MeanLossGradScale(call.loss_multiplier, call.loss_multiplier_device, B),
      workspace_.View(losses_, {B}), dlogits));
  MNT_RETURN_IF_ERROR(ops.LinearBackward(Rows(residual_[options_.blocks], B, W), p[Head()],
                                         dlogits, g[Head()], g[Head() + 1], dh, acc, kLayout));
  // ABI 1.11 hand-over: these gradients are final (a data-parallel trainer
  // starts exchanging them while the blocks' backward runs).
  call.ReadyWhole(Head());
  call.ReadyWhole(Head() + 1);

  for (int k = static_cast<int>(options_.blocks) - 1; k >= 0; --k) {
    // Checkpointing: this block's activations were overwritten by later
    // blocks' forwards; run its forward again from the kept h[k].
    MNT_RETURN_IF_ERROR(
        recompute_.Restore(k, [&] { return BlockForward(p, k, B, /*to_next=*/false); }));
    const int i = Block(k);
    const BlockViews v = Views(k, B);
    const MNT_Tensor dpre = Rows(dpre_, B, options_.hidden), dln = Rows(dln_, B, W);
    // dh holds dL/dh[k + 1]. fc2: its weight and bias gradients; then the
    // gradient of fc1's output through the GELU, with fc1's bias gradient.
    MNT_RETURN_IF_ERROR(
        ops.LinearBackward(v.act, p[i + 4], dh, g[i + 4], g[i + 5], std::nullopt, acc, kLayout));
    MNT_RETURN_IF_ERROR(
        ops.LinearBackwardThroughGelu(dh, p[i + 4], v.pre, dpre, g[i + 3], acc, kLayout));
    MNT_RETURN_IF_ERROR(
        ops.LinearBackward(v.ln.y, p[i + 2], dpre, g[i + 2], std::nullopt, dln, acc, kLayout));
    // dh += the norm's input gradient: dL/dh[k], skip path included.
    MNT_RETURN_IF_ERROR(ops.LayerNormBackwardAdd(dln, Rows(residual_[k], B, W), p[i], v.ln,
                                                 Rows(scratch_, B, W), dh, g[i], g[i + 1], acc));
    for (int j = i; j < i + 6; ++j) call.ReadyWhole(j);
  }
  MNT_RETURN_IF_ERROR(ops.LinearBackward(Rows(input_, B, features_), p[kStem], dh, g[kStem],
                                         g[kStem + 1], std::nullopt, acc, kLayout));
  call.ReadyWhole(kStem);
  call.ReadyWhole(kStem + 1);
  return Status::Ok();
}

constexpr char kName[] = "resmlp";
using Api = models::ModelApi<ResMlp, kName>;

const MNT_Plugin_Api* ResMlpPluginApi() {
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_MODEL, kName,
      "residual MLP on the SDK's model layer (options: width, hidden, blocks, checkpointing)",
      nullptr, nullptr, Api::Get(), nullptr, Api::Extensions());
  return &api;
}

}  // namespace resmlp

MNT_EXPORT_PLUGIN(resmlp::ResMlpPluginApi)
