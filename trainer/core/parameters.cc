#include "trainer/core/parameters.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/core/param_init.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {

ParameterStore::ParameterStore(const sdk::BackendClient& client,
                               const MNT_Precision_GetPolicy_Args& policy)
    : client_(client),
      weight_dtype_(policy.weight_dtype),
      gradient_dtype_(policy.gradient_dtype),
      mixed_(policy.master_weight_dtype != MNT_DTYPE_INVALID) {}

absl::StatusOr<std::unique_ptr<ParameterStore>> ParameterStore::Create(
    const sdk::ModelClient& model, const sdk::BackendClient& client,
    const MNT_Precision_GetPolicy_Args& policy, int optimizer_state_slots,
    uint64_t seed) {
  std::unique_ptr<ParameterStore> store(new ParameterStore(client, policy));
  int64_t count = 0;
  if (auto s = sdk::ToAbsl(model.ParamCount(&count)); !s.ok()) return s;
  store->params_.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    sdk::ParamSpec spec;
    if (auto s = sdk::ToAbsl(model.GetParamSpec(i, &spec)); !s.ok()) return s;
    Param& p = store->params_[i];
    p.name = spec.name ? spec.name : absl::StrCat("param", i);
    p.dims = spec.dims;
    // The model plugin's numbers: checked before they size any allocation.
    p.numel = 1;
    for (int64_t d : p.dims) {
      if (d < 1 || __builtin_mul_overflow(p.numel, d, &p.numel) ||
          p.numel > (int64_t{1} << 40)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "model parameter '", p.name, "' has invalid dims [", absl::StrJoin(p.dims, ","),
            "]"));
      }
    }
    p.init = spec.init;
    p.init_scale = spec.init_scale;
    p.weight_decay = spec.weight_decay;
    store->num_parameters_ += p.numel;
  }
  if (auto s = store->AllocateFlat(optimizer_state_slots); !s.ok()) return s;

  std::vector<float> host;
  for (int64_t i = 0; i < count; ++i) {
    Param& p = store->params_[i];
    // Initial values drawn on the host in fp32, then rounded once into the
    // working dtype (SyncWorkingWeights): every backend starts from the
    // same bits. Without a master copy the working weights are fp32.
    InitParameter(p.init, p.init_scale, seed, i, p.numel, &host);
    const sdk::DeviceBuffer& fp32 = store->CheckpointedWeights(p);
    absl::Status s = sdk::ToAbsl(
        client.ToDevice(fp32.data(), host.data(), p.numel * sizeof(float)));
    const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
    for (const sdk::DeviceBuffer* state : {&p.state1, &p.state2}) {
      if (!s.ok() || state->data() == nullptr) continue;
      s = sdk::ToAbsl(client.Run(MNT_OP_FILL, {},
                                  {p.Tensor(*state, MNT_DTYPE_F32)}, &zero));
    }
    if (!s.ok()) return s;
  }
  if (auto s = store->SyncWorkingWeights(); !s.ok()) return s;
  return store;
}

absl::Status ParameterStore::AllocateFlat(int optimizer_state_slots) {
  // Every kind of per-parameter buffer the policy and optimizer need, each
  // one allocation (its memory category) holding every parameter's tensor.
  struct Kind {
    sdk::DeviceBuffer Param::*view;
    MNT_DType dtype;
    MNT_MemoryCategory category;
  };
  std::vector<Kind> kinds = {{&Param::weights, weight_dtype_, MNT_MEMORY_WEIGHTS},
                             {&Param::grads, gradient_dtype_, MNT_MEMORY_GRADIENTS}};
  if (mixed_) {
    kinds.push_back({&Param::master, MNT_DTYPE_F32, MNT_MEMORY_MASTER_WEIGHTS});
    kinds.push_back({&Param::master_grads, MNT_DTYPE_F32, MNT_MEMORY_GRADIENTS});
  }
  kinds.push_back({&Param::state1, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE});
  if (optimizer_state_slots > 1) {
    kinds.push_back({&Param::state2, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE});
  }
  // One layout in elements for every kind: parameter i starts at the same
  // element in each buffer, and a 16-bit buffer is exactly half an fp32 one.
  std::vector<int64_t> numels;
  for (const Param& p : params_) numels.push_back(p.numel);
  const std::vector<int64_t> offsets = FlatOffsets(numels, kFlatAlignmentElements);
  flat_elements_ = offsets.back();
  for (const Kind& kind : kinds) {
    const size_t element_bytes = sdk::DTypeSize(kind.dtype);
    const size_t total = static_cast<size_t>(offsets.back()) * element_bytes;
    flat_.emplace_back();
    if (total == 0) continue;
    if (auto s = sdk::ToAbsl(client_.Allocate(total, kind.category, &flat_.back())); !s.ok()) {
      return s;
    }
    char* base = static_cast<char*>(flat_.back().data());
    for (size_t i = 0; i < params_.size(); ++i) {
      // A view: owned by flat_, never freed by itself.
      params_[i].*kind.view =
          sdk::DeviceBuffer(nullptr, base + static_cast<size_t>(offsets[i]) * element_bytes,
                            static_cast<size_t>(params_[i].numel) * element_bytes);
    }
  }
  return absl::OkStatus();
}

std::vector<int64_t> FlatOffsets(const std::vector<int64_t>& numels, int64_t alignment) {
  std::vector<int64_t> offsets;
  int64_t at = 0;
  for (int64_t n : numels) {
    offsets.push_back(at);
    at += n;
    at = (at + alignment - 1) / alignment * alignment;
  }
  offsets.push_back(at);
  return offsets;
}

std::vector<MNT_Tensor> ParameterStore::WeightTensors() const {
  std::vector<MNT_Tensor> out;
  for (const Param& p : params_) out.push_back(WorkingWeights(p));
  return out;
}

std::vector<MNT_Tensor> ParameterStore::GradTensors() const {
  std::vector<MNT_Tensor> out;
  for (const Param& p : params_) out.push_back(p.Tensor(p.grads, gradient_dtype_));
  return out;
}

MNT_Tensor ParameterStore::OptimizerGrad(const Param& p) const {
  return mixed_ ? p.Tensor(p.master_grads, MNT_DTYPE_F32)
                : p.Tensor(p.grads, gradient_dtype_);
}

MNT_Tensor ParameterStore::FlatOptimizerGrads() const {
  // flat_ follows AllocateFlat's kinds: weights, grads, then (mixed)
  // master, master_grads.
  const sdk::DeviceBuffer& b = mixed_ ? flat_[3] : flat_[1];
  return sdk::MakeTensor(b.data(), mixed_ ? MNT_DTYPE_F32 : gradient_dtype_, {flat_elements_});
}

std::vector<MNT_Tensor> ParameterStore::OptimizerGradTensors() const {
  std::vector<MNT_Tensor> out;
  for (const Param& p : params_) out.push_back(OptimizerGrad(p));
  return out;
}

MNT_Tensor ParameterStore::MasterWeights(const Param& p) const {
  return p.Tensor(CheckpointedWeights(p), MNT_DTYPE_F32);
}

MNT_Tensor ParameterStore::WorkingWeights(const Param& p) const {
  return p.Tensor(p.weights, weight_dtype_);
}

absl::Status ParameterStore::AccumulateMasterGradients(int64_t micro) {
  if (!mixed_) return absl::OkStatus();
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  for (const Param& p : params_) {
    const MNT_Tensor g = p.Tensor(p.grads, gradient_dtype_);
    const MNT_Tensor mg = p.Tensor(p.master_grads, MNT_DTYPE_F32);
    const sdk::Status s = micro == 0 ? client_.Run(MNT_OP_CAST, {g}, {mg})
                                     : client_.Run(MNT_OP_ADD, {g, mg}, {mg}, &add);
    if (!s.ok()) return sdk::ToAbsl(s);
  }
  return absl::OkStatus();
}

absl::Status ParameterStore::SyncWorkingWeights() {
  if (!mixed_) return absl::OkStatus();
  for (const Param& p : params_) {
    if (auto s = sdk::ToAbsl(client_.Run(MNT_OP_CAST, {MasterWeights(p)},
                                          {WorkingWeights(p)}));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer
