#include "trainer/core/training_checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/parallel/rank_agreement.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {
namespace {

constexpr char kAppliedStepsKey[] = "applied_steps";
constexpr char kOptimizerKey[] = "optimizer";
constexpr char kPrecisionOptionsKey[] = "precision_options";
constexpr char kState1Prefix[] = "opt.state1/";
constexpr char kState2Prefix[] = "opt.state2/";
// --stochastic_rounding: the seed of the random bits, and each bf16 working
// copy (it is no function of the master alone, so a resume cannot recompute it).
constexpr char kRoundingSeedKey[] = "stochastic_rounding_seed";
constexpr char kWorkingPrefix[] = "working/";

// What a checkpoint saves of every parameter, in file order: the fp32
// weights, then the optimizer state it has, all fp32.
struct SavedKind {
  const char* prefix;
  int state;  // -1: the weights; else the optimizer state slot
};

std::vector<SavedKind> SavedKinds(const ParameterStore& params) {
  std::vector<SavedKind> kinds{{"", -1}};
  if (params.state_slots() > 0) kinds.push_back({kState1Prefix, 0});
  if (params.state_slots() > 1) kinds.push_back({kState2Prefix, 1});
  return kinds;
}

// The memory-light optimizers' state (adamw8bit's codes and block absmax,
// Adafactor's rows and columns): one tensor per parameter and state tensor,
// in its own dtype, 1-D, appended after the parameters in (parameter,
// state tensor) order. Under ZeRO-1 each rank holds its pieces' parts
// (whole blocks) and every rank gathers all of them, as for the fp32 slots.
absl::Status CaptureOwnState(const TrainingCheckpoint::Parts& parts, CheckpointData* ckpt) {
  const OptimizerState* state = parts.optimizer->own_state();
  if (state == nullptr) return absl::OkStatus();
  const ParameterStore& params = *parts.params;
  std::vector<std::vector<std::string*>> bytes(params.params().size());
  for (size_t i = 0; i < params.params().size(); ++i) {
    const Param& p = params.params()[i];
    for (const StateTensorSpec& spec : state->specs(static_cast<int64_t>(i))) {
      TensorData* t = ckpt->add_tensors();
      t->set_name(spec.prefix + p.name);
      t->set_dtype(spec.dtype);
      t->add_dims(spec.count);
      bytes[i].push_back(t->mutable_data());
      bytes[i].back()->resize(spec.bytes());
    }
  }
  const std::vector<ParamPiece>& pieces = params.steps();
  std::string mine;
  for (size_t j = 0; j < pieces.size(); ++j) {
    const ParamPiece& piece = pieces[j];
    const std::vector<StateTensorSpec>& specs = state->specs(piece.param);
    for (size_t k = 0; k < specs.size(); ++k) {
      const auto [offset, n] =
          OptimizerState::ByteRange(piece, params.params()[piece.param].numel, specs[k]);
      char* to = &(*bytes[piece.param][k])[offset];
      if (params.sharded()) {
        const size_t at = mine.size();
        mine.resize(at + n);
        to = &mine[at];
      }
      if (auto s = sdk::ToAbsl(parts.client->ToHost(to, state->Tensor(j, k).data, n)); !s.ok())
        return s;
    }
  }
  if (!params.sharded()) return absl::OkStatus();
  auto all = parts.all_gather(mine);
  if (!all.ok()) return all.status();
  for (int r = 0; r < static_cast<int>(all->size()); ++r) {
    const std::string& part = (*all)[r];
    size_t at = 0;
    for (const ParamPiece& piece : params.layout().PiecesOf(r)) {
      const std::vector<StateTensorSpec>& specs = state->specs(piece.param);
      for (size_t k = 0; k < specs.size(); ++k) {
        const auto [offset, n] =
            OptimizerState::ByteRange(piece, params.params()[piece.param].numel, specs[k]);
        if (part.size() - at < n) {
          return absl::DataLossError(absl::StrCat("ZeRO-1: rank ", r,
                                                  "'s optimizer state part is short"));
        }
        std::memcpy(&(*bytes[piece.param][k])[offset], &part[at], n);
        at += n;
      }
    }
    if (at != part.size()) {
      return absl::DataLossError(absl::StrCat("ZeRO-1: rank ", r, "'s optimizer state part is ",
                                              part.size(), " bytes, expected ", at));
    }
  }
  return absl::OkStatus();
}

// The saved state tensor of each (parameter, state tensor), checked against
// what this run's optimizer keeps, before anything is written.
absl::Status FindOwnState(const CheckpointData& ckpt, const TrainingCheckpoint::Parts& parts,
                          const std::string& path,
                          std::vector<std::vector<const TensorData*>>* found) {
  const OptimizerState* state = parts.optimizer->own_state();
  if (state == nullptr) return absl::OkStatus();
  const ParameterStore& params = *parts.params;
  found->resize(params.params().size());
  for (size_t i = 0; i < params.params().size(); ++i) {
    const Param& p = params.params()[i];
    for (const StateTensorSpec& spec : state->specs(static_cast<int64_t>(i))) {
      const std::string name = spec.prefix + p.name;
      const TensorData* t = nullptr;
      for (const TensorData& c : ckpt.tensors()) {
        if (c.name() == name) t = &c;
      }
      if (t == nullptr) {
        return absl::DataLossError(absl::StrCat(
            path, ": checkpoint has no tensor '", name, "' (the state of --optimizer=",
            parts.config->optimizer().name(), " with --optimizer_options='",
            parts.config->optimizer().optimizer_options(), "')"));
      }
      if (t->dtype() != spec.dtype || t->dims_size() != 1 || t->dims(0) != spec.count ||
          t->data().size() != spec.bytes()) {
        return absl::FailedPreconditionError(absl::StrCat(
            path, ": tensor '", name, "' is not the optimizer state this run keeps (",
            sdk::DTypeName(spec.dtype), " [", spec.count, "]); was it written with other "
            "--optimizer_options?"));
      }
      (*found)[i].push_back(t);
    }
  }
  return absl::OkStatus();
}

absl::Status RestoreOwnState(const TrainingCheckpoint::Parts& parts,
                             const std::vector<std::vector<const TensorData*>>& found) {
  const OptimizerState* state = parts.optimizer->own_state();
  if (state == nullptr) return absl::OkStatus();
  const ParameterStore& params = *parts.params;
  const std::vector<ParamPiece>& pieces = params.steps();
  for (size_t j = 0; j < pieces.size(); ++j) {
    const ParamPiece& piece = pieces[j];
    const std::vector<StateTensorSpec>& specs = state->specs(piece.param);
    for (size_t k = 0; k < specs.size(); ++k) {
      const auto [offset, n] =
          OptimizerState::ByteRange(piece, params.params()[piece.param].numel, specs[k]);
      const std::string& bytes = found[piece.param][k]->data();
      if (auto s = sdk::ToAbsl(
              parts.client->ToDevice(state->Tensor(j, k).data, bytes.data() + offset, n));
          !s.ok())
        return s;
    }
  }
  return absl::OkStatus();
}

// "k=v" items trimmed and sorted: the same options however they are written.
std::vector<std::string> CanonicalOptions(const std::string& options) {
  std::vector<std::string> items;
  for (absl::string_view item : absl::StrSplit(options, ',', absl::SkipWhitespace())) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    for (std::string& part : kv) absl::StripAsciiWhitespace(&part);
    items.push_back(absl::StrJoin(kv, "="));
  }
  std::sort(items.begin(), items.end());
  return items;
}

std::string DimsText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

// ZeRO-1 keeps this kind as shares (the ranks' pieces); else every rank
// holds every parameter's tensor of it whole.
bool Sharded(const ParameterStore& params, const SavedKind& kind) {
  return params.sharded() && (kind.state >= 0 || params.mixed());
}

// A whole parameter's buffer of an unsharded kind.
const sdk::DeviceBuffer& WholeBuffer(const ParameterStore& params, const Param& p,
                                     const SavedKind& kind) {
  if (kind.state < 0) return params.CheckpointedWeights(p);
  return kind.state == 0 ? p.state1 : p.state2;
}

// A piece's part of a kind, on the device.
void* PieceData(const ParameterStore& params, const ParamPiece& piece, const SavedKind& kind) {
  return kind.state < 0 ? params.PieceMaster(piece).data : params.PieceState(piece, kind.state).data;
}

// The saved working copy of every parameter when the optimizer rounds it
// stochastically: none (the copies are the masters rounded to nearest), or
// one per parameter, checked against the model. A checkpoint of a run with
// round-to-nearest resumes with the masters rounded to nearest.
absl::Status FindWorkingCopies(const CheckpointData& ckpt, const ParameterStore& params,
                               const std::string& path,
                               std::vector<std::pair<const Param*, const TensorData*>>* found) {
  for (const Param& p : params.params()) {
    const std::string name = kWorkingPrefix + p.name;
    const TensorData* t = nullptr;
    for (const TensorData& c : ckpt.tensors()) {
      if (c.name() == name) t = &c;
    }
    if (t == nullptr) continue;
    const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
    if (t->dtype() != MNT_DTYPE_BF16 || dims != p.dims ||
        t->data().size() != static_cast<size_t>(p.numel) * sizeof(uint16_t)) {
      return absl::FailedPreconditionError(absl::StrCat(
          path, ": tensor '", name, "' is not the bf16 working copy of the model's '", p.name,
          "'"));
    }
    found->push_back({&p, t});
  }
  if (!found->empty() && found->size() != params.params().size()) {
    return absl::DataLossError(absl::StrCat(path, ": checkpoint has ", found->size(), " of ",
                                            params.params().size(),
                                            " working copies ('", kWorkingPrefix, "...')"));
  }
  return absl::OkStatus();
}

// ZeRO-1: fills the sharded kinds of `tensors` ([parameter][kind], whole
// and zeroed) with every rank's pieces.
absl::Status GatherShares(const TrainingCheckpoint::Parts& parts,
                          const std::vector<SavedKind>& kinds,
                          const std::vector<std::vector<TensorData*>>& tensors) {
  // This rank's pieces of every sharded kind, back to back in (piece, kind)
  // order; every rank knows every rank's pieces (the layout), so the bytes
  // need no labels.
  const ParameterStore& params = *parts.params;
  auto sharded_bytes = [&](const ParamPiece& piece) {
    size_t n = 0;
    for (const SavedKind& kind : kinds) {
      if (Sharded(params, kind)) n += static_cast<size_t>(piece.numel) * sizeof(float);
    }
    return n;
  };
  std::string mine;
  for (const ParamPiece& piece : params.steps()) {
    for (const SavedKind& kind : kinds) {
      if (!Sharded(params, kind)) continue;
      const size_t at = mine.size(), n = static_cast<size_t>(piece.numel) * sizeof(float);
      mine.resize(at + n);
      if (auto s = sdk::ToAbsl(parts.client->ToHost(&mine[at], PieceData(params, piece, kind), n));
          !s.ok())
        return s;
    }
  }
  auto all = parts.all_gather(mine);
  if (!all.ok()) return all.status();
  for (int r = 0; r < static_cast<int>(all->size()); ++r) {
    const std::string& part = (*all)[r];
    size_t at = 0;
    for (const ParamPiece& piece : params.layout().PiecesOf(r)) {
      if (part.size() - at < sharded_bytes(piece)) {
        return absl::DataLossError(
            absl::StrCat("ZeRO-1: rank ", r, "'s checkpoint part is ", part.size(), " bytes, short"));
      }
      for (size_t k = 0; k < kinds.size(); ++k) {
        if (!Sharded(params, kinds[k])) continue;
        const size_t n = static_cast<size_t>(piece.numel) * sizeof(float);
        std::string* bytes = tensors[piece.param][k]->mutable_data();
        std::memcpy(&(*bytes)[static_cast<size_t>(piece.first) * sizeof(float)], &part[at], n);
        at += n;
      }
    }
    if (at != part.size()) {
      return absl::DataLossError(absl::StrCat("ZeRO-1: rank ", r, "'s checkpoint part is ",
                                              part.size(), " bytes, expected ", at));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status TrainingCheckpoint::Save(const std::string& path, int64_t step) {
  auto ckpt = Capture(step);
  if (!ckpt.ok()) return ckpt.status();
  return Write(path, *ckpt);
}

absl::StatusOr<CheckpointData> TrainingCheckpoint::Capture(int64_t step) {
  // The plugin's scaler and the applied-step count catch up first (device
  // loss scaling); the format is the same either way.
  if (auto s = p_.scaling->SyncToPlugin(step); !s.ok()) return s;
  const mantissa::TrainConfig& config = *p_.config;
  CheckpointData ckpt;
  ckpt.set_model(config.model());
  ckpt.set_model_options(config.model_options());
  ckpt.set_precision(p_.precision_name);
  ckpt.set_step(step);
  (*ckpt.mutable_metadata())[kPrecisionOptionsKey] = config.precision_options();
  (*ckpt.mutable_metadata())[kAppliedStepsKey] =
      absl::StrCat(p_.optimizer->applied_steps());
  (*ckpt.mutable_metadata())[kOptimizerKey] = config.optimizer().name();
  const bool stochastic = p_.optimizer->stochastic_rounding();
  if (stochastic) {
    (*ckpt.mutable_metadata())[kRoundingSeedKey] = absl::StrCat(p_.optimizer->rounding_seed());
  }
  if (p_.eval_policy != nullptr) p_.eval_policy->Save(ckpt.mutable_metadata());
  const SamplerState ss = p_.sampler->state();
  ckpt.set_sampler_seed(ss.seed);
  ckpt.set_sampler_epoch(ss.epoch);
  ckpt.set_sampler_cursor(ss.cursor);

  sdk::LossScalerFullState st;
  if (auto s = sdk::ToAbsl(p_.scaler->GetFullState(&st)); !s.ok()) return s;
  ckpt.set_loss_scale(st.state.scale);
  ckpt.set_loss_scale_growth_tracker(st.state.growth_tracker);
  ckpt.set_loss_scale_skipped_steps(st.state.skipped_steps);
  ckpt.set_loss_scale_hysteresis_tracker(st.hysteresis_tracker);
  ckpt.set_precision_plugin_state(st.plugin_state);

  if (auto s = sdk::ToAbsl(p_.client->Synchronize()); !s.ok()) return s;
  if (p_.fp8 != nullptr) {
    if (auto s = p_.fp8->Save(&ckpt); !s.ok()) return s;
  }
  const ParameterStore& params = *p_.params;
  const std::vector<SavedKind> kinds = SavedKinds(params);
  // tensors[i][k]: parameter i's tensor of kind k, in the file's order.
  std::vector<std::vector<TensorData*>> tensors(params.params().size());
  for (size_t i = 0; i < params.params().size(); ++i) {
    const Param& p = params.params()[i];
    // The fp32 master is the truth; working 16-bit weights derive from it.
    // A frozen parameter has neither master nor optimizer state: its
    // working weights are saved as fp32 (exact), and no state.
    for (const SavedKind& kind : kinds) {
      if (p.frozen && kind.state >= 0) continue;
      TensorData* t = ckpt.add_tensors();
      tensors[i].push_back(t);
      t->set_name(kind.prefix + p.name);
      t->set_dtype(MNT_DTYPE_F32);
      for (int64_t d : p.dims) t->add_dims(d);
      std::string* bytes = t->mutable_data();
      bytes->resize(static_cast<size_t>(p.numel) * sizeof(float));
      if (Sharded(params, kind)) continue;  // the ranks' pieces, below
      if (p.frozen) {
        std::vector<float> values(static_cast<size_t>(p.numel));
        if (auto s = params.ReadFrozenWeights(p, values.data()); !s.ok()) return s;
        std::memcpy(bytes->data(), values.data(), bytes->size());
        continue;
      }
      if (auto s = sdk::ToAbsl(p_.client->ToHost(bytes->data(), WholeBuffer(params, p, kind).data(),
                                                  bytes->size()));
          !s.ok())
        return s;
    }
    if (!stochastic) continue;
    TensorData* t = ckpt.add_tensors();
    t->set_name(kWorkingPrefix + p.name);
    t->set_dtype(MNT_DTYPE_BF16);
    for (int64_t d : p.dims) t->add_dims(d);
    std::string* bytes = t->mutable_data();
    bytes->resize(static_cast<size_t>(p.numel) * sizeof(uint16_t));
    if (auto s = sdk::ToAbsl(p_.client->ToHost(bytes->data(), p.weights.data(), bytes->size()));
        !s.ok())
      return s;
  }
  if (params.sharded()) {
    if (auto s = GatherShares(p_, kinds, tensors); !s.ok()) return s;
  }
  if (auto s = CaptureOwnState(p_, &ckpt); !s.ok()) return s;
  return ckpt;
}

absl::Status TrainingCheckpoint::Write(const std::string& path, const CheckpointData& ckpt) {
  std::error_code ec;
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot create checkpoint directory ", dir.string(), ": ", ec.message()));
  }
  return WriteCheckpointAtomic(path, ckpt);
}

absl::Status TrainingCheckpoint::Restore(const std::string& path, int64_t* step) {
  auto read = ReadCheckpoint(path);
  if (!read.ok()) return read.status();
  const CheckpointData& ckpt = *read;
  const mantissa::TrainConfig& config = *p_.config;
  // Model options are compared by what they make, not as text: another
  // spelling of the same model (its defaults written out, another order)
  // restores when its parameters are the checkpoint's, with a note; other
  // parameters are refused below, naming both option strings.
  if (auto s = CheckCompatible(ckpt, config.model(), ckpt.model_options(), p_.precision_name);
      !s.ok())
    return s;
  const bool options_differ =
      CanonicalOptions(ckpt.model_options()) != CanonicalOptions(config.model_options());
  const std::string options_differ_text = absl::StrCat(
      "checkpoint is incompatible: it was written with --model_options=\"", ckpt.model_options(),
      "\" but this run uses --model_options=\"", config.model_options(), "\", which makes ");
  restore_note_.clear();
  if (auto po = ckpt.metadata().find(kPrecisionOptionsKey);
      po != ckpt.metadata().end() && po->second != config.precision_options()) {
    restore_note_ = absl::StrCat(
        "note: the checkpoint was written with --precision_options=\"", po->second,
        "\"; this run continues with --precision_options=\"", config.precision_options(),
        "\" (the loss scaler's saved state is kept)");
  }
  auto it = ckpt.metadata().find(kOptimizerKey);
  if (it != ckpt.metadata().end() && it->second != config.optimizer().name()) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": checkpoint optimizer '", it->second,
                     "' does not match --optimizer=", config.optimizer().name()));
  }

  // Validate everything before touching any state, so a bad file loses
  // nothing.
  const ParameterStore& params = *p_.params;
  const std::vector<SavedKind> kinds = SavedKinds(params);
  struct Found {
    size_t param;
    const SavedKind* kind;
    const TensorData* t;
  };
  std::vector<Found> found;
  for (size_t i = 0; i < params.params().size(); ++i) {
    const Param& p = params.params()[i];
    for (const SavedKind& kind : kinds) {
      if (p.frozen && kind.state >= 0) continue;  // a frozen parameter has no state
      const std::string name = kind.prefix + p.name;
      const TensorData* t = nullptr;
      for (const TensorData& c : ckpt.tensors()) {
        if (c.name() == name) t = &c;
      }
      if (t == nullptr) {
        if (options_differ) {
          return absl::FailedPreconditionError(absl::StrCat(
              options_differ_text, "a parameter '", p.name, "' the checkpoint does not have"));
        }
        return absl::DataLossError(
            absl::StrCat(path, ": checkpoint has no tensor '", name, "'"));
      }
      const std::vector<int64_t> dims(t->dims().begin(), t->dims().end());
      if (t->dtype() != MNT_DTYPE_F32 || dims != p.dims ||
          t->data().size() != static_cast<size_t>(p.numel) * sizeof(float)) {
        if (options_differ) {
          return absl::FailedPreconditionError(absl::StrCat(
              options_differ_text, "'", p.name, "' ", DimsText(p.dims), " where the checkpoint's is ",
              DimsText(dims)));
        }
        return absl::FailedPreconditionError(absl::StrCat(
            path, ": tensor '", name, "' has a different shape or type than the model's"));
      }
      found.push_back({i, &kind, t});
    }
  }
  if (options_differ) {
    // Fewer layers than the checkpoint's would leave some of it unread.
    for (const TensorData& t : ckpt.tensors()) {
      if (t.name().find('/') != std::string::npos) continue;  // state, working copies
      bool mine = false;
      for (const Param& p : params.params()) mine = mine || p.name == t.name();
      if (!mine) {
        return absl::FailedPreconditionError(absl::StrCat(
            options_differ_text, "no parameter '", t.name(), "', which the checkpoint has"));
      }
    }
    const std::string options_note = absl::StrCat(
        "note: the checkpoint was written with --model_options=\"", ckpt.model_options(),
        "\"; this run gives \"", config.model_options(),
        "\", which makes the same parameters (names and shapes), so it goes on with its own");
    restore_note_ = restore_note_.empty() ? options_note
                                          : absl::StrCat(restore_note_, "\n", options_note);
  }
  std::vector<std::vector<const TensorData*>> own_state;
  if (auto s = FindOwnState(ckpt, p_, path, &own_state); !s.ok()) return s;
  std::vector<std::pair<const Param*, const TensorData*>> working;
  uint64_t rounding_seed = p_.optimizer->rounding_seed();
  if (p_.optimizer->stochastic_rounding()) {
    if (auto s = FindWorkingCopies(ckpt, *p_.params, path, &working); !s.ok()) return s;
    if (auto a = ckpt.metadata().find(kRoundingSeedKey); a != ckpt.metadata().end()) {
      if (!absl::SimpleAtoi(a->second, &rounding_seed)) {
        return absl::DataLossError(absl::StrCat(path, ": checkpoint ", kRoundingSeedKey, " '",
                                                absl::CHexEscape(a->second),
                                                "' is not a 64-bit unsigned number"));
      }
    }
  }
  SamplerState ss{ckpt.sampler_seed(), ckpt.sampler_epoch(), ckpt.sampler_cursor()};
  BatchSampler restored_sampler(p_.sampler->num_examples(), config.seed());
  if (auto s = restored_sampler.SetState(ss); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(path, ": ", s.message()));
  }
  // Every number is checked here, before the first buffer is written: a file
  // whose CRC is right can still carry values no run produces.
  if (ckpt.step() < 0) {
    return absl::DataLossError(
        absl::StrCat(path, ": checkpoint step ", ckpt.step(), " is negative"));
  }
  int64_t applied = 0;
  if (auto a = ckpt.metadata().find(kAppliedStepsKey); a != ckpt.metadata().end()) {
    if (!absl::SimpleAtoi(a->second, &applied) || applied < 0 || applied > ckpt.step()) {
      return absl::DataLossError(absl::StrCat(
          path, ": checkpoint applied_steps '", absl::CHexEscape(a->second),
          "' is not a whole number from 0 to its step ", ckpt.step()));
    }
  }
  if (!(std::isfinite(ckpt.loss_scale()) && ckpt.loss_scale() > 0) ||
      ckpt.loss_scale_growth_tracker() < 0 || ckpt.loss_scale_skipped_steps() < 0) {
    return absl::DataLossError(absl::StrCat(
        path, ": checkpoint loss scaler state is invalid (scale ", ckpt.loss_scale(),
        ", growth tracker ", ckpt.loss_scale_growth_tracker(), ", skipped steps ",
        ckpt.loss_scale_skipped_steps(), " at step ", ckpt.step(), ")"));
  }
  auto eval_state = EvalPolicy::Read(ckpt.metadata(), path);
  if (!eval_state.ok()) return eval_state.status();
  if (p_.fp8 != nullptr) {
    if (auto s = p_.fp8->CheckCheckpoint(ckpt, path); !s.ok()) return s;
  } else if (ckpt.fp8_scaling_size() > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": the checkpoint holds FP8 scaling state, but this run's GEMMs are not FP8"));
  }

  // ZeRO-1: each parameter's pieces in this rank's share.
  std::vector<std::vector<const ParamPiece*>> pieces(params.params().size());
  for (const ParamPiece& piece : params.steps()) pieces[piece.param].push_back(&piece);
  for (const Found& f : found) {
    const std::string& bytes = f.t->data();
    if (params.params()[f.param].frozen) {
      // Restored after the masters' rounding below, which skips it anyway.
      continue;
    }
    if (!Sharded(params, *f.kind)) {
      const sdk::DeviceBuffer& whole = WholeBuffer(params, params.params()[f.param], *f.kind);
      if (auto s = sdk::ToAbsl(p_.client->ToDevice(whole.data(), bytes.data(), bytes.size()));
          !s.ok())
        return s;
      continue;
    }
    for (const ParamPiece* piece : pieces[f.param]) {
      if (auto s = sdk::ToAbsl(p_.client->ToDevice(
              PieceData(params, *piece, *f.kind),
              bytes.data() + static_cast<size_t>(piece->first) * sizeof(float),
              static_cast<size_t>(piece->numel) * sizeof(float)));
          !s.ok())
        return s;
    }
  }
  if (auto s = RestoreOwnState(p_, own_state); !s.ok()) return s;
  if (auto s = p_.params->SyncWorkingWeights(); !s.ok()) return s;
  for (const Found& f : found) {
    const Param& p = params.params()[f.param];
    if (!p.frozen) continue;
    std::vector<float> values(static_cast<size_t>(p.numel));
    std::memcpy(values.data(), f.t->data().data(), values.size() * sizeof(float));
    if (auto s = p_.params->WriteFrozenWeights(p, values.data()); !s.ok()) return s;
  }
  for (const auto& [p, t] : working) {
    const std::string& bytes = t->data();
    if (auto s = sdk::ToAbsl(p_.client->ToDevice(p->weights.data(), bytes.data(), bytes.size()));
        !s.ok())
      return s;
  }
  if (p_.gather_working_weights) {
    if (auto s = p_.gather_working_weights(); !s.ok()) return s;
  }

  sdk::LossScalerFullState st;
  st.state.scale = ckpt.loss_scale();
  st.state.growth_tracker = ckpt.loss_scale_growth_tracker();
  st.state.skipped_steps = ckpt.loss_scale_skipped_steps();
  st.hysteresis_tracker = ckpt.loss_scale_hysteresis_tracker();
  st.plugin_state = ckpt.precision_plugin_state();
  // A checkpoint without plugin bytes (an older one, or a plugin keeping
  // none) leaves the plugin's own state as created.
  if (auto s = sdk::ToAbsl(
          p_.scaler->SetFullState(st, /*with_plugin_state=*/!st.plugin_state.empty()));
      !s.ok())
    return absl::Status(s.code(),
                        absl::StrCat(path, " (step ", ckpt.step(),
                                     "): the precision plugin refused the loss scaler state: ",
                                     s.message()));
  if (p_.fp8 != nullptr) {
    if (auto s = p_.fp8->Restore(ckpt); !s.ok()) return s;
  }
  *p_.sampler = std::move(restored_sampler);
  *step = ckpt.step();
  p_.optimizer->set_applied_steps(applied);
  p_.optimizer->set_rounding_seed(rounding_seed);
  if (p_.eval_policy != nullptr) {
    if (const std::string note = p_.eval_policy->Apply(*eval_state); !note.empty()) {
      restore_note_ = restore_note_.empty() ? note : absl::StrCat(restore_note_, "; ", note);
    }
  }
  // Scale, tracker and Adam's step counters follow the restored state to
  // where the scaling runs.
  return p_.scaling->SyncFromPlugin();
}

std::string TrainingCheckpoint::Fingerprint(const CheckpointData& ckpt) {
  uint64_t hash = kFnv1aOffset;
  for (const TensorData& t : ckpt.tensors()) hash = Fnv1a(t.data(), Fnv1a(t.name(), hash));
  return absl::StrCat(absl::Hex(hash, absl::kZeroPad16), " scale ", ckpt.loss_scale(),
                      " skipped ", ckpt.loss_scale_skipped_steps());
}

}  // namespace mnt::trainer
