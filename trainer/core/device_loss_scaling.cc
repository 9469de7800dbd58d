#include "trainer/core/device_loss_scaling.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugins/sdk/loss_scale_math.h"
#include "plugins/sdk/tensor.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {

absl::StatusOr<std::unique_ptr<DeviceLossScaling>> DeviceLossScaling::Create(
    const LossScalingContext& context, const MNT_AmpUpdateScaleParams& amp,
    Optimizer* optimizer, const std::string& device_name, bool scaling_active) {
  std::unique_ptr<DeviceLossScaling> d(
      new DeviceLossScaling(context, amp, optimizer, device_name, scaling_active));
  const sdk::BackendClient& client = *context.client;
  for (auto [buf, bytes] :
       {std::pair{&d->scale_, sizeof(float)},
        {&d->growth_tracker_, sizeof(int32_t)},
        {&d->hysteresis_tracker_, sizeof(int32_t)},
        {&d->skipped_, sizeof(float)},
        {&d->loss_micro_, sizeof(float) * context.micro_batches},
        {&d->loss_multiplier_, sizeof(float)}}) {
    if (auto s = sdk::ToAbsl(client.Allocate(bytes, MNT_MEMORY_DATA, buf)); !s.ok())
      return s;
  }
  if (auto s = d->SyncFromPlugin(); !s.ok()) return s;
  return d;
}

// For a model that takes the loss multiplier as a host float (ABI < 1.6),
// and for reported steps: the device scale is read (cached when a report
// or a sync already read it).
absl::StatusOr<float> DeviceLossScaling::StepScale() {
  if (!active_) return 1.0f;
  if (!host_scale_valid_) {
    auto scale = ReadScalar<float>(*c_.client, scale_.data());
    if (!scale.ok()) return scale.status();
    host_scale_ = *scale;
    host_scale_valid_ = true;
  }
  return host_scale_;
}

// No read: the scale itself, or scale * (1/micro_batches) formed by ADD
// (alpha * in[0], one fp32 product as the host path's
// scale * (1.0f / micro_batches)).
absl::StatusOr<MNT_Tensor> DeviceLossScaling::DeviceLossMultiplier() {
  if (!active_) return LossScaling::DeviceLossMultiplier();  // the host's 1/accum
  if (c_.micro_batches == 1) return F32Scalar(scale_);
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE,
                          1.0f / static_cast<float>(c_.micro_batches), 0.0f};
  if (auto s = sdk::ToAbsl(c_.client->Run(MNT_OP_ADD, {F32Scalar(scale_)},
                                          {F32Scalar(loss_multiplier_)}, &add));
      !s.ok())
    return s;
  return F32Scalar(loss_multiplier_);
}

// Each micro-batch's loss stays in its slot until a report reads them.
MNT_Tensor DeviceLossScaling::LossOutput(int64_t micro) const {
  return sdk::MakeTensor(static_cast<float*>(loss_micro_.data()) + micro,
                         MNT_DTYPE_F32, {1});
}

absl::StatusOr<OptimizerGate> DeviceLossScaling::UnscaleUpdateAndClip(
    float, const StepGradients& grads, StepMetrics*) {
  const sdk::BackendClient& client = *c_.client;
  StepScalars& sc = *c_.scalars;
  auto run = [&](MNT_Op op, const std::vector<MNT_Tensor>& in,
                 const std::vector<MNT_Tensor>& out, const void* params) {
    return sdk::ToAbsl(client.Run(op, in, out, params));
  };
  const MNT_ClipCoefficientParams clip{MNT_ClipCoefficientParams_STRUCT_SIZE,
                                       c_.max_grad_norm};
  OptimizerGate gate;
  gate.multiplier = F32Scalar(sc.multiplier);
  if (!active_) {  // nothing to unscale or skip: the clip factor only
    if (auto s = GlobalNormSquared(c_, grads.norm); !s.ok()) return s;
    if (auto s = run(MNT_OP_CLIP_COEFFICIENT, {F32Scalar(sc.norm_sq)},
                     {F32Scalar(sc.multiplier)}, &clip);
        !s.ok())
      return s;
    gate.found_inf = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {0});
    unread_loss_ = true;
    return gate;
  }
  if (auto s = UnscaleAndFindInf(c_, grads.unscale); !s.ok()) return s;
  std::vector<MNT_Tensor> amp_out{F32Scalar(scale_), I32Scalar(growth_tracker_),
                                  F32Scalar(sc.inv_scale)};
  if (with_hysteresis()) amp_out.push_back(I32Scalar(hysteresis_tracker_));
  // The params as this host knows them, always (docs/abi.md section 1): a
  // run without the recipe's hysteresis, floor or ceiling has their neutral
  // values there (1, 0, 0), and no out[3].
  MNT_AmpUpdateScaleParams sent = amp_;
  sent.struct_size = MNT_AmpUpdateScaleParams_STRUCT_SIZE;
  if (auto s = run(MNT_OP_AMP_UPDATE_SCALE, {F32Scalar(sc.found_inf)}, amp_out, &sent);
      !s.ok())
    return s;
  host_scale_valid_ = false;
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  if (auto s = run(MNT_OP_ADD, {F32Scalar(sc.found_inf), F32Scalar(skipped_)},
                   {F32Scalar(skipped_)}, &add);
      !s.ok())
    return s;
  if (auto s = GlobalNormSquared(c_, grads.norm); !s.ok()) return s;
  if (auto s = run(MNT_OP_CLIP_COEFFICIENT, {F32Scalar(sc.norm_sq), F32Scalar(sc.found_inf)},
                   {F32Scalar(sc.multiplier)}, &clip);
      !s.ok())
    return s;
  gate.found_inf = F32Scalar(sc.found_inf);  // the optimizer kernels skip on it
  return gate;
}

// Reading the device scalars is a sync: only for steps a sink reports. Gives
// the host path's StepMetrics.
absl::StatusOr<double> DeviceLossScaling::ReadStepLoss() {
  std::vector<float> losses(static_cast<size_t>(c_.micro_batches));
  if (auto s = sdk::ToAbsl(c_.client->ToHost(losses.data(), loss_micro_.data(),
                                             losses.size() * sizeof(float)));
      !s.ok())
    return s;
  double loss_sum = 0;
  for (float l : losses) {
    if (!std::isfinite(l) && !active_) {
      return absl::InternalError(absl::StrFormat(
          "loss is %f in %s; stopping (lower --lr, or use fp16 with "
          "loss scaling to skip such steps)",
          l, c_.precision_name));
    }
    loss_sum += l;
  }
  return loss_sum / static_cast<double>(c_.micro_batches);
}

absl::StatusOr<bool> DeviceLossScaling::CompleteStepMetrics(bool wanted,
                                                            StepMetrics* m) {
  if (!wanted) return false;
  const sdk::BackendClient& client = *c_.client;
  auto loss = ReadStepLoss();
  if (!loss.ok()) return loss.status();
  m->loss = *loss;
  unread_loss_ = false;
  if (!active_) {  // never skips: the norm only
    auto norm_sq = ReadScalar<float>(client, c_.scalars->norm_sq.data());
    if (!norm_sq.ok()) return norm_sq.status();
    m->skipped = false;
    m->grad_norm = std::sqrt(static_cast<double>(*norm_sq));
    m->skipped_steps = skipped_synced_;
    m->next_loss_scale = 1.0;
    return true;
  }
  auto found = ReadScalar<float>(client, c_.scalars->found_inf.data());
  if (!found.ok()) return found.status();
  auto norm_sq = ReadScalar<float>(client, c_.scalars->norm_sq.data());
  if (!norm_sq.ok()) return norm_sq.status();
  auto skipped = ReadScalar<float>(client, skipped_.data());
  if (!skipped.ok()) return skipped.status();
  m->skipped = *found != 0.0f;
  m->grad_norm = m->skipped ? 0.0 : std::sqrt(static_cast<double>(*norm_sq));
  m->skipped_steps = skipped_synced_ + std::llround(*skipped);
  // The scale AMP_UPDATE_SCALE left for the next step, which StepScale then
  // need not read again.
  auto next = ReadScalar<float>(client, scale_.data());
  if (!next.ok()) return next.status();
  host_scale_ = *next;
  host_scale_valid_ = true;
  m->next_loss_scale = *next;
  return true;
}

// Device -> plugin: so GetState (checkpoints, the final report) sees the
// run's real state.
absl::Status DeviceLossScaling::SyncToPlugin(int64_t steps_taken) {
  if (!active_) {
    // The last step's loss was not read: a non-finite one stops the run
    // here, before a checkpoint keeps its weights.
    if (unread_loss_) {
      auto loss = ReadStepLoss();
      if (!loss.ok()) {
        return absl::Status(loss.status().code(),
                            absl::StrCat("step ", steps_taken, ": ", loss.status().message()));
      }
      unread_loss_ = false;
    }
    return SyncAppliedSteps(steps_taken - skipped_synced_);
  }
  const sdk::BackendClient& client = *c_.client;
  auto scale = ReadScalar<float>(client, scale_.data());
  if (!scale.ok()) return scale.status();
  auto tracker = ReadScalar<int32_t>(client, growth_tracker_.data());
  if (!tracker.ok()) return tracker.status();
  int32_t hysteresis = 0;
  if (with_hysteresis()) {
    auto h = ReadScalar<int32_t>(client, hysteresis_tracker_.data());
    if (!h.ok()) return h.status();
    hysteresis = *h;
  }
  auto skipped = ReadScalar<float>(client, skipped_.data());
  if (!skipped.ok()) return skipped.status();
  const int64_t total_skipped = skipped_synced_ + std::llround(*skipped);
  sdk::LossScalerFullState st;
  st.state.scale = *scale;
  st.state.growth_tracker = *tracker;
  st.state.skipped_steps = total_skipped;
  st.hysteresis_tracker = hysteresis;
  // The plugin's own state is its business: the device never touches it.
  if (auto s = sdk::ToAbsl(c_.scaler->SetFullState(st, /*with_plugin_state=*/false));
      !s.ok())
    return absl::Status(s.code(), absl::StrCat("device loss scaling: ", s.message()));
  if (auto s = WriteScalar<float>(client, skipped_.data(), 0.0f); !s.ok()) return s;
  skipped_synced_ = total_skipped;
  if (auto s = SyncAppliedSteps(steps_taken - total_skipped); !s.ok()) return s;
  host_scale_ = *scale;
  host_scale_valid_ = true;
  return absl::OkStatus();
}

// Every step is applied or skipped; the device counters must agree.
absl::Status DeviceLossScaling::SyncAppliedSteps(int64_t applied) {
  optimizer_->set_applied_steps(applied);
  if (optimizer_->has_device_step_counters()) {
    auto counter = optimizer_->ReadDeviceStepCounter();
    if (!counter.ok()) return counter.status();
    if (*counter != applied) {
      return absl::InternalError(absl::StrFormat(
          "device loss scaling: ADAMW_STEP's step counter is %d but %d steps "
          "were applied (backend '%s')",
          *counter, applied, device_name_));
    }
  }
  return absl::OkStatus();
}

// Plugin -> device: at start-up and after a checkpoint restore.
absl::Status DeviceLossScaling::SyncFromPlugin() {
  sdk::LossScalerFullState full;
  if (auto s = sdk::ToAbsl(c_.scaler->GetFullState(&full)); !s.ok()) return s;
  const MNT_LossScalerState& st = full.state;
  const int64_t applied = optimizer_->applied_steps();
  if (!active_) {  // no scale to load: AdamW's counters only
    skipped_synced_ = st.skipped_steps;
    if (applied >= std::numeric_limits<int32_t>::max()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("device step scalars: %d applied steps out of range", applied));
    }
    if (!optimizer_->has_device_step_counters()) return absl::OkStatus();
    return optimizer_->WriteDeviceStepCounters(applied);
  }
  const int32_t hysteresis = with_hysteresis() ? amp_.hysteresis : 1;
  if (st.growth_tracker < 0 || st.growth_tracker >= amp_.growth_interval ||
      full.hysteresis_tracker < 0 || full.hysteresis_tracker >= hysteresis ||
      applied >= std::numeric_limits<int32_t>::max()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "device loss scaling: growth_tracker %d, hysteresis_tracker %d or %d "
        "applied steps out of range",
        st.growth_tracker, full.hysteresis_tracker, applied));
  }
  const sdk::BackendClient& client = *c_.client;
  absl::Status s = WriteScalar<float>(client, scale_.data(), st.scale);
  if (s.ok())
    s = WriteScalar<int32_t>(client, growth_tracker_.data(),
                             static_cast<int32_t>(st.growth_tracker));
  if (s.ok())
    s = WriteScalar<int32_t>(client, hysteresis_tracker_.data(),
                             static_cast<int32_t>(full.hysteresis_tracker));
  if (s.ok()) s = WriteScalar<float>(client, c_.scalars->inv_scale.data(), InvScale(st.scale));
  if (s.ok()) s = WriteScalar<float>(client, skipped_.data(), 0.0f);
  if (s.ok() && optimizer_->has_device_step_counters())
    s = optimizer_->WriteDeviceStepCounters(applied);
  if (!s.ok()) return s;
  skipped_synced_ = st.skipped_steps;
  host_scale_ = st.scale;
  host_scale_valid_ = true;
  return absl::OkStatus();
}

}  // namespace mnt::trainer
