// Trainer::SaveCheckpoint / RestoreCheckpoint: everything needed to continue
// a run bit for bit — fp32 master weights, optimizer state, loss-scaler
// state, data position and step counters.
#include <cstring>
#include <filesystem>
#include <string>

#include "absl/strings/str_cat.h"
#include "plugins/sdk/tensor.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/core/trainer.h"

namespace mnt::trainer {
namespace {

absl::Status FromSdk(const sdk::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.code()), s.message());
}

constexpr char kAppliedStepsKey[] = "applied_steps";

}  // namespace

absl::Status Trainer::SaveCheckpoint(const std::string& path) {
  // Device loss scaling: the plugin's scaler and applied_steps_ catch up
  // with the device first (the checkpoint format is the same either way).
  if (device_scaling_) {
    if (auto s = SyncScalerToPlugin(); !s.ok()) return s;
  }
  CheckpointData ckpt;
  ckpt.set_model(config_.model());
  ckpt.set_model_options(config_.model_options());
  ckpt.set_precision(precision_name_);
  ckpt.set_step(step_);
  (*ckpt.mutable_metadata())[kAppliedStepsKey] = absl::StrCat(applied_steps_);
  (*ckpt.mutable_metadata())["optimizer"] = config_.optimizer().name();
  const SamplerState ss = sampler_->state();
  ckpt.set_sampler_seed(ss.seed);
  ckpt.set_sampler_epoch(ss.epoch);
  ckpt.set_sampler_cursor(ss.cursor);

  MNT_LossScaler_GetState_Args st{};
  st.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
  st.scaler = scaler_;
  st.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
  if (auto s = StatusFromPluginError(
          precision_plugin_, precision_plugin_->precision->LossScaler_GetState(&st));
      !s.ok())
    return s;
  ckpt.set_loss_scale(st.state.scale);
  ckpt.set_loss_scale_growth_tracker(st.state.growth_tracker);
  ckpt.set_loss_scale_skipped_steps(st.state.skipped_steps);

  if (auto s = FromSdk(client_.Synchronize()); !s.ok()) return s;
  auto add = [&](const std::string& name, const sdk::DeviceBuffer& buf,
                 const std::vector<int64_t>& dims, int64_t numel) -> absl::Status {
    TensorData* t = ckpt.add_tensors();
    t->set_name(name);
    t->set_dtype(MNT_DTYPE_F32);
    for (int64_t d : dims) t->add_dims(d);
    std::string* bytes = t->mutable_data();
    bytes->resize(static_cast<size_t>(numel) * sizeof(float));
    return FromSdk(client_.ToHost(bytes->data(), buf.data(), bytes->size()));
  };
  for (const Param& p : params_) {
    // The fp32 master is the truth; working 16-bit weights derive from it.
    absl::Status s = add(p.name, mixed_ ? p.master : p.weights, p.dims, p.numel);
    if (s.ok() && p.state1.data()) s = add("opt.state1/" + p.name, p.state1, p.dims, p.numel);
    if (s.ok() && p.state2.data()) s = add("opt.state2/" + p.name, p.state2, p.dims, p.numel);
    if (!s.ok()) return s;
  }
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot create checkpoint directory ", dir.string(), ": ", ec.message()));
  }
  return WriteCheckpointAtomic(path, ckpt);
}

absl::Status Trainer::RestoreCheckpoint(const std::string& path) {
  auto read = ReadCheckpoint(path);
  if (!read.ok()) return read.status();
  const CheckpointData& ckpt = *read;
  if (auto s = CheckCompatible(ckpt, config_.model(), config_.model_options(),
                               precision_name_);
      !s.ok())
    return s;
  auto it = ckpt.metadata().find("optimizer");
  if (it != ckpt.metadata().end() && it->second != config_.optimizer().name()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint optimizer '", it->second,
                     "' does not match --optimizer=", config_.optimizer().name()));
  }

  // Validate everything before touching any state, so a bad file loses
  // nothing.
  std::vector<const TensorData*> found;
  for (const Param& p : params_) {
    for (const std::string& name :
         {p.name, "opt.state1/" + p.name, "opt.state2/" + p.name}) {
      const bool needed = name == p.name || (name.rfind("opt.state1/", 0) == 0 && p.state1.data()) ||
                          (name.rfind("opt.state2/", 0) == 0 && p.state2.data());
      if (!needed) continue;
      const TensorData* t = nullptr;
      for (const TensorData& c : ckpt.tensors()) {
        if (c.name() == name) t = &c;
      }
      if (t == nullptr) {
        return absl::DataLossError(
            absl::StrCat(path, ": checkpoint has no tensor '", name, "'"));
      }
      const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
      if (t->dtype() != MNT_DTYPE_F32 || dims != p.dims ||
          t->data().size() != static_cast<size_t>(p.numel) * sizeof(float)) {
        return absl::FailedPreconditionError(absl::StrCat(
            path, ": tensor '", name, "' has a different shape or type than the model's"));
      }
      found.push_back(t);
    }
  }
  SamplerState ss{ckpt.sampler_seed(), ckpt.sampler_epoch(), ckpt.sampler_cursor()};
  BatchSampler restored_sampler(train_data_->size(), config_.seed());
  if (auto s = restored_sampler.SetState(ss); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }
  int64_t applied = 0;
  if (auto a = ckpt.metadata().find(kAppliedStepsKey); a != ckpt.metadata().end()) {
    applied = std::stoll(a->second);
  }

  size_t k = 0;
  for (Param& p : params_) {
    const sdk::DeviceBuffer* targets[3] = {mixed_ ? &p.master : &p.weights,
                                           p.state1.data() ? &p.state1 : nullptr,
                                           p.state2.data() ? &p.state2 : nullptr};
    for (const sdk::DeviceBuffer* b : targets) {
      if (b == nullptr) continue;
      const std::string& bytes = found[k++]->data();
      if (auto s = FromSdk(client_.ToDevice(b->data(), bytes.data(), bytes.size()));
          !s.ok())
        return s;
    }
  }
  if (auto s = SyncWorkingWeights(); !s.ok()) return s;

  MNT_LossScaler_SetState_Args set{};
  set.struct_size = MNT_LossScaler_SetState_Args_STRUCT_SIZE;
  set.scaler = scaler_;
  set.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
  set.state.scale = ckpt.loss_scale();
  set.state.growth_tracker = ckpt.loss_scale_growth_tracker();
  set.state.skipped_steps = ckpt.loss_scale_skipped_steps();
  if (auto s = StatusFromPluginError(
          precision_plugin_, precision_plugin_->precision->LossScaler_SetState(&set));
      !s.ok())
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  *sampler_ = std::move(restored_sampler);
  step_ = ckpt.step();
  applied_steps_ = applied;
  // Device loss scaling: scale, tracker and Adam's step counters from the
  // restored plugin state.
  if (device_scaling_) return SyncScalerToDevice();
  return absl::OkStatus();
}

}  // namespace mnt::trainer
