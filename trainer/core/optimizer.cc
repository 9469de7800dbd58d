#include "trainer/core/optimizer.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainer/core/device_scalars.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

// How the optimizers see a parameter: its dims and its stacked copies.
ParamShape ShapeOf(const Param& p) { return {p.dims, p.stacked_dims, p.role}; }

// Takes AdamW's optional inputs (step counter, device lr) and its
// bias-correction step: adamw, adam, adamw8bit and adafactor.
bool IsAdam(const mantissa::OptimizerConfig& config) {
  return config.name() != "sgd";
}

// The op of a memory-light optimizer, MNT_OP_INVALID for the others.
MNT_Op OwnStateOp(const mantissa::OptimizerConfig& config) {
  if (config.name() == "adamw8bit") return MNT_OP_ADAMW8BIT_STEP;
  if (config.name() == "adafactor") return MNT_OP_ADAFACTOR_STEP;
  return MNT_OP_INVALID;
}

}  // namespace

int Optimizer::StateSlots(const mantissa::OptimizerConfig& config) {
  if (KeepsOwnState(config)) return 0;
  return IsAdam(config) ? 2 : 1;
}

absl::Status Optimizer::CheckBackend(const mantissa::OptimizerConfig& config,
                                     const sdk::BackendInstance& backend) {
  const MNT_Op op = OwnStateOp(config);
  if (op == MNT_OP_INVALID || backend.Supports(op)) return absl::OkStatus();
  const MNT_Api_Version& v = backend.plugin()->abi_version;
  return absl::FailedPreconditionError(absl::StrCat(
      "--optimizer=", config.name(), " needs the backend op ",
      op == MNT_OP_ADAMW8BIT_STEP ? "ADAMW8BIT_STEP" : "ADAFACTOR_STEP",
      " (ABI 1.12); backend ", backend.plugin()->name, " (ABI ", v.major_version, ".",
      v.minor_version, ") does not support it; use --optimizer=adamw"));
}

bool Optimizer::UsesMultiTensor(const mantissa::OptimizerConfig& config,
                                const sdk::BackendInstance& backend) {
  if (config.multi_tensor_optimizer() == "off") return false;
  // Ops (ABI 1.6, 1.14): Backend_GetOpSupport says, whatever the backend's
  // minor. adamw8bit's tables are its 8-bit tensors and its small ones
  // (fp32 moments): both forms, or one op per tensor.
  if (config.name() == "adamw8bit") {
    return backend.Supports(MNT_OP_MULTI_ADAMW8BIT_STEP) &&
           backend.Supports(MNT_OP_MULTI_ADAMW_STEP);
  }
  if (config.name() == "adafactor") return backend.Supports(MNT_OP_MULTI_ADAFACTOR_STEP);
  if (KeepsOwnState(config)) return false;
  return backend.Supports(IsAdam(config) ? MNT_OP_MULTI_ADAMW_STEP : MNT_OP_MULTI_SGD_STEP);
}

bool Optimizer::TakesDeviceLr(const sdk::BackendInstance& backend) {
  return sdk::HasCapability(backend.plugin(), MNT_CAPABILITY_OPTIMIZER_DEVICE_LR);
}

absl::Status Optimizer::CheckStochasticRounding(const mantissa::OptimizerConfig& config,
                                                 const sdk::BackendInstance& backend,
                                                 bool mixed, MNT_DType weight_dtype,
                                                 const std::string& precision_name,
                                                 bool splits_parameters) {
  if (!config.stochastic_rounding()) return absl::OkStatus();
  if (!mixed || weight_dtype != MNT_DTYPE_BF16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--stochastic_rounding needs bf16 working weights written from fp32 masters "
        "(--precision=bf16); precision ", precision_name, " keeps ",
        sdk::DTypeName(weight_dtype), " weights", mixed ? "" : " without a master copy"));
  }
  if (!sdk::HasCapability(backend.plugin(), MNT_CAPABILITY_STOCHASTIC_ROUNDING)) {
    const MNT_Api_Version& v = backend.plugin()->abi_version;
    return absl::FailedPreconditionError(absl::StrCat(
        "--stochastic_rounding needs a backend that offers stochastic rounding (capability "
        "STOCHASTIC_ROUNDING, ABI 1.7); backend ",
        backend.plugin()->name, " (ABI ", v.major_version, ".", v.minor_version,
        ") does not",
        sdk::RebuiltSourceHint(backend.plugin(), MNT_CAPABILITY_STOCHASTIC_ROUNDING)));
  }
  if (splits_parameters &&
      !sdk::HasCapability(backend.plugin(), MNT_CAPABILITY_OPTIMIZER_PIECES)) {
    const MNT_Api_Version& v = backend.plugin()->abi_version;
    return absl::FailedPreconditionError(absl::StrCat(
        "--stochastic_rounding with --zero_stage=1 steps parts of parameters and needs a "
        "backend that keys their random bits by their place in the parameter (capability "
        "OPTIMIZER_PIECES, ABI 1.11); backend ",
        backend.plugin()->name, " (ABI ", v.major_version, ".", v.minor_version,
        ") does not; use --zero_stage=0"));
  }
  return absl::OkStatus();
}

// A fixed odd constant keeps the rounding bits' stream apart from the
// initial weights' (which splitmix64 draws from the run's seed itself).
uint64_t Optimizer::RoundingSeedFor(uint64_t run_seed) {
  return run_seed ^ 0x5d588b656c078965ull;
}

Optimizer::Optimizer(const mantissa::OptimizerConfig& config,
                     ParameterStore* params, const sdk::BackendClient& client,
                     bool skips_on_device, bool multi_tensor, bool device_lr)
    : config_(config),
      adam_(IsAdam(config)),
      params_(params),
      client_(client),
      skips_on_device_(skips_on_device),
      device_step_counters_(skips_on_device && IsAdam(config) &&
                            !params->params().empty()),
      multi_tensor_(multi_tensor && !params->params().empty()),
      device_lr_(device_lr) {
  // One entry per tensor the step updates: every parameter, or (ZeRO-1)
  // the pieces of this rank's share, each keyed for stochastic rounding by
  // its parameter and its first element there.
  for (const ParamPiece& piece : params->steps()) {
    const Param& p = params->params()[piece.param];
    weight_decays_.push_back(p.weight_decay ? static_cast<float>(config.weight_decay()) : 0.0f);
    rounding_tensors_.push_back(piece.param);
    rounding_elements_.push_back(piece.first);
    // Adafactor's pieces are whole parameters (config.cc refuses ZeRO-1).
    const ParamShape shape = ShapeOf(p);
    first_counter_.push_back(counters_);
    copies_.push_back(config.name() == "adafactor" ? shape.copies() : 1);
    counters_ += static_cast<size_t>(copies_.back());
  }
}

absl::StatusOr<std::unique_ptr<Optimizer>> Optimizer::Create(
    const mantissa::OptimizerConfig& config, ParameterStore* params,
    const sdk::BackendClient& client, bool skips_on_device, bool multi_tensor,
    bool device_lr) {
  std::unique_ptr<Optimizer> o(
      new Optimizer(config, params, client, skips_on_device, multi_tensor, device_lr));
  if (device_lr) {
    if (auto s = sdk::ToAbsl(client.Allocate(sizeof(float), MNT_MEMORY_DATA, &o->lr_)); !s.ok())
      return s;
  }
  if (KeepsOwnState(config)) {
    std::vector<ParamShape> shapes;
    for (const Param& p : params->params()) shapes.push_back(ShapeOf(p));
    auto state = OptimizerState::Create(config, shapes, params->steps(), client);
    if (!state.ok()) return state.status();
    o->own_state_ = std::move(*state);
    if (o->multi_tensor_) o->BuildOwnStateTables();
  }
  if (!o->device_step_counters_) return o;
  o->step_counters_.resize(o->counters_);
  for (sdk::DeviceBuffer& counter : o->step_counters_) {
    if (auto s = sdk::ToAbsl(
            client.Allocate(sizeof(int32_t), MNT_MEMORY_OPTIMIZER_STATE, &counter));
        !s.ok())
      return s;
  }
  return o;
}

absl::Status Optimizer::SetLearningRate(double lr) {
  if (!device_lr_) return absl::OkStatus();
  return WriteScalar<float>(client_, lr_.data(), static_cast<float>(lr));
}

float Optimizer::ParamsLr(double lr) const {
  return static_cast<float>(device_lr_ ? config_.lr() : lr);
}

int64_t Optimizer::ParamsStep() const {
  return device_step_counters_ ? 1 : applied_steps_ + 1;
}

MNT_Tensor Optimizer::LrInput() const { return F32Scalar(lr_); }

sdk::Status Optimizer::MultiTensorStep(float lr, const MNT_Tensor& found_inf,
                                       const MNT_Tensor& multiplier, int64_t train_step) {
  // The operands in the single-tensor loop's order, with absent ones as
  // NULL tensors so every tensor keeps its fixed stride.
  const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  std::vector<MNT_Tensor> in{found_inf, multiplier}, out;
  const std::vector<ParamPiece>& pieces = params_->steps();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ParamPiece& piece = pieces[i];
    in.push_back(params_->PieceGrad(piece));
    if (adam_) in.push_back(device_step_counters_ ? StepCounter(i, 0) : absent);
    out.push_back(params_->PieceMaster(piece));
    out.push_back(params_->PieceState(piece, 0));
    if (adam_) out.push_back(params_->PieceState(piece, 1));
    out.push_back(params_->mixed() ? params_->PieceWorking(piece) : absent);
  }
  if (device_lr_) in.push_back(LrInput());  // ABI 1.7: the last input
  const int64_t n = static_cast<int64_t>(weight_decays_.size());
  if (adam_) {
    const MNT_MultiAdamWParams a{MNT_MultiAdamWParams_STRUCT_SIZE,
                                 ParamsLr(lr),
                                 static_cast<float>(config_.beta1()),
                                 static_cast<float>(config_.beta2()),
                                 static_cast<float>(config_.eps()),
                                 0.0f,
                                 ParamsStep(),
                                 n,
                                 nullptr,
                                 weight_decays_.data(),
                                 rounding(),
                                 rounding_seed_,
                                 /*rounding_tensor=*/0,
                                 rounding_tensors_.data(),
                                 rounding_elements_.data()};
    return client_.Run(MNT_OP_MULTI_ADAMW_STEP, in, out, &a);
  }
  const MNT_MultiSgdParams a{MNT_MultiSgdParams_STRUCT_SIZE,
                             ParamsLr(lr),
                             static_cast<float>(config_.momentum()),
                             0.0f,
                             config_.nesterov() ? 1 : 0,
                             n,
                             nullptr,
                             weight_decays_.data(),
                             rounding(),
                             rounding_seed_,
                             /*rounding_tensor=*/0,
                             RoundingStep(train_step),
                             rounding_tensors_.data(),
                             rounding_elements_.data()};
  return client_.Run(MNT_OP_MULTI_SGD_STEP, in, out, &a);
}

double Optimizer::StateBytesPerParameter() const {
  std::vector<ParamShape> shapes;
  for (const Param& p : params_->params()) shapes.push_back(ShapeOf(p));
  return static_cast<double>(OptimizerStateBytes(config_, shapes)) /
         static_cast<double>(std::max<int64_t>(1, params_->num_parameters()));
}

void Optimizer::BuildOwnStateTables() {
  // adafactor: one table; adamw8bit: its 8-bit pieces, then its small ones.
  const bool adafactor = config_.name() == "adafactor";
  own_tables_.assign(adafactor ? 1 : 2, PieceTable{});
  const std::vector<ParamPiece>& pieces = params_->steps();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Param& p = params_->params()[pieces[i].param];
    const bool quantized =
        !adafactor && Quantized(own_state_->options(), ShapeOf(p));
    PieceTable& t = own_tables_[adafactor || quantized ? 0 : 1];
    t.op = adafactor   ? MNT_OP_MULTI_ADAFACTOR_STEP
           : quantized ? MNT_OP_MULTI_ADAMW8BIT_STEP
                       : MNT_OP_MULTI_ADAMW_STEP;
    for (int64_t c = 0; c < copies_[i]; ++c) {
      t.pieces.push_back(i);
      t.copies.push_back(c);
      t.weight_decays.push_back(weight_decays_[i]);
      t.rounding_tensors.push_back(c == 0 ? rounding_tensors_[i] : CopyRoundingTensor(i, c));
      t.rounding_elements.push_back(rounding_elements_[i]);
    }
  }
}

sdk::Status Optimizer::OwnStateMultiStep(float lr, const MNT_Tensor& found_inf,
                                         const MNT_Tensor& multiplier) {
  const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  for (const PieceTable& table : own_tables_) {
    if (table.pieces.empty()) continue;
    // Each piece's operands as its single-tensor op's, absent ones kept
    // as NULL tensors so every piece keeps its fixed stride.
    std::vector<MNT_Tensor> in{found_inf, multiplier}, out;
    for (size_t e = 0; e < table.pieces.size(); ++e) {
      const size_t i = table.pieces[e];
      const int64_t c = table.copies[e];
      const ParamPiece& piece = params_->steps()[i];
      const bool adafactor = table.op == MNT_OP_MULTI_ADAFACTOR_STEP;
      in.push_back(adafactor ? AdafactorGrad(i, c) : params_->PieceGrad(piece));
      in.push_back(device_step_counters_ ? StepCounter(i, c) : absent);
      if (adafactor) {
        for (const MNT_Tensor& t : AdafactorOutputs(i, c)) out.push_back(t);
        continue;
      }
      out.push_back(params_->PieceMaster(piece));
      for (size_t k = 0; k < own_state_->specs(piece.param).size(); ++k) {
        out.push_back(own_state_->Tensor(i, k));
      }
      out.push_back(params_->mixed() ? params_->PieceWorking(piece) : absent);
    }
    if (device_lr_) in.push_back(LrInput());  // the last input
    if (table.op == MNT_OP_MULTI_ADAFACTOR_STEP) {
      const AdafactorOptions& o = own_state_->options().adafactor;
      const MNT_MultiAdafactorParams a{MNT_MultiAdafactorParams_STRUCT_SIZE,
                                       lr,
                                       o.beta1,
                                       o.decay_rate,
                                       o.eps1,
                                       o.eps2,
                                       o.clip_threshold,
                                       0.0f,
                                       o.relative_step ? 1 : 0,
                                       o.scale_parameter ? 1 : 0,
                                       o.warmup_init ? 1 : 0,
                                       ParamsStep(),
                                       rounding(),
                                       rounding_seed_,
                                       /*rounding_tensor=*/0,
                                       static_cast<int64_t>(table.pieces.size()),
                                       nullptr,
                                       table.weight_decays.data(),
                                       table.rounding_tensors.data()};
      MNT_RETURN_IF_ERROR(client_.Run(table.op, in, out, &a));
      continue;
    }
    const MNT_MultiAdamWParams a{MNT_MultiAdamWParams_STRUCT_SIZE,
                                 lr,
                                 static_cast<float>(config_.beta1()),
                                 static_cast<float>(config_.beta2()),
                                 static_cast<float>(config_.eps()),
                                 0.0f,
                                 ParamsStep(),
                                 static_cast<int64_t>(table.pieces.size()),
                                 nullptr,
                                 table.weight_decays.data(),
                                 rounding(),
                                 rounding_seed_,
                                 /*rounding_tensor=*/0,
                                 table.rounding_tensors.data(),
                                 table.rounding_elements.data()};
    MNT_RETURN_IF_ERROR(client_.Run(table.op, in, out, &a));
  }
  return sdk::Status::Ok();
}

absl::Status Optimizer::Step(double lr, const MNT_Tensor& found_inf,
                             const MNT_Tensor& multiplier, int64_t train_step) {
  if (multi_tensor_) {
    if (auto s = own_state_ != nullptr
                     ? OwnStateMultiStep(ParamsLr(lr), found_inf, multiplier)
                     : MultiTensorStep(static_cast<float>(lr), found_inf, multiplier, train_step);
        !s.ok()) {
      return sdk::ToAbsl(s);
    }
    if (!skips_on_device_) ++applied_steps_;
    return absl::OkStatus();
  }
  const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1});
  // A piece's random bits use its parameter's index and its elements' place
  // in the parameter, as in the multi-tensor op and as a whole step would.
  const std::vector<ParamPiece>& pieces = params_->steps();
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ParamPiece& piece = pieces[i];
    std::vector<MNT_Tensor> in{params_->PieceGrad(piece), found_inf, multiplier};
    if (adam_ && (device_step_counters_ || device_lr_)) {
      in.push_back(device_step_counters_ ? StepCounter(i, 0) : absent);
    }
    if (device_lr_) in.push_back(LrInput());  // SGD in[3], AdamW in[4] (ABI 1.7)
    if (own_state_ != nullptr) {
      if (auto s = OwnStateStep(i, ParamsLr(lr), std::move(in)); !s.ok()) return sdk::ToAbsl(s);
      continue;
    }
    std::vector<MNT_Tensor> out{params_->PieceMaster(piece), params_->PieceState(piece, 0)};
    if (adam_) out.push_back(params_->PieceState(piece, 1));
    // The rounded working copy, written in the same kernel.
    if (params_->mixed()) out.push_back(params_->PieceWorking(piece));
    const float wd = weight_decays_[i];
    sdk::Status s;
    if (adam_) {
      const MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE,
                              ParamsLr(lr),
                              static_cast<float>(config_.beta1()),
                              static_cast<float>(config_.beta2()),
                              static_cast<float>(config_.eps()),
                              wd,
                              ParamsStep(),
                              rounding(),
                              rounding_seed_,
                              piece.param,
                              piece.first};
      s = client_.Run(MNT_OP_ADAMW_STEP, in, out, &a);
    } else {
      const MNT_SgdParams a{MNT_SgdParams_STRUCT_SIZE,
                            ParamsLr(lr),
                            static_cast<float>(config_.momentum()),
                            wd,
                            config_.nesterov() ? 1 : 0,
                            rounding(),
                            rounding_seed_,
                            piece.param,
                            RoundingStep(train_step),
                            piece.first};
      s = client_.Run(MNT_OP_SGD_STEP, in, out, &a);
    }
    if (!s.ok()) return sdk::ToAbsl(s);
  }
  // A host-decided step is an applied one; on the device the counters (and
  // the sync) keep the count.
  if (!skips_on_device_) ++applied_steps_;
  return absl::OkStatus();
}

sdk::Status Optimizer::OwnStateStep(size_t i, float lr, std::vector<MNT_Tensor> in) {
  const ParamPiece& piece = params_->steps()[i];
  const Param& p = params_->params()[piece.param];
  const OptimizerState& state = *own_state_;
  const size_t count = state.specs(piece.param).size();
  std::vector<MNT_Tensor> out{params_->PieceMaster(piece)};
  for (size_t k = 0; k < count; ++k) out.push_back(state.Tensor(i, k));
  if (config_.name() == "adamw8bit") {
    const MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE,
                            lr,
                            static_cast<float>(config_.beta1()),
                            static_cast<float>(config_.beta2()),
                            static_cast<float>(config_.eps()),
                            weight_decays_[i],
                            ParamsStep(),
                            rounding(),
                            rounding_seed_,
                            piece.param,
                            piece.first};
    const bool quantized = Quantized(state.options(), ShapeOf(p));
    if (params_->mixed()) out.push_back(params_->PieceWorking(piece));
    return client_.Run(quantized ? MNT_OP_ADAMW8BIT_STEP : MNT_OP_ADAMW_STEP, in, out, &a);
  }
  const AdafactorOptions& o = state.options().adafactor;
  for (int64_t c = 0; c < copies_[i]; ++c) {
    std::vector<MNT_Tensor> ordered = AdafactorOutputs(i, c);
    while (!ordered.empty() && ordered.back().data == nullptr) ordered.pop_back();
    // The grad with the copy's dims: the op factors over its last two.
    in[0] = AdafactorGrad(i, c);
    if (device_step_counters_) in[3] = StepCounter(i, c);
    const MNT_AdafactorParams a{MNT_AdafactorParams_STRUCT_SIZE,
                                lr,
                                o.beta1,
                                o.decay_rate,
                                o.eps1,
                                o.eps2,
                                o.clip_threshold,
                                weight_decays_[i],
                                o.relative_step ? 1 : 0,
                                o.scale_parameter ? 1 : 0,
                                o.warmup_init ? 1 : 0,
                                ParamsStep(),
                                rounding(),
                                rounding_seed_,
                                c == 0 ? piece.param : CopyRoundingTensor(i, c)};
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ADAFACTOR_STEP, in, ordered, &a));
  }
  return sdk::Status::Ok();
}

namespace {

// Copy `c` of `copies` equal copies laid one after another in `t`, with
// `dims` (a view: the same memory).
MNT_Tensor CopyOf(const MNT_Tensor& t, int64_t c, int64_t copies,
                  const std::vector<int64_t>& dims) {
  if (t.data == nullptr) return t;
  const int64_t count = sdk::NumElements(t) / copies;
  char* data = static_cast<char*>(t.data) +
               static_cast<size_t>(c * count) * sdk::DTypeSize(t.dtype);
  return sdk::MakeTensor(data, t.dtype, static_cast<int32_t>(dims.size()), dims.data());
}

}  // namespace

MNT_Tensor Optimizer::AdafactorGrad(size_t i, int64_t c) const {
  const ParamPiece& piece = params_->steps()[i];
  const Param& p = params_->params()[piece.param];
  const MNT_Tensor grad = params_->PieceGrad(piece);
  // The copy's dims even for one copy ([1, C] is a vector, not a matrix).
  if (p.stacked_dims == 0) return grad;
  return CopyOf(grad, c, copies_[i], ShapeOf(p).copy_dims());
}

std::vector<MNT_Tensor> Optimizer::AdafactorOutputs(size_t i, int64_t c) const {
  // out[0] master, out[1] second moment (rows), out[2] columns (factored
  // only), out[3] first moment (beta1 only), out[4] working copy: absent
  // ones keep their places. A copy's part of each: its share of the
  // elements (StateTensorsOf lays the copies' states one after another).
  const ParamPiece& piece = params_->steps()[i];
  const Param& p = params_->params()[piece.param];
  const std::vector<StateTensorSpec>& specs = own_state_->specs(piece.param);
  const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  const bool factored = Factored(ShapeOf(p));
  const bool first_moment = own_state_->options().adafactor.beta1 != 0.0f;
  std::vector<MNT_Tensor> out{params_->PieceMaster(piece), own_state_->Tensor(i, 0),
                              factored ? own_state_->Tensor(i, 1) : absent,
                              first_moment ? own_state_->Tensor(i, specs.size() - 1) : absent,
                              params_->mixed() ? params_->PieceWorking(piece) : absent};
  if (copies_[i] == 1) return out;
  for (MNT_Tensor& t : out) {
    const std::vector<int64_t> flat{sdk::NumElements(t) / copies_[i]};
    t = CopyOf(t, c, copies_[i], flat);
  }
  return out;
}

int64_t Optimizer::CopyRoundingTensor(size_t i, int64_t c) const {
  // Past every parameter's index: copy c of parameter p is p + c x count,
  // so no two tensors share a stream of random bits.
  const int64_t count = static_cast<int64_t>(params_->params().size());
  return params_->steps()[i].param + c * count;
}

absl::Status Optimizer::WriteDeviceStepCounters(int64_t applied) {
  for (const sdk::DeviceBuffer& counter : step_counters_) {
    if (auto s = WriteScalar<int32_t>(client_, counter.data(), static_cast<int32_t>(applied));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int32_t> Optimizer::ReadDeviceStepCounter() const {
  // Every counter this rank keeps advances alike; its first one says.
  return ReadScalar<int32_t>(client_, step_counters_.front().data());
}

}  // namespace mnt::trainer
