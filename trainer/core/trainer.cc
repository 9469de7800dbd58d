#include "trainer/core/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/sdk/tensor.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/core/lr_schedule.h"
#include "trainer/core/param_init.h"

namespace mnt::trainer {

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

absl::Status FromSdk(const sdk::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

MNT_Tensor Scalar(const sdk::DeviceBuffer& b) {
  return sdk::MakeTensor(b.data(), MNT_DTYPE_F32, {1});
}

const char* CategoryName(MNT_MemoryCategory c) {
  switch (c) {
    case MNT_MEMORY_WEIGHTS: return "weights";
    case MNT_MEMORY_MASTER_WEIGHTS: return "master_weights";
    case MNT_MEMORY_GRADIENTS: return "gradients";
    case MNT_MEMORY_OPTIMIZER_STATE: return "optimizer_state";
    case MNT_MEMORY_ACTIVATIONS: return "activations";
    case MNT_MEMORY_WORKSPACE: return "workspace";
    case MNT_MEMORY_DATA: return "data";
    default: return "total";
  }
}

// The loss-scaler options string for the precision plugin; empty fields keep
// the plugin's defaults (GradScaler's for fp16).
std::string LossScaleOptions(const mantissa::LossScaleConfig& c) {
  std::vector<std::string> parts;
  // %.17g: the plugin must see exactly the value given (2^40 stays 2^40).
  if (!c.mode().empty()) parts.push_back(absl::StrCat("mode=", c.mode()));
  if (c.init_scale() > 0)
    parts.push_back(absl::StrFormat("init_scale=%.17g", c.init_scale()));
  if (c.growth_factor() > 0)
    parts.push_back(absl::StrFormat("growth_factor=%.17g", c.growth_factor()));
  if (c.backoff_factor() > 0)
    parts.push_back(absl::StrFormat("backoff_factor=%.17g", c.backoff_factor()));
  if (c.growth_interval() > 0)
    parts.push_back(absl::StrCat("growth_interval=", c.growth_interval()));
  return absl::StrJoin(parts, ",");
}

}  // namespace

absl::StatusOr<std::string> ResolveDevice(const std::string& device,
                                          PluginRegistry* registry) {
  if (device != "auto") return device;
  // cuda wins when its plugin is on the search path and sees a device.
  auto cuda = registry->Get(MNT_PLUGIN_KIND_BACKEND, "cuda");
  if (!cuda.ok()) return std::string("cpu");
  const MNT_Plugin_Api* api = (*cuda)->api;
  MNT_Backend_Create_Args a{};
  a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  MNT_Error* err = api->backend->Backend_Create(&a);
  if (err != nullptr) {
    api->Error_Destroy(err);
    return std::string("cpu");
  }
  MNT_Backend_Destroy_Args d{};
  d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
  d.backend = a.backend;
  api->Error_Destroy(api->backend->Backend_Destroy(&d));
  return std::string("cuda");
}

std::string ResolvePrecision(const std::string& precision,
                             const std::string& device) {
  if (precision != "auto") return precision;
  return device == "cpu" ? "fp32" : "bf16";
}

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(
    const mantissa::TrainConfig& config, PluginRegistry* registry,
    std::unique_ptr<BatchSource> train_data,
    std::unique_ptr<BatchSource> eval_data) {
  std::unique_ptr<Trainer> t(new Trainer());
  t->config_ = config;
  t->registry_ = registry;
  absl::Status s = t->Init(std::move(train_data), std::move(eval_data));
  if (!s.ok()) return s;
  return t;
}

Trainer::~Trainer() {
  // Device memory first (it belongs to the backend instance), then the model
  // and scaler, then the instance itself.
  params_.clear();
  inputs_.Reset(); targets_.Reset(); loss_.Reset(); correct_.Reset();
  found_inf_.Reset(); inv_scale_.Reset(); norm_sq_.Reset(); multiplier_.Reset();
  scale_.Reset(); growth_tracker_.Reset(); skipped_.Reset(); loss_micro_.Reset();
  if (model_ != nullptr) {
    MNT_Model_Destroy_Args a{};
    a.struct_size = MNT_Model_Destroy_Args_STRUCT_SIZE;
    a.model = model_;
    model_plugin_->Error_Destroy(model_plugin_->model->Model_Destroy(&a));
  }
  if (scaler_ != nullptr) {
    MNT_LossScaler_Destroy_Args a{};
    a.struct_size = MNT_LossScaler_Destroy_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    precision_plugin_->Error_Destroy(
        precision_plugin_->precision->LossScaler_Destroy(&a));
  }
  if (backend_ != nullptr) {
    MNT_Backend_Destroy_Args a{};
    a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    a.backend = backend_;
    backend_plugin_->Error_Destroy(backend_plugin_->backend->Backend_Destroy(&a));
  }
}

absl::Status Trainer::Backend(MNT_Op op, const std::vector<MNT_Tensor>& in,
                              const std::vector<MNT_Tensor>& out,
                              const void* params) {
  return FromSdk(client_.Run(op, in, out, params));
}

absl::Status Trainer::Init(std::unique_ptr<BatchSource> train_data,
                           std::unique_ptr<BatchSource> eval_data) {
  train_data_ = std::move(train_data);
  eval_data_ = std::move(eval_data);
  if (train_data_->size() < 1) {
    return absl::InvalidArgumentError("training set is empty");
  }

  // Plugins: device, precision, model.
  auto device = ResolveDevice(config_.device(), registry_);
  if (!device.ok()) return device.status();
  device_name_ = *device;
  precision_name_ = ResolvePrecision(config_.precision(), device_name_);

  auto backend = registry_->Get(MNT_PLUGIN_KIND_BACKEND, device_name_);
  if (!backend.ok()) return backend.status();
  backend_plugin_ = (*backend)->api;
  auto precision = registry_->Get(MNT_PLUGIN_KIND_PRECISION, precision_name_);
  if (!precision.ok()) return precision.status();
  precision_plugin_ = (*precision)->api;
  auto model = registry_->Get(MNT_PLUGIN_KIND_MODEL, config_.model());
  if (!model.ok()) return model.status();
  model_plugin_ = (*model)->api;

  {
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    a.options = config_.backend_options().c_str();
    MNT_Error* e = backend_plugin_->backend->Backend_Create(&a);
    if (e != nullptr) {
      absl::Status s = StatusFromPluginError(backend_plugin_, e);
      return absl::Status(s.code(), absl::StrCat("backend '", device_name_,
                                                 "': ", s.message()));
    }
    backend_ = a.backend;
    client_ = sdk::BackendClient(backend_plugin_, backend_);
    MNT_Backend_GetInfo_Args info{};
    info.struct_size = MNT_Backend_GetInfo_Args_STRUCT_SIZE;
    info.backend = backend_;
    if (absl::Status s = StatusFromPluginError(
            backend_plugin_, backend_plugin_->backend->Backend_GetInfo(&info));
        !s.ok()) {
      return s;
    }
    backend_description_ =
        absl::StrCat(device_name_, ": ", info.device_name ? info.device_name : "");
  }

  const MNT_Precision_Api* papi = precision_plugin_->precision;
  policy_.struct_size = MNT_Precision_GetPolicy_Args_STRUCT_SIZE;
  if (absl::Status s = StatusFromPluginError(precision_plugin_,
                                             papi->Precision_GetPolicy(&policy_));
      !s.ok()) {
    return s;
  }
  mixed_ = policy_.master_weight_dtype != MNT_DTYPE_INVALID;
  const bool adam = config_.optimizer().name() != "sgd";
  plan_.struct_size = MNT_Precision_GetMemoryPlan_Args_STRUCT_SIZE;
  plan_.optimizer_state_slots = adam ? 2 : 1;
  if (absl::Status s = StatusFromPluginError(
          precision_plugin_, papi->Precision_GetMemoryPlan(&plan_));
      !s.ok()) {
    return s;
  }
  {
    const std::string options = LossScaleOptions(config_.loss_scale());
    MNT_LossScaler_Create_Args a{};
    a.struct_size = MNT_LossScaler_Create_Args_STRUCT_SIZE;
    a.options = options.c_str();
    if (absl::Status s = StatusFromPluginError(precision_plugin_,
                                               papi->LossScaler_Create(&a));
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("precision '", precision_name_,
                                                 "' loss scaling: ", s.message()));
    }
    scaler_ = a.scaler;
    MNT_LossScaler_GetState_Args g{};
    g.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
    g.scaler = scaler_;
    g.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
    if (absl::Status s = StatusFromPluginError(precision_plugin_,
                                               papi->LossScaler_GetState(&g));
        !s.ok()) {
      return s;
    }
    // Scaling is active unless the scaler is the identity (mode=none).
    loss_scaling_ = !(policy_.loss_scaling == MNT_LOSS_SCALING_NONE &&
                      config_.loss_scale().mode().empty()) &&
                    config_.loss_scale().mode() != "none";
  }

  // The model, sized for one micro-batch.
  {
    MNT_Model_Create_Args a{};
    a.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
    a.options = config_.model_options().c_str();
    a.backend_plugin = backend_plugin_;
    a.backend = backend_;
    a.data_spec = train_data_->spec();
    a.precision.struct_size = MNT_ModelPrecision_STRUCT_SIZE;
    a.precision.weight_dtype = policy_.weight_dtype;
    a.precision.gradient_dtype = policy_.gradient_dtype;
    a.precision.activation_dtype = policy_.activation_dtype;
    a.precision.matmul_compute = policy_.matmul_compute;
    a.max_batch_size = config_.batch_size();
    if (absl::Status s = StatusFromPluginError(
            model_plugin_, model_plugin_->model->Model_Create(&a));
        !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("model '", config_.model(),
                                                 "': ", s.message()));
    }
    model_ = a.model;
  }
  if (absl::Status s = AllocateParameters(); !s.ok()) return s;

  // Batch buffers and device scalars.
  const size_t in_bytes = train_data_->InputBytesPerExample() * config_.batch_size();
  const size_t tgt_bytes = sizeof(int32_t) * config_.batch_size() *
                           std::max(1, train_data_->spec().targets_per_example);
  for (auto [buf, bytes] : {std::pair{&inputs_, in_bytes}, {&targets_, tgt_bytes}}) {
    if (auto s = FromSdk(client_.Allocate(bytes, MNT_MEMORY_DATA, buf)); !s.ok())
      return s;
  }
  for (sdk::DeviceBuffer* b : {&loss_, &correct_, &found_inf_, &inv_scale_,
                               &norm_sq_, &multiplier_}) {
    if (auto s = FromSdk(client_.Allocate(sizeof(float), MNT_MEMORY_DATA, b));
        !s.ok())
      return s;
  }
  sampler_ = std::make_unique<BatchSampler>(train_data_->size(), config_.seed());
  if (auto s = ResolveDeviceLossScaling(LossScaleOptions(config_.loss_scale())); !s.ok())
    return s;
  if (device_scaling_) {
    if (auto s = AllocateDeviceScaling(); !s.ok()) return s;
    return SyncScalerToDevice();
  }
  return absl::OkStatus();
}

absl::Status Trainer::AllocateParameters() {
  const MNT_Model_Api* m = model_plugin_->model;
  MNT_Model_GetParamCount_Args count{};
  count.struct_size = MNT_Model_GetParamCount_Args_STRUCT_SIZE;
  count.model = model_;
  if (auto s = StatusFromPluginError(model_plugin_, m->Model_GetParamCount(&count));
      !s.ok())
    return s;
  params_.resize(count.num_params);
  const bool adam = config_.optimizer().name() != "sgd";
  std::vector<float> host;
  for (int64_t i = 0; i < count.num_params; ++i) {
    MNT_Model_GetParamSpec_Args a{};
    a.struct_size = MNT_Model_GetParamSpec_Args_STRUCT_SIZE;
    a.model = model_;
    a.index = i;
    if (auto s = StatusFromPluginError(model_plugin_, m->Model_GetParamSpec(&a));
        !s.ok())
      return s;
    Param& p = params_[i];
    p.name = a.name ? a.name : absl::StrCat("param", i);
    p.dims.assign(a.dims, a.dims + a.rank);
    p.numel = 1;
    for (int64_t d : p.dims) p.numel *= d;
    p.init = a.init;
    p.init_scale = a.init_scale;
    p.weight_decay = a.weight_decay != 0;
    num_parameters_ += p.numel;

    const size_t n = static_cast<size_t>(p.numel);
    auto alloc = [&](sdk::DeviceBuffer* b, MNT_DType t, MNT_MemoryCategory c) {
      return FromSdk(client_.Allocate(n * sdk::DTypeSize(t), c, b));
    };
    absl::Status s = alloc(&p.weights, policy_.weight_dtype, MNT_MEMORY_WEIGHTS);
    if (s.ok()) s = alloc(&p.grads, policy_.gradient_dtype, MNT_MEMORY_GRADIENTS);
    if (s.ok() && mixed_) s = alloc(&p.master, MNT_DTYPE_F32, MNT_MEMORY_MASTER_WEIGHTS);
    if (s.ok() && mixed_) s = alloc(&p.master_grads, MNT_DTYPE_F32, MNT_MEMORY_GRADIENTS);
    if (s.ok()) s = alloc(&p.state1, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE);
    if (s.ok() && adam) s = alloc(&p.state2, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE);
    if (!s.ok()) return s;

    // Initial values drawn on the host in fp32, then rounded once into the
    // working dtype: every backend starts from the same bits.
    InitParameter(p.init, p.init_scale, config_.seed(), i, p.numel, &host);
    MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
    if (mixed_) {
      s = FromSdk(client_.ToDevice(p.master.data(), host.data(), n * 4));
    } else {
      s = FromSdk(client_.ToDevice(p.weights.data(), host.data(), n * 4));
    }
    if (s.ok()) s = Backend(MNT_OP_FILL, {}, {p.Tensor(p.state1, MNT_DTYPE_F32)}, &zero);
    if (s.ok() && adam)
      s = Backend(MNT_OP_FILL, {}, {p.Tensor(p.state2, MNT_DTYPE_F32)}, &zero);
    if (!s.ok()) return s;
  }
  return SyncWorkingWeights();
}

