#include "trainer/core/parameters.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plugins/backends/common/float_convert.h"
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
    uint64_t seed, ParamShard shard, const std::vector<bool>& frozen) {
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
    p.stacked_dims = spec.stacked_dims;
    p.role = spec.role;
    p.frozen = static_cast<size_t>(i) < frozen.size() && frozen[i];
    store->num_parameters_ += p.numel;
    if (!p.frozen) store->num_trainable_ += p.numel;
  }
  if (store->num_trainable_ == 0) {
    return absl::InvalidArgumentError("--freeze leaves no parameter to train");
  }
  if (store->num_trainable_ != store->num_parameters_ && shard.zero1 && shard.world > 1) {
    // ZeRO-1 gathers working weights by the shares of the trainable layout.
    return absl::InvalidArgumentError(
        "--freeze with --zero_stage=1 is not supported; use --zero_stage=0");
  }
  if (auto s = store->AllocateFlat(optimizer_state_slots); !s.ok()) return s;
  if (auto s = store->Initialise(seed); !s.ok()) return s;
  return store;
}

absl::Status ParameterStore::AllocateFlat(int optimizer_state_slots) {
  // One layout in elements for every kind: parameter i starts at the same
  // element in each buffer, and a 16-bit buffer is exactly half an fp32 one.
  // Frozen parameters take no element of it; the working weights then have
  // their own offsets.
  std::vector<int64_t> numels, all_numels;
  for (const Param& p : params_) {
    numels.push_back(p.frozen ? 0 : p.numel);
    all_numels.push_back(p.numel);
  }
  layout_ = MakeShardLayout(
      numels, shard_,
      static_cast<int64_t>(sdk::DTypeSize(mixed_ ? MNT_DTYPE_F32 : gradient_dtype_)));
  const std::vector<int64_t>& offsets = layout_.offsets();
  if (num_trainable_ == num_parameters_) {
    weight_offsets_ = offsets;
    weight_elements_ = layout_.total();
  } else {
    weight_offsets_ = FlatOffsets(all_numels, kFlatAlignmentElements);
    weight_elements_ = weight_offsets_.back();
  }
  if (shard_.world > 1) share_ = layout_.PiecesOf(shard_.rank);
  if (sharded() && share_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--zero_stage=1: the model's ", num_parameters_, " parameters leave rank ", shard_.rank,
        " of ", shard_.world, " none to own; use fewer ranks or --zero_stage=0"));
  }
  if (sharded()) {
    steps_ = share_;
  } else {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].frozen) continue;
      const int64_t n = params_[i].numel;
      steps_.push_back({static_cast<int64_t>(i), 0, n, offsets[i], offsets[i]});
    }
  }

  // Every kind of per-parameter buffer the policy and optimizer need, each
  // one allocation (its memory category); under ZeRO-1 the masters, the
  // optimizer state and the averaged gradient hold this rank's share only
  // (`sharded` kinds, reached through pieces, not Param's views).
  struct Kind {
    sdk::DeviceBuffer* flat;
    sdk::DeviceBuffer Param::*view;  // null: no per-parameter view
    MNT_DType dtype;
    MNT_MemoryCategory category;
    bool sharded;
  };
  std::vector<Kind> kinds = {
      {&weights_flat_, &Param::weights, weight_dtype_, MNT_MEMORY_WEIGHTS, false},
      {&grads_flat_, &Param::grads, gradient_dtype_, MNT_MEMORY_GRADIENTS, false}};
  if (mixed_) {
    kinds.push_back({&master_flat_, &Param::master, MNT_DTYPE_F32, MNT_MEMORY_MASTER_WEIGHTS,
                     true});
    kinds.push_back({&master_grads_flat_, &Param::master_grads, MNT_DTYPE_F32,
                     MNT_MEMORY_GRADIENTS, false});
  }
  // No slots: the optimizer keeps its own state (optimizer_state.h).
  if (optimizer_state_slots > 0) {
    kinds.push_back(
        {&state_flat_[0], &Param::state1, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE, true});
  }
  if (optimizer_state_slots > 1) {
    kinds.push_back(
        {&state_flat_[1], &Param::state2, MNT_DTYPE_F32, MNT_MEMORY_OPTIMIZER_STATE, true});
  }
  if (sharded()) {
    kinds.push_back({&shard_grads_flat_, nullptr, mixed_ ? MNT_DTYPE_F32 : gradient_dtype_,
                     MNT_MEMORY_GRADIENTS, true});
  }
  for (const Kind& kind : kinds) {
    const bool share_only = kind.sharded && sharded();
    const size_t element_bytes = sdk::DTypeSize(kind.dtype);
    // Data parallel: the layout's padded total, so every bucket splits evenly.
    const bool weights = kind.flat == &weights_flat_;
    const int64_t elements =
        share_only ? layout_.share() : weights ? weight_elements_ : layout_.total();
    const size_t total = static_cast<size_t>(elements) * element_bytes;
    if (total == 0) continue;
    if (auto s = sdk::ToAbsl(client_.Allocate(total, kind.category, kind.flat)); !s.ok()) {
      return s;
    }
    if (share_only || kind.view == nullptr) continue;
    char* base = static_cast<char*>(kind.flat->data());
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].frozen && !weights) continue;  // no such buffer
      // A view: owned by the flat buffer, never freed by itself.
      const int64_t at = weights ? weight_offsets_[i] : offsets[i];
      params_[i].*kind.view =
          sdk::DeviceBuffer(nullptr, base + static_cast<size_t>(at) * element_bytes,
                            static_cast<size_t>(params_[i].numel) * element_bytes);
    }
  }
  return absl::OkStatus();
}

absl::Status ParameterStore::Initialise(uint64_t seed) {
  // Initial values drawn on the host in fp32, then rounded once into the
  // working dtype (SyncWorkingWeights): every backend starts from the same
  // bits. Without a master copy the working weights are fp32. ZeRO-1: every
  // rank draws every parameter and keeps its pieces' masters; the other
  // shares' working weights come from their ranks (the trainer gathers).
  std::vector<float> host;
  int64_t drawn = -1;
  for (const ParamPiece& piece : steps_) {
    const Param& p = params_[piece.param];
    if (drawn != piece.param) {
      InitParameter(p.init, p.init_scale, seed, piece.param, p.numel, &host);
      drawn = piece.param;
    }
    const MNT_Tensor master = PieceMaster(piece);
    if (auto s = sdk::ToAbsl(client_.ToDevice(master.data, host.data() + piece.first,
                                              piece.numel * sizeof(float)));
        !s.ok())
      return s;
  }
  const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
  for (const sdk::DeviceBuffer& state : state_flat_) {
    if (state.data() == nullptr) continue;
    const MNT_Tensor all = Range(state, MNT_DTYPE_F32, 0,
                                 static_cast<int64_t>(state.size() / sizeof(float)));
    if (auto s = sdk::ToAbsl(client_.Run(MNT_OP_FILL, {}, {all}, &zero)); !s.ok()) return s;
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    if (!p.frozen) continue;
    InitParameter(p.init, p.init_scale, seed, static_cast<int64_t>(i), p.numel, &host);
    if (auto s = WriteFrozenWeights(p, host.data()); !s.ok()) return s;
  }
  return SyncWorkingWeights();
}

absl::Status ParameterStore::WriteFrozenWeights(const Param& p, const float* values) {
  const size_t n = static_cast<size_t>(p.numel);
  if (weight_dtype_ == MNT_DTYPE_F32) {
    return sdk::ToAbsl(client_.ToDevice(p.weights.data(), values, n * sizeof(float)));
  }
  std::vector<uint16_t> bits(n);
  for (size_t i = 0; i < n; ++i) {
    bits[i] = weight_dtype_ == MNT_DTYPE_BF16 ? FloatToBf16Bits(values[i])
                                              : FloatToHalfBits(values[i]);
  }
  return sdk::ToAbsl(client_.ToDevice(p.weights.data(), bits.data(), n * sizeof(uint16_t)));
}

absl::Status ParameterStore::ReadFrozenWeights(const Param& p, float* values) const {
  const size_t n = static_cast<size_t>(p.numel);
  if (weight_dtype_ == MNT_DTYPE_F32) {
    return sdk::ToAbsl(client_.ToHost(values, p.weights.data(), n * sizeof(float)));
  }
  std::vector<uint16_t> bits(n);
  if (auto s = sdk::ToAbsl(client_.ToHost(bits.data(), p.weights.data(), n * sizeof(uint16_t)));
      !s.ok())
    return s;
  for (size_t i = 0; i < n; ++i) {
    values[i] = weight_dtype_ == MNT_DTYPE_BF16 ? Bf16BitsToFloat(bits[i])
                                                : HalfBitsToFloat(bits[i]);
  }
  return absl::OkStatus();
}

MNT_Tensor ParameterStore::Range(const sdk::DeviceBuffer& flat, MNT_DType dtype, int64_t at,
                                 int64_t n) {
  char* base = static_cast<char*>(flat.data());
  return sdk::MakeTensor(base + static_cast<size_t>(at) * sdk::DTypeSize(dtype), dtype, {n});
}

MNT_Tensor ParameterStore::PieceGrad(const ParamPiece& piece) const {
  if (sharded()) {
    return Range(shard_grads_flat_, mixed_ ? MNT_DTYPE_F32 : gradient_dtype_, piece.shard,
                 piece.numel);
  }
  const Param& p = params_[piece.param];
  if (piece.numel == p.numel) return OptimizerGrad(p);
  return FlatOptimizerGrads(piece.flat, piece.flat + piece.numel);
}

