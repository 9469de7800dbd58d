#include "trainer/core/optimizer.h"

#include <vector>

#include "trainer/core/device_scalars.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::trainer {
namespace {

bool IsAdam(const mantissa::OptimizerConfig& config) {
  return config.name() != "sgd";  // adamw | adam
}

}  // namespace

int Optimizer::StateSlots(const mantissa::OptimizerConfig& config) {
  return IsAdam(config) ? 2 : 1;
}

bool Optimizer::UsesMultiTensor(const mantissa::OptimizerConfig& config,
                                const sdk::BackendInstance& backend) {
  if (config.multi_tensor_optimizer() == "off") return false;
  if (backend.plugin()->abi_version.minor_version < 6) return false;
  return backend.Supports(IsAdam(config) ? MNT_OP_MULTI_ADAMW_STEP : MNT_OP_MULTI_SGD_STEP);
}

bool Optimizer::TakesDeviceLr(const sdk::BackendInstance& backend) {
  return backend.plugin()->abi_version.minor_version >= 7;
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
  for (const Param& p : params->params()) {
    weight_decays_.push_back(p.weight_decay ? static_cast<float>(config.weight_decay()) : 0.0f);
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
  if (!o->device_step_counters_) return o;
  for (Param& p : params->params()) {
    if (auto s = sdk::ToAbsl(client.Allocate(
            sizeof(int32_t), MNT_MEMORY_OPTIMIZER_STATE, &p.step_counter));
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
                                       const MNT_Tensor& multiplier) {
  // The operands in the single-tensor loop's order, with absent ones as
  // NULL tensors so every tensor keeps its fixed stride.
  const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {1});
  std::vector<MNT_Tensor> in{found_inf, multiplier}, out;
  for (const Param& p : params_->params()) {
    in.push_back(params_->OptimizerGrad(p));
    if (adam_) in.push_back(device_step_counters_ ? I32Scalar(p.step_counter) : absent);
    out.push_back(params_->MasterWeights(p));
    out.push_back(p.Tensor(p.state1, MNT_DTYPE_F32));
    if (adam_) out.push_back(p.Tensor(p.state2, MNT_DTYPE_F32));
    out.push_back(params_->mixed() ? params_->WorkingWeights(p) : absent);
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
                                 weight_decays_.data()};
    return client_.Run(MNT_OP_MULTI_ADAMW_STEP, in, out, &a);
  }
  const MNT_MultiSgdParams a{MNT_MultiSgdParams_STRUCT_SIZE, ParamsLr(lr),
                             static_cast<float>(config_.momentum()), 0.0f,
                             config_.nesterov() ? 1 : 0, n, nullptr, weight_decays_.data()};
  return client_.Run(MNT_OP_MULTI_SGD_STEP, in, out, &a);
}

absl::Status Optimizer::Step(double lr, const MNT_Tensor& found_inf,
                             const MNT_Tensor& multiplier) {
  if (multi_tensor_) {
    if (auto s = MultiTensorStep(static_cast<float>(lr), found_inf, multiplier); !s.ok()) {
      return sdk::ToAbsl(s);
    }
    if (!skips_on_device_) ++applied_steps_;
    return absl::OkStatus();
  }
  const MNT_Tensor absent = sdk::MakeTensor(nullptr, MNT_DTYPE_I32, {1});
  for (const Param& p : params_->params()) {
    std::vector<MNT_Tensor> in{params_->OptimizerGrad(p), found_inf, multiplier};
    if (adam_ && (device_step_counters_ || device_lr_)) {
      in.push_back(device_step_counters_ ? I32Scalar(p.step_counter) : absent);
    }
    if (device_lr_) in.push_back(LrInput());  // SGD in[3], AdamW in[4] (ABI 1.7)
    std::vector<MNT_Tensor> out{params_->MasterWeights(p),
                                p.Tensor(p.state1, MNT_DTYPE_F32)};
    if (adam_) out.push_back(p.Tensor(p.state2, MNT_DTYPE_F32));
    // The rounded working copy, written in the same kernel.
    if (params_->mixed()) out.push_back(params_->WorkingWeights(p));
    const float wd = p.weight_decay ? static_cast<float>(config_.weight_decay()) : 0.0f;
    sdk::Status s;
    if (adam_) {
      const MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE,
                              ParamsLr(lr),
                              static_cast<float>(config_.beta1()),
                              static_cast<float>(config_.beta2()),
                              static_cast<float>(config_.eps()),
                              wd,
                              ParamsStep()};
      s = client_.Run(MNT_OP_ADAMW_STEP, in, out, &a);
    } else {
      const MNT_SgdParams a{MNT_SgdParams_STRUCT_SIZE, ParamsLr(lr),
                            static_cast<float>(config_.momentum()), wd,
                            config_.nesterov() ? 1 : 0};
      s = client_.Run(MNT_OP_SGD_STEP, in, out, &a);
    }
    if (!s.ok()) return sdk::ToAbsl(s);
  }
  // A host-decided step is an applied one; on the device the counters (and
  // the sync) keep the count.
  if (!skips_on_device_) ++applied_steps_;
  return absl::OkStatus();
}

absl::Status Optimizer::WriteDeviceStepCounters(int64_t applied) {
  for (const Param& p : params_->params()) {
    if (auto s = WriteScalar<int32_t>(client_, p.step_counter.data(),
                          static_cast<int32_t>(applied));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<int32_t> Optimizer::ReadDeviceStepCounter() const {
  return ReadScalar<int32_t>(client_, params_->params().front().step_counter.data());
}

}  // namespace mnt::trainer