absl::Status Trainer::SyncWorkingWeights() {
  if (!mixed_) return absl::OkStatus();
  for (Param& p : params_) {
    if (auto s = Backend(MNT_OP_CAST, {p.Tensor(p.master, MNT_DTYPE_F32)},
                         {p.Tensor(p.weights, policy_.weight_dtype)});
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status Trainer::UploadBatch(const BatchSource& source,
                                  const std::vector<int64_t>& indices) {
  source.Gather(indices, &host_inputs_, &host_targets_);
  if (auto s = FromSdk(client_.ToDevice(inputs_.data(), host_inputs_.data(),
                                        host_inputs_.size()));
      !s.ok())
    return s;
  return FromSdk(client_.ToDevice(targets_.data(), host_targets_.data(),
                                  host_targets_.size() * sizeof(int32_t)));
}

absl::StatusOr<float> Trainer::ReadScalar(void* device_scalar) {
  float v = 0;
  if (auto s = FromSdk(client_.ToHost(&v, device_scalar, sizeof(v))); !s.ok())
    return s;
  return v;
}

absl::Status Trainer::WriteScalar(void* device_scalar, float value) {
  return FromSdk(client_.ToDevice(device_scalar, &value, sizeof(value)));
}

void Trainer::AddPhaseTime(const std::string& phase, double seconds) {
  for (PhaseTime& p : phases_) {
    if (p.phase == phase) {
      p.seconds += seconds;
      return;
    }
  }
  phases_.push_back({phase, seconds});
}

absl::Status Trainer::TrainStep(StepMetrics* metrics) {
  const int64_t accum = std::max<int64_t>(1, config_.grad_accum_steps());
  const int64_t batch = config_.batch_size();
  const MNT_Precision_Api* papi = precision_plugin_->precision;

  float scale = 1.0f;
  if (device_scaling_) {
    // Model_Backward takes the loss multiplier as a host float, so the
    // device scale is read once per step (cached when a report already
    // read it); nothing else in the step goes to the host.
    auto device_scale = DeviceLossScaleOnHost();
    if (!device_scale.ok()) return device_scale.status();
    scale = *device_scale;
  } else {
    MNT_LossScaler_GetState_Args st{};
    st.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
    st.scaler = scaler_;
    st.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
    if (auto s = StatusFromPluginError(precision_plugin_, papi->LossScaler_GetState(&st));
        !s.ok())
      return s;
    scale = loss_scaling_ ? st.state.scale : 1.0f;
  }
  metrics->loss_scale = scale;

  std::vector<MNT_Tensor> weights, grads;
  for (Param& p : params_) {
    weights.push_back(p.Tensor(p.weights, policy_.weight_dtype));
    grads.push_back(p.Tensor(p.grads, policy_.gradient_dtype));
  }
  const MNT_DataSpec spec = train_data_->spec();
  std::vector<int64_t> in_dims{batch};
  for (int i = 0; i < spec.input_rank; ++i) in_dims.push_back(spec.input_dims[i]);
  MNT_Tensor inputs = sdk::MakeTensor(inputs_.data(), spec.input_dtype,
                                      static_cast<int32_t>(in_dims.size()),
                                      in_dims.data());
  MNT_Tensor targets = sdk::MakeTensor(
      targets_.data(), MNT_DTYPE_I32,
      {batch, std::max<int64_t>(1, spec.targets_per_example)});
  MNT_Tensor loss = Scalar(loss_);

  double loss_sum = 0;
  for (int64_t micro = 0; micro < accum; ++micro) {
    auto t0 = Clock::now();
    if (auto s = UploadBatch(*train_data_, sampler_->NextBatch(batch)); !s.ok())
      return s;
    AddPhaseTime("data", Seconds(t0));

    t0 = Clock::now();
    MNT_Model_Forward_Args f{};
    f.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
    f.model = model_;
    f.params = weights.data();
    f.num_params = weights.size();
    f.inputs = &inputs;
    f.targets = &targets;
    f.training = 1;
    // Device path: each micro-batch's loss stays in its slot of loss_micro_
    // until a report reads them (and sums them in double, as below).
    MNT_Tensor micro_loss = sdk::MakeTensor(
        device_scaling_ ? static_cast<float*>(loss_micro_.data()) + micro : nullptr,
        MNT_DTYPE_F32, {1});
    f.loss_out = device_scaling_ ? &micro_loss : &loss;
    if (auto s = StatusFromPluginError(model_plugin_, model_plugin_->model->Model_Forward(&f));
        !s.ok())
      return absl::Status(s.code(), absl::StrCat("model forward: ", s.message()));
    if (!device_scaling_) {
      auto l = ReadScalar(loss_.data());
      if (!l.ok()) return l.status();
      if (!std::isfinite(*l) && !loss_scaling_) {
        return absl::InternalError(absl::StrFormat(
            "loss is %f in %s; stopping (lower --lr, or use fp16 with "
            "loss scaling to skip such steps)",
            *l, precision_name_));
      }
      loss_sum += *l;
    }
    AddPhaseTime("forward", Seconds(t0));

    t0 = Clock::now();
    MNT_Model_Backward_Args b{};
    b.struct_size = MNT_Model_Backward_Args_STRUCT_SIZE;
    b.model = model_;
    b.params = weights.data();
    b.num_params = weights.size();
    b.grads = grads.data();
    b.num_grads = grads.size();
    b.loss_multiplier = scale / static_cast<float>(accum);
    // fp32 grads accumulate in place; 16-bit grads are per micro-batch and
    // summed into the fp32 master gradients below.
    b.accumulate = (!mixed_ && micro > 0) ? 1 : 0;
    if (auto s = StatusFromPluginError(model_plugin_,
                                       model_plugin_->model->Model_Backward(&b));
        !s.ok())
      return absl::Status(s.code(), absl::StrCat("model backward: ", s.message()));
    if (mixed_) {
      MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
      for (Param& p : params_) {
        const MNT_Tensor g = p.Tensor(p.grads, policy_.gradient_dtype);
        const MNT_Tensor mg = p.Tensor(p.master_grads, MNT_DTYPE_F32);
        absl::Status s = micro == 0 ? Backend(MNT_OP_CAST, {g}, {mg})
                                    : Backend(MNT_OP_ADD, {g, mg}, {mg}, &add);
        if (!s.ok()) return s;
      }
    }
    AddPhaseTime("backward", Seconds(t0));
  }
  metrics->loss = loss_sum / static_cast<double>(accum);

  auto t0 = Clock::now();
  std::vector<MNT_Tensor> opt_grads;
  for (Param& p : params_) {
    opt_grads.push_back(mixed_ ? p.Tensor(p.master_grads, MNT_DTYPE_F32)
                               : p.Tensor(p.grads, policy_.gradient_dtype));
  }
  const double lr = LearningRate(
      {config_.schedule().kind(), config_.optimizer().lr(),
       config_.schedule().warmup_steps(), config_.steps(),
       config_.schedule().min_lr_ratio()},
      step_);
  metrics->lr = lr;
  if (device_scaling_) {
    // found_inf, the scale update, the norm and the clip factor stay on the
    // device; the optimizer ops skip on found_inf themselves.
    if (auto s = DeviceUnscaleUpdateAndClip(opt_grads); !s.ok()) return s;
    if (auto s = ApplyOptimizer(lr, /*device_skip=*/true); !s.ok()) return s;
    AddPhaseTime("optimizer", Seconds(t0));
    ++step_;
    return absl::OkStatus();
  }
  bool skip = false;
  if (loss_scaling_) {
    // Unscale in place and look for inf/NaN in one pass; 1/scale in fp64 then
    // fp32, as GradScaler does.
    MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
    if (auto s = Backend(MNT_OP_FILL, {}, {Scalar(found_inf_)}, &zero); !s.ok()) return s;
    if (auto s = WriteScalar(inv_scale_.data(),
                             static_cast<float>(1.0 / static_cast<double>(scale)));
        !s.ok())
      return s;
    std::vector<MNT_Tensor> in{Scalar(inv_scale_)}, out{Scalar(found_inf_)};
    in.insert(in.end(), opt_grads.begin(), opt_grads.end());
    out.insert(out.end(), opt_grads.begin(), opt_grads.end());
    if (auto s = Backend(MNT_OP_NONFINITE_CHECK_UNSCALE, in, out); !s.ok()) return s;
    auto found = ReadScalar(found_inf_.data());
    if (!found.ok()) return found.status();
    MNT_LossScaler_Update_Args u{};
    u.struct_size = MNT_LossScaler_Update_Args_STRUCT_SIZE;
    u.scaler = scaler_;
    u.found_inf = *found != 0.0f ? 1 : 0;
    if (auto s = StatusFromPluginError(precision_plugin_, papi->LossScaler_Update(&u));
        !s.ok())
      return s;
    skip = u.skip_step != 0;
  }
  metrics->skipped = skip;
  if (!skip) {
    if (auto s = Backend(MNT_OP_GLOBAL_NORM_SQUARED, opt_grads, {Scalar(norm_sq_)});
        !s.ok())
      return s;
    auto norm_sq = ReadScalar(norm_sq_.data());
    if (!norm_sq.ok()) return norm_sq.status();
    const double norm = std::sqrt(static_cast<double>(*norm_sq));
    metrics->grad_norm = norm;
    // torch.nn.utils.clip_grad_norm_: max_norm / (norm + 1e-6), with the
    // formula (and fp32 max_norm) the device path's CLIP_COEFFICIENT uses.
    const float multiplier = ClipCoefficient(
        *norm_sq, static_cast<float>(config_.clip_grad_norm()), false);
    if (auto s = WriteScalar(multiplier_.data(), multiplier); !s.ok()) return s;
    if (auto s = ApplyOptimizer(lr, /*device_skip=*/false); !s.ok()) return s;
    ++applied_steps_;
  }
  AddPhaseTime("optimizer", Seconds(t0));
  ++step_;
  return absl::OkStatus();
}

absl::Status Trainer::ApplyOptimizer(double lr, bool device_skip) {
  const mantissa::OptimizerConfig& o = config_.optimizer();
  const bool adam = o.name() != "sgd";
  for (Param& p : params_) {
    const MNT_Tensor grad = mixed_ ? p.Tensor(p.master_grads, MNT_DTYPE_F32)
                                   : p.Tensor(p.grads, policy_.gradient_dtype);
    // Without a master copy the working weights are the fp32 master.
    const MNT_Tensor master = mixed_ ? p.Tensor(p.master, MNT_DTYPE_F32)
                                     : p.Tensor(p.weights, MNT_DTYPE_F32);
    // Host path: an empty found_inf slot (skipping was decided on the host);
    // device path: the kernels skip on found_inf themselves.
    MNT_Tensor found_inf = device_skip ? Scalar(found_inf_)
                                       : sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {0});
    std::vector<MNT_Tensor> in{grad, found_inf, Scalar(multiplier_)};
    if (adam && adam_step_counters_) {
      in.push_back(sdk::MakeTensor(p.step_counter.data(), MNT_DTYPE_I32, {1}));
    }
    std::vector<MNT_Tensor> out{master, p.Tensor(p.state1, MNT_DTYPE_F32)};
    const float wd = p.weight_decay ? static_cast<float>(o.weight_decay()) : 0.0f;
    absl::Status s;
    if (adam) {
      out.push_back(p.Tensor(p.state2, MNT_DTYPE_F32));
      if (mixed_) out.push_back(p.Tensor(p.weights, policy_.weight_dtype));
      MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE,
                        static_cast<float>(lr),
                        static_cast<float>(o.beta1()),
                        static_cast<float>(o.beta2()),
                        static_cast<float>(o.eps()),
                        wd,
                        applied_steps_ + 1};
      s = Backend(MNT_OP_ADAMW_STEP, in, out, &a);
    } else {
      if (mixed_) out.push_back(p.Tensor(p.weights, policy_.weight_dtype));
      MNT_SgdParams a{MNT_SgdParams_STRUCT_SIZE, static_cast<float>(lr),
                      static_cast<float>(o.momentum()), wd, o.nesterov() ? 1 : 0};
      s = Backend(MNT_OP_SGD_STEP, in, out, &a);
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status Trainer::Train(MetricsSink* sink) {
  return TrainUntil(config_.steps(), sink);
}

absl::Status Trainer::TrainUntil(int64_t last_step, MetricsSink* sink) {
  const int64_t total = config_.steps();
  last_step = std::min(last_step, total);
  const auto start = Clock::now();
  int64_t samples = 0;
  double sps_window_start = Seconds(start);
  int64_t sps_window_samples = 0;
  while (step_ < last_step) {
    StepMetrics m;
    if (auto s = TrainStep(&m); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("step ", step_ + 1, ": ", s.message()));
    }
    samples += config_.batch_size() * std::max<int64_t>(1, config_.grad_accum_steps());
    sps_window_samples +=
        config_.batch_size() * std::max<int64_t>(1, config_.grad_accum_steps());
    m.step = step_;
    m.total_steps = total;
    m.elapsed_seconds = Seconds(start);
    const double window = m.elapsed_seconds - sps_window_start;
    m.samples_per_second = window > 0 ? sps_window_samples / window : 0;
    m.tokens_per_second = TokensPerSecond(m.samples_per_second);
    if (window > 1.0) {
      sps_window_start = m.elapsed_seconds;
      sps_window_samples = 0;
    }
    const bool wanted = sink != nullptr && sink->NeedsStepMetrics(step_, total);
    if (device_scaling_) {
      // Reading the device scalars is a sync: only for steps a sink reports.
      if (wanted) {
        if (auto s = FillDeviceStepMetrics(&m); !s.ok()) return s;
        sink->OnStep(m);
      }
    } else {
      MNT_LossScaler_GetState_Args st{};
      st.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
      st.scaler = scaler_;
      st.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
      if (auto s = StatusFromPluginError(
              precision_plugin_, precision_plugin_->precision->LossScaler_GetState(&st));
          !s.ok())
        return s;
      m.skipped_steps = st.state.skipped_steps;
      if (sink) sink->OnStep(m);
    }

    const bool last = step_ == last_step;
    if ((config_.eval_every() > 0 && step_ % config_.eval_every() == 0) || last) {
      auto t0 = Clock::now();
      auto eval = Evaluate();
      if (!eval.ok()) return eval.status();
      AddPhaseTime("eval", Seconds(t0));
      if (sink) sink->OnEval(*eval);
    }
    if (!config_.checkpoint_dir().empty() &&
        ((config_.checkpoint_every() > 0 && step_ % config_.checkpoint_every() == 0) ||
         last)) {
      auto t0 = Clock::now();
      const std::string path = LatestCheckpointPath(config_.checkpoint_dir());
      if (auto s = SaveCheckpoint(path); !s.ok()) return s;
      AddPhaseTime("checkpoint", Seconds(t0));
      if (sink) sink->OnMessage(absl::StrCat("checkpoint: ", path, " (step ", step_, ")"));
    }
  }
  const double secs = Seconds(start);
  samples_per_second_ = secs > 0 ? samples / secs : 0;
  // The plugin's scaler is the truth for the report and later checkpoints.
  if (device_scaling_) return SyncScalerToPlugin();
  return absl::OkStatus();
}

absl::StatusOr<EvalMetrics> Trainer::Evaluate() {
  BatchSource* source = eval_data_ ? eval_data_.get() : train_data_.get();
  const int64_t batch = config_.batch_size();
  int64_t n = source->size();
  if (config_.eval_batches() > 0) n = std::min(n, config_.eval_batches() * batch);
  std::vector<MNT_Tensor> weights;
  for (Param& p : params_) weights.push_back(p.Tensor(p.weights, policy_.weight_dtype));
  const MNT_DataSpec spec = source->spec();
  const int64_t tpe = std::max<int64_t>(1, spec.targets_per_example);
  double loss_sum = 0, correct = 0;
  std::vector<int64_t> indices;
  for (int64_t begin = 0; begin < n; begin += batch) {
    const int64_t b = std::min(batch, n - begin);
    indices.resize(b);
    for (int64_t i = 0; i < b; ++i) indices[i] = begin + i;
    if (auto s = UploadBatch(*source, indices); !s.ok()) return s;
    std::vector<int64_t> in_dims{b};
    for (int i = 0; i < spec.input_rank; ++i) in_dims.push_back(spec.input_dims[i]);
    MNT_Tensor inputs = sdk::MakeTensor(inputs_.data(), spec.input_dtype,
                                        static_cast<int32_t>(in_dims.size()),
                                        in_dims.data());
    MNT_Tensor targets = sdk::MakeTensor(targets_.data(), MNT_DTYPE_I32, {b, tpe});
    MNT_Tensor loss = Scalar(loss_), corr = Scalar(correct_);
    MNT_Model_Forward_Args f{};
    f.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
    f.model = model_;
    f.params = weights.data();
    f.num_params = weights.size();
    f.inputs = &inputs;
    f.targets = &targets;
    f.training = 0;
    f.loss_out = &loss;
    f.correct_out = &corr;
    if (auto s = StatusFromPluginError(model_plugin_,
                                       model_plugin_->model->Model_Forward(&f));
        !s.ok())
      return absl::Status(s.code(), absl::StrCat("evaluation: ", s.message()));
    auto l = ReadScalar(loss_.data());
    if (!l.ok()) return l.status();
    auto c = ReadScalar(correct_.data());
    if (!c.ok()) return c.status();
    loss_sum += static_cast<double>(*l) * b;
    correct += *c;
  }
  EvalMetrics m;
  m.step = step_;
  m.examples = n;
  m.loss = n > 0 ? loss_sum / n : 0;
  m.accuracy = n > 0 ? correct / static_cast<double>(n * tpe) : 0;
  last_eval_ = m;
  has_eval_ = true;
  return m;
}

FinalReport Trainer::Report() const {
  FinalReport r;
  r.backend = backend_description_;
  r.precision = precision_name_;
  r.model = config_.model();
  r.num_parameters = num_parameters_;
  r.bytes_weights = plan_.bytes_weights;
  r.bytes_master_weights = plan_.bytes_master_weights;
  r.bytes_gradients = plan_.bytes_gradients;
  r.bytes_master_gradients = plan_.bytes_master_gradients;
  r.bytes_optimizer_state = plan_.bytes_optimizer_state;
  for (int c = 0; c < MNT_MEMORY_CATEGORY_COUNT; ++c) {
    MemoryLine line;
    line.category = CategoryName(static_cast<MNT_MemoryCategory>(c));
    (void)client_.GetStats(static_cast<MNT_MemoryCategory>(c), &line.current_bytes,
                           &line.peak_bytes);
    r.memory.push_back(line);
  }
  MemoryLine total;
  total.category = "total";
  (void)client_.GetStats(MNT_MEMORY_ALL, &total.current_bytes, &total.peak_bytes);
  r.memory.push_back(total);
  r.phases = phases_;
  r.steps = step_;
  MNT_LossScaler_GetState_Args st{};
  st.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
  st.scaler = scaler_;
  st.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
  MNT_Error* e = precision_plugin_->precision->LossScaler_GetState(&st);
  if (e == nullptr) {
    r.skipped_steps = st.state.skipped_steps;
    r.final_loss_scale = loss_scaling_ ? st.state.scale : 1.0;
  } else {
    precision_plugin_->Error_Destroy(e);
  }
  r.samples_per_second = samples_per_second_;
  r.tokens_per_second = TokensPerSecond(samples_per_second_);
  r.last_eval = last_eval_;
  r.has_eval = has_eval_;
  return r;
}

}  // namespace mnt::trainer
