// Device-side dynamic loss scaling (ABI 1.4): the Trainer methods that decide
// whether a run keeps the loss scale on the device, keep the precision
// plugin's LossScaler (the source of truth for policy and checkpoints) in
// step with it, and read the device scalars only when a report needs them.
//
// The step on the device: FILL found_inf 0, NONFINITE_CHECK_UNSCALE with the
// device inv_scale, AMP_UPDATE_SCALE (scale, growth tracker, next inv_scale),
// ADD found_inf into the skipped-step count, GLOBAL_NORM_SQUARED,
// CLIP_COEFFICIENT, then the optimizer ops with found_inf (they skip
// themselves) and the device multiplier; Adam gets a per-tensor applied-step
// counter (ADAMW_STEP in[3]) instead of the host's step. The formulas are
// the precision plugin's (checked at start-up) and the host path's, so both
// paths give the same bits.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugins/backends/common/step_math.h"
#include "plugins/sdk/tensor.h"
#include "trainer/core/trainer.h"

namespace mnt::trainer {
namespace {

absl::Status FromSdk(const sdk::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

MNT_Tensor Scalar(const sdk::DeviceBuffer& b) {
  return sdk::MakeTensor(b.data(), MNT_DTYPE_F32, {1});
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

// GradScaler's defaults, which the precision ABI documents for the loss
// scaler options (mnt_precision.h); a plugin that differs is caught by the
// start-up check against the device formula.
constexpr double kDefaultGrowthFactor = 2.0;
constexpr double kDefaultBackoffFactor = 0.5;
constexpr int64_t kDefaultGrowthInterval = 2000;

}  // namespace

absl::Status Trainer::ResolveDeviceLossScaling(const std::string& scaler_options) {
  const std::string& mode = config_.device_loss_scaling();
  if (mode == "off") return absl::OkStatus();
  const std::string why = DeviceLossScalingUnavailable(scaler_options);
  if (!why.empty()) {
    if (mode == "on") {
      return absl::FailedPreconditionError(
          absl::StrCat("--device_loss_scaling=on: ", why, " (use auto or off)"));
    }
    return absl::OkStatus();  // auto: the host path
  }
  device_scaling_ = true;
  adam_step_counters_ = config_.optimizer().name() != "sgd";
  return absl::OkStatus();
}

std::string Trainer::DeviceLossScalingUnavailable(const std::string& scaler_options) {
  const mantissa::LossScaleConfig& ls = config_.loss_scale();
  const bool dynamic =
      loss_scaling_ && (ls.mode() == "dynamic" ||
                        (ls.mode().empty() && policy_.loss_scaling == MNT_LOSS_SCALING_DYNAMIC));
  if (!dynamic) {
    return absl::StrCat("precision '", precision_name_,
                        "' does not use dynamic loss scaling");
  }
  for (MNT_Op op : {MNT_OP_AMP_UPDATE_SCALE, MNT_OP_CLIP_COEFFICIENT}) {
    MNT_Backend_GetOpSupport_Args q{};
    q.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
    q.backend = backend_;
    q.op = op;
    MNT_Error* e = backend_plugin_->backend->Backend_GetOpSupport(&q);
    const bool supported = e == nullptr && q.supported != 0;
    backend_plugin_->Error_Destroy(e);
    if (!supported) {
      return absl::StrCat("backend '", device_name_, "' does not support ",
                          sdk::OpName(op), " (ABI 1.4)");
    }
  }
  const MNT_Api_Version& v = backend_plugin_->abi_version;
  if (config_.optimizer().name() != "sgd" && v.minor_version < 4) {
    return absl::StrFormat(
        "backend '%s' is built against ABI %d.%d; ADAMW_STEP's device step "
        "counter needs 1.4",
        device_name_, v.major_version, v.minor_version);
  }
  const double growth = ls.growth_factor() > 0 ? ls.growth_factor() : kDefaultGrowthFactor;
  const double backoff = ls.backoff_factor() > 0 ? ls.backoff_factor() : kDefaultBackoffFactor;
  const int64_t interval =
      ls.growth_interval() > 0 ? ls.growth_interval() : kDefaultGrowthInterval;
  if (static_cast<double>(static_cast<float>(growth)) != growth ||
      static_cast<double>(static_cast<float>(backoff)) != backoff) {
    return absl::StrFormat(
        "growth_factor=%.17g and backoff_factor=%.17g must be exact in fp32 "
        "(AMP_UPDATE_SCALE takes fp32 factors)",
        growth, backoff);
  }
  if (interval > std::numeric_limits<int32_t>::max()) {
    return absl::StrCat("growth_interval=", interval, " does not fit the I32 tracker");
  }
  amp_params_ = {MNT_AmpUpdateScaleParams_STRUCT_SIZE, static_cast<float>(growth),
                 static_cast<float>(backoff), static_cast<int32_t>(interval)};
  return ScalerDisagreesWithDeviceFormula(scaler_options);
}

// The precision plugin decides the policy: a scratch scaler with the run's
// options is fed a found_inf sequence (a backoff, a full growth interval,
// two backoffs, another interval) and must agree with AMP_UPDATE_SCALE's
// formula bit for bit, or the run keeps the host path.
std::string Trainer::ScalerDisagreesWithDeviceFormula(const std::string& scaler_options) {
  const MNT_Precision_Api* papi = precision_plugin_->precision;
  MNT_LossScaler_Create_Args c{};
  c.struct_size = MNT_LossScaler_Create_Args_STRUCT_SIZE;
  c.options = scaler_options.c_str();
  if (MNT_Error* e = papi->LossScaler_Create(&c); e != nullptr) {
    precision_plugin_->Error_Destroy(e);
    return "the precision plugin's loss scaler could not be probed";
  }
  std::string why;
  MNT_LossScaler_GetState_Args st{};
  st.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
  st.scaler = c.scaler;
  st.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
  if (MNT_Error* e = papi->LossScaler_GetState(&st); e != nullptr) {
    precision_plugin_->Error_Destroy(e);
    why = "the precision plugin's loss scaler state could not be read";
  }
  float scale = st.state.scale;
  int32_t tracker = static_cast<int32_t>(st.state.growth_tracker);
  const int64_t interval = amp_params_.growth_interval;
  const int64_t clean = interval <= 100000 ? interval : 3;
  std::vector<bool> sequence{true};
  sequence.insert(sequence.end(), clean, false);
  sequence.insert(sequence.end(), {true, true});
  sequence.insert(sequence.end(), clean, false);
  for (size_t i = 0; i < sequence.size() && why.empty(); ++i) {
    MNT_LossScaler_Update_Args u{};
    u.struct_size = MNT_LossScaler_Update_Args_STRUCT_SIZE;
    u.scaler = c.scaler;
    u.found_inf = sequence[i] ? 1 : 0;
    if (MNT_Error* e = papi->LossScaler_Update(&u); e != nullptr) {
      precision_plugin_->Error_Destroy(e);
      why = "the precision plugin's loss scaler update failed while probing";
      break;
    }
    AmpUpdateScale(sequence[i], amp_params_.growth_factor, amp_params_.backoff_factor,
                   amp_params_.growth_interval, &scale, &tracker);
    if (Bits(u.new_scale) != Bits(scale) || (u.skip_step != 0) != sequence[i]) {
      why = absl::StrFormat(
          "precision '%s' loss scaler does not follow GradScaler's update with "
          "growth_factor=%g, backoff_factor=%g, growth_interval=%d (probe step %d: "
          "scale %g, the device formula gives %g)",
          precision_name_, amp_params_.growth_factor, amp_params_.backoff_factor,
          amp_params_.growth_interval, i + 1, u.new_scale, scale);
    }
  }
  MNT_LossScaler_Destroy_Args d{};
  d.struct_size = MNT_LossScaler_Destroy_Args_STRUCT_SIZE;
  d.scaler = c.scaler;
  precision_plugin_->Error_Destroy(papi->LossScaler_Destroy(&d));
  return why;
}

absl::Status Trainer::AllocateDeviceScaling() {
  const int64_t accum = std::max<int64_t>(1, config_.grad_accum_steps());
  absl::Status s = FromSdk(client_.Allocate(sizeof(float), MNT_MEMORY_DATA, &scale_));
  if (s.ok()) s = FromSdk(client_.Allocate(sizeof(int32_t), MNT_MEMORY_DATA, &growth_tracker_));
  if (s.ok()) s = FromSdk(client_.Allocate(sizeof(float), MNT_MEMORY_DATA, &skipped_));
  if (s.ok())
    s = FromSdk(client_.Allocate(sizeof(float) * accum, MNT_MEMORY_DATA, &loss_micro_));
  for (Param& p : params_) {
    if (!s.ok() || !adam_step_counters_) break;
    s = FromSdk(client_.Allocate(sizeof(int32_t), MNT_MEMORY_OPTIMIZER_STATE, &p.step_counter));
  }
  return s;
}

absl::StatusOr<int32_t> Trainer::ReadI32(void* device_scalar) {
  int32_t v = 0;
  if (auto s = FromSdk(client_.ToHost(&v, device_scalar, sizeof(v))); !s.ok()) return s;
  return v;
}

absl::Status Trainer::WriteI32(void* device_scalar, int32_t value) {
  return FromSdk(client_.ToDevice(device_scalar, &value, sizeof(value)));
}

// Plugin -> device: at start-up and after a checkpoint restore.
absl::Status Trainer::SyncScalerToDevice() {
  MNT_LossScaler_GetState_Args st{};
  st.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
  st.scaler = scaler_;
  st.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
  if (auto s = StatusFromPluginError(
          precision_plugin_, precision_plugin_->precision->LossScaler_GetState(&st));
      !s.ok())
    return s;
  if (st.state.growth_tracker < 0 ||
      st.state.growth_tracker >= amp_params_.growth_interval ||
      applied_steps_ >= std::numeric_limits<int32_t>::max()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "device loss scaling: growth_tracker %d or %d applied steps out of range",
        st.state.growth_tracker, applied_steps_));
  }
  absl::Status s = WriteScalar(scale_.data(), st.state.scale);
  if (s.ok()) s = WriteI32(growth_tracker_.data(), static_cast<int32_t>(st.state.growth_tracker));
  if (s.ok()) s = WriteScalar(inv_scale_.data(), InvScale(st.state.scale));
  if (s.ok()) s = WriteScalar(skipped_.data(), 0.0f);
  for (Param& p : params_) {
    if (!s.ok() || !adam_step_counters_) break;
    s = WriteI32(p.step_counter.data(), static_cast<int32_t>(applied_steps_));
  }
  if (!s.ok()) return s;
  skipped_synced_ = st.state.skipped_steps;
  host_scale_ = st.state.scale;
  host_scale_valid_ = true;
  return absl::OkStatus();
}

// Device -> plugin: before a checkpoint and at the end of a training call,
// so GetState (checkpoints, the final report) sees the run's real state.
absl::Status Trainer::SyncScalerToPlugin() {
  auto scale = ReadScalar(scale_.data());
  if (!scale.ok()) return scale.status();
  auto tracker = ReadI32(growth_tracker_.data());
  if (!tracker.ok()) return tracker.status();
  auto skipped = ReadScalar(skipped_.data());
  if (!skipped.ok()) return skipped.status();
  const int64_t total_skipped = skipped_synced_ + std::llround(*skipped);
  MNT_LossScaler_SetState_Args set{};
  set.struct_size = MNT_LossScaler_SetState_Args_STRUCT_SIZE;
  set.scaler = scaler_;
  set.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
  set.state.scale = *scale;
  set.state.growth_tracker = *tracker;
  set.state.skipped_steps = total_skipped;
  if (auto s = StatusFromPluginError(
          precision_plugin_, precision_plugin_->precision->LossScaler_SetState(&set));
      !s.ok())
    return absl::Status(s.code(), absl::StrCat("device loss scaling: ", s.message()));
  if (auto s = WriteScalar(skipped_.data(), 0.0f); !s.ok()) return s;
  skipped_synced_ = total_skipped;
  // Every step is applied or skipped; the device counters must agree.
  applied_steps_ = step_ - total_skipped;
  if (adam_step_counters_ && !params_.empty()) {
    auto counter = ReadI32(params_[0].step_counter.data());
    if (!counter.ok()) return counter.status();
    if (*counter != applied_steps_) {
      return absl::InternalError(absl::StrFormat(
          "device loss scaling: ADAMW_STEP's step counter is %d but %d steps "
          "were applied (backend '%s')",
          *counter, applied_steps_, device_name_));
    }
  }
  host_scale_ = *scale;
  host_scale_valid_ = true;
  return absl::OkStatus();
}

absl::StatusOr<float> Trainer::DeviceLossScaleOnHost() {
  if (!host_scale_valid_) {
    auto scale = ReadScalar(scale_.data());
    if (!scale.ok()) return scale.status();
    host_scale_ = *scale;
    host_scale_valid_ = true;
  }
  return host_scale_;
}

absl::Status Trainer::DeviceUnscaleUpdateAndClip(const std::vector<MNT_Tensor>& grads) {
  const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
  if (auto s = Backend(MNT_OP_FILL, {}, {Scalar(found_inf_)}, &zero); !s.ok()) return s;
  std::vector<MNT_Tensor> in{Scalar(inv_scale_)}, out{Scalar(found_inf_)};
  in.insert(in.end(), grads.begin(), grads.end());
  out.insert(out.end(), grads.begin(), grads.end());
  if (auto s = Backend(MNT_OP_NONFINITE_CHECK_UNSCALE, in, out); !s.ok()) return s;
  const MNT_Tensor tracker = sdk::MakeTensor(growth_tracker_.data(), MNT_DTYPE_I32, {1});
  if (auto s = Backend(MNT_OP_AMP_UPDATE_SCALE, {Scalar(found_inf_)},
                       {Scalar(scale_), tracker, Scalar(inv_scale_)}, &amp_params_);
      !s.ok())
    return s;
  host_scale_valid_ = false;
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  if (auto s = Backend(MNT_OP_ADD, {Scalar(found_inf_), Scalar(skipped_)}, {Scalar(skipped_)},
                       &add);
      !s.ok())
    return s;
  if (auto s = Backend(MNT_OP_GLOBAL_NORM_SQUARED, grads, {Scalar(norm_sq_)}); !s.ok())
    return s;
  const MNT_ClipCoefficientParams clip{MNT_ClipCoefficientParams_STRUCT_SIZE,
                                       static_cast<float>(config_.clip_grad_norm())};
  return Backend(MNT_OP_CLIP_COEFFICIENT, {Scalar(norm_sq_), Scalar(found_inf_)},
                 {Scalar(multiplier_)}, &clip);
}

// The host path's StepMetrics from the device scalars (one sync).
absl::Status Trainer::FillDeviceStepMetrics(StepMetrics* m) {
  const int64_t accum = std::max<int64_t>(1, config_.grad_accum_steps());
  std::vector<float> losses(static_cast<size_t>(accum));
  if (auto s = FromSdk(client_.ToHost(losses.data(), loss_micro_.data(),
                                      losses.size() * sizeof(float)));
      !s.ok())
    return s;
  double loss_sum = 0;
  for (float l : losses) loss_sum += l;
  m->loss = loss_sum / static_cast<double>(accum);
  auto found = ReadScalar(found_inf_.data());
  if (!found.ok()) return found.status();
  auto norm_sq = ReadScalar(norm_sq_.data());
  if (!norm_sq.ok()) return norm_sq.status();
  auto skipped = ReadScalar(skipped_.data());
  if (!skipped.ok()) return skipped.status();
  m->skipped = *found != 0.0f;
  m->grad_norm = m->skipped ? 0.0 : std::sqrt(static_cast<double>(*norm_sq));
  m->skipped_steps = skipped_synced_ + std::llround(*skipped);
  return absl::OkStatus();
}

}  // namespace mnt::trainer