MNT_Tensor ParameterStore::PieceMaster(const ParamPiece& piece) const {
  const Param& p = params_[piece.param];
  if (!mixed_) {  // the working weights are the fp32 master
    if (piece.numel == p.numel) return WorkingWeights(p);
    return Range(weights_flat_, weight_dtype_, piece.flat, piece.numel);
  }
  if (sharded()) return Range(master_flat_, MNT_DTYPE_F32, piece.shard, piece.numel);
  if (piece.numel == p.numel) return p.Tensor(p.master, MNT_DTYPE_F32);
  return Range(master_flat_, MNT_DTYPE_F32, piece.flat, piece.numel);
}

MNT_Tensor ParameterStore::PieceState(const ParamPiece& piece, int slot) const {
  const Param& p = params_[piece.param];
  const sdk::DeviceBuffer& flat = state_flat_[slot];
  if (sharded()) return Range(flat, MNT_DTYPE_F32, piece.shard, piece.numel);
  if (piece.numel == p.numel) return p.Tensor(slot == 0 ? p.state1 : p.state2, MNT_DTYPE_F32);
  return Range(flat, MNT_DTYPE_F32, piece.flat, piece.numel);
}

MNT_Tensor ParameterStore::PieceWorking(const ParamPiece& piece) const {
  const Param& p = params_[piece.param];
  if (piece.numel == p.numel) return WorkingWeights(p);
  return Range(weights_flat_, weight_dtype_, piece.flat, piece.numel);
}

bool ParameterStore::splits_parameters() const {
  return std::any_of(steps_.begin(), steps_.end(), [this](const ParamPiece& piece) {
    return piece.numel != params_[piece.param].numel;
  });
}

std::vector<MNT_Tensor> ParameterStore::UnscaledGradTensors() const {
  if (!sharded()) return OptimizerGradTensors();
  std::vector<MNT_Tensor> out;
  for (const ParamPiece& piece : steps_) out.push_back(PieceGrad(piece));
  return out;
}

std::vector<MNT_Tensor> ParameterStore::NormGradTensors() const {
  if (!norm_is_partial()) return OptimizerGradTensors();
  std::vector<MNT_Tensor> out;
  for (const ParamPiece& piece : share_) out.push_back(PieceGrad(piece));
  return out;
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

MNT_Tensor ParameterStore::FlatOptimizerGrads(int64_t begin, int64_t end) const {
  const sdk::DeviceBuffer& flat = mixed_ ? master_grads_flat_ : grads_flat_;
  const MNT_DType dtype = mixed_ ? MNT_DTYPE_F32 : gradient_dtype_;
  if (end < 0) end = static_cast<int64_t>(flat.size() / sdk::DTypeSize(dtype));
  return Range(flat, dtype, begin, end - begin);
}

MNT_Tensor ParameterStore::ShardGrads(int64_t at, int64_t n) const {
  return Range(shard_grads_flat_, mixed_ ? MNT_DTYPE_F32 : gradient_dtype_, at, n);
}

MNT_Tensor ParameterStore::FlatWorkingWeights(int64_t begin, int64_t end) const {
  return Range(weights_flat_, weight_dtype_, begin, end - begin);
}

std::vector<MNT_Tensor> ParameterStore::OptimizerGradTensors() const {
  std::vector<MNT_Tensor> out;
  for (const Param& p : params_) {
    if (!p.frozen) out.push_back(OptimizerGrad(p));
  }
  return out;
}

MNT_Tensor ParameterStore::WorkingWeights(const Param& p) const {
  return p.Tensor(p.weights, weight_dtype_);
}

absl::Status ParameterStore::AccumulateMasterGradients(int64_t micro) {
  if (!mixed_) return absl::OkStatus();
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  for (const Param& p : params_) {
    if (p.frozen) continue;
    const MNT_Tensor g = p.Tensor(p.grads, gradient_dtype_);
    const MNT_Tensor mg = p.Tensor(p.master_grads, MNT_DTYPE_F32);
    const sdk::Status s = micro == 0 ? client_.Run(MNT_OP_CAST, {g}, {mg})
                                     : client_.Run(MNT_OP_ADD, {g, mg}, {mg}, &add);
    if (!s.ok()) return sdk::ToAbsl(s);
  }
  return absl::OkStatus();
}

absl::Status ParameterStore::AccumulateMasterGradients(int64_t micro, int64_t param,
                                                       int64_t first, int64_t count) {
  if (!mixed_) return absl::OkStatus();
  const int64_t at = layout_.offsets()[param] + first;
  const MNT_Tensor g = Range(grads_flat_, gradient_dtype_, at, count);
  const MNT_Tensor mg = Range(master_grads_flat_, MNT_DTYPE_F32, at, count);
  const MNT_AddParams add{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  return sdk::ToAbsl(micro == 0 ? client_.Run(MNT_OP_CAST, {g}, {mg})
                                : client_.Run(MNT_OP_ADD, {g, mg}, {mg}, &add));
}

absl::Status ParameterStore::SyncWorkingWeights() {
  if (!mixed_) return absl::OkStatus();
  for (const ParamPiece& piece : steps_) {
    if (auto s = sdk::ToAbsl(client_.Run(MNT_OP_CAST, {PieceMaster(piece)},
                                          {PieceWorking(piece)}));
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

}  // namespace mnt::trainer
