#include "trainer/core/parameters.h"

#include <algorithm>

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
    uint64_t seed, ParamShard shard) {
  std::unique_ptr<ParameterStore> store(new ParameterStore(client, policy));
  store->shard_ = shard;
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
    // ZeRO-1: a mixed-precision parameter another rank owns has no master
    // here; its working weights come from the owner (the trainer gathers).
    const sdk::DeviceBuffer& fp32 = store->CheckpointedWeights(p);
    if (fp32.data() == nullptr) continue;
    InitParameter(p.init, p.init_scale, seed, i, p.numel, &host);
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
  // one allocation (its memory category) holding every parameter's tensor;
  // under ZeRO-1 the masters and the optimizer state hold only this rank's
  // parameters (`sharded` kinds).
  struct Kind {
    sdk::DeviceBuffer Param::*view;
    MNT_DType dtype;
    MNT_MemoryCategory category;
    bool sharded;
  };
  std::vector<Kind> kinds = {{&Param::weights, weight_dtype_, MNT_MEMORY_WEIGHTS, false},
                             {&Param::grads, gradient_dtype_, MNT_MEMORY_GRADIENTS, false}};
  if (mixed_) {
    kinds.push_back({&Param::master, MNT_DTYPE_F32, MNT_MEMORY_MASTER_WEIGHTS, true});
    kinds.push_back({&Param::master_grads, MNT_DTYPE_F32, MNT_MEMORY_GRADIENTS, false});
  }
  kinds.push_back({&Param::state1, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE, true});
  if (optimizer_state_slots > 1) {
    kinds.push_back({&Param::state2, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE, true});
  }
  // One layout in elements for every kind: parameter i starts at the same
  // element in each buffer, and a 16-bit buffer is exactly half an fp32 one.
  // A sharded buffer is the slice [owned begin, owned end) of that layout.
  std::vector<int64_t> numels;
  for (const Param& p : params_) numels.push_back(p.numel);
  offsets_ = FlatOffsets(numels, kFlatAlignmentElements);
  flat_elements_ = offsets_.back();
  owner_ = ParamOwners(offsets_, shard_.world);
  // Each rank's parameters as one range of the flat layout (runs are
  // contiguous), found once: the trainer asks for them every step.
  owned_ranges_.assign(shard_.world, {0, 0});
  for (size_t i = 0; i < owner_.size(); ++i) {
    auto& [begin, end] = owned_ranges_[owner_[i]];
    if (begin == end) begin = offsets_[i];
    end = offsets_[i + 1];
  }
  first_owned_ = static_cast<int64_t>(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    if (owner_[i] != shard_.rank) continue;
    first_owned_ = std::min<int64_t>(first_owned_, static_cast<int64_t>(i));
    ++owned_count_;
  }
  if (sharded() && owned_count_ == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--zero_stage=1: the model's ", params_.size(), " parameter tensors (",
        num_parameters_, " parameters) leave rank ", shard_.rank, " of ", shard_.world,
        " none to own; use fewer ranks or --zero_stage=0"));
  }
  const auto [owned_begin, owned_end] = OwnedElements(shard_.rank);
  for (const Kind& kind : kinds) {
    const size_t element_bytes = sdk::DTypeSize(kind.dtype);
    const int64_t first = kind.sharded ? owned_begin : 0;
    const int64_t last = kind.sharded ? owned_end : flat_elements_;
    const size_t total = static_cast<size_t>(last - first) * element_bytes;
    flat_.emplace_back();
    if (total == 0) continue;
    if (auto s = sdk::ToAbsl(client_.Allocate(total, kind.category, &flat_.back())); !s.ok()) {
      return s;
    }
    char* base = static_cast<char*>(flat_.back().data());
    for (size_t i = 0; i < params_.size(); ++i) {
      if (kind.sharded && owner_[i] != shard_.rank) continue;  // stays empty
      // A view: owned by flat_, never freed by itself.
      params_[i].*kind.view = sdk::DeviceBuffer(
          nullptr, base + static_cast<size_t>(offsets_[i] - first) * element_bytes,
          static_cast<size_t>(params_[i].numel) * element_bytes);
    }
  }
  return absl::OkStatus();
}

std::vector<int> ParamOwners(const std::vector<int64_t>& offsets, int world) {
  std::vector<int> owners;
  const int64_t total = offsets.empty() ? 0 : offsets.back();
  const int64_t count = static_cast<int64_t>(offsets.size()) - 1;
  for (int64_t i = 0; i < count; ++i) {
    // The share of the flat elements that holds the parameter's middle...
    const int64_t middle = (offsets[i] + offsets[i + 1]) / 2;
    int64_t owner = total > 0 ? middle * world / total : 0;
    // ...but with a parameter for every rank where there are enough: the
    // first parameters go one per rank at least, and so do the last.
    owner = std::max<int64_t>(owner, world - (count - i));
    owner = std::min<int64_t>({owner, i, world - 1});
    if (!owners.empty()) {
      owner = std::max<int64_t>(owner, owners.back());      // contiguous runs
      owner = std::min<int64_t>(owner, owners.back() + 1);  // no rank skipped
    }
    owners.push_back(static_cast<int>(owner));
  }
  return owners;
}

bool ParameterStore::Owns(const Param& p) const {
  const size_t i = static_cast<size_t>(&p - params_.data());
  return i >= owner_.size() || owner_[i] == shard_.rank;
}

std::pair<int64_t, int64_t> ParameterStore::OwnedElements(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(owned_ranges_.size())) return {0, 0};
  return owned_ranges_[rank];
}

MNT_Tensor ParameterStore::WorkingWeightRange(int64_t begin, int64_t end) const {
  char* base = static_cast<char*>(flat_[0].data());
  return sdk::MakeTensor(base + static_cast<size_t>(begin) * sdk::DTypeSize(weight_dtype_),
                         weight_dtype_, {end - begin});
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
    if (!Owns(p)) continue;  // ZeRO-1: the owner's rounding is gathered
    if (auto s = sdk::ToAbsl(client_.Run(MNT_OP_CAST, {MasterWeights(p)},
                                          {WorkingWeights(p)}));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer
