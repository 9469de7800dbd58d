#include "trainer/dryrun/memory_estimate.h"

#include <algorithm>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/fp8_slots.h"
#include "plugins/sdk/model_client.h"
#include "plugins/sdk/op_list.h"
#include "plugins/sdk/precision_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/dryrun/counting_backend.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/optimizer.h"
#include "trainer/core/freeze_patterns.h"
#include "trainer/core/parameters.h"
#include "trainer/parallel/shard_layout.h"
#include "trainer/core/run_plugins.h"

namespace mnt::memory {
namespace {

// The step's device scalars the trainer allocates besides the batch: six
// StepScalars, the device loss scaling's scale, two trackers, skipped flag,
// one loss per micro-batch and the multiplier, and the device lr (in-tree
// backends take the device path: trainer/core/loss_scaling_choice.h).
constexpr int64_t kStepScalarBytes = 13 * 4;

absl::Status Prefixed(const absl::Status& s, const std::string& prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// One training forward and backward of `model` (created with FP8 GEMMs on a
// CountingBackend) on tensors of the shapes the trainer hands it, allocated
// on that backend in the data category (address space only; the ops do
// nothing): what the model allocates on the way, its FP8 operand scratch,
// is counted in its own category. A model that refuses to train at this
// batch size (the CNN's batch norm below 2) runs an evaluation forward
// instead: *forward_only is then true.
absl::Status RunTrainingPass(const sdk::BackendClient& client, sdk::ModelClient& model,
                             const std::vector<std::vector<int64_t>>& param_dims,
                             const MNT_ModelPrecision& precision, const MNT_DataSpec& d,
                             int64_t batch, int64_t fp8_slots, const std::vector<bool>& frozen,
                             bool* forward_only) {
  std::vector<sdk::DeviceBuffer> buffers;
  buffers.reserve(2 * param_dims.size() + 6);
  auto make = [&](MNT_DType dtype, const std::vector<int64_t>& dims,
                  MNT_Tensor* out) -> absl::Status {
    int64_t n = 1;
    for (int64_t x : dims) n *= x;
    buffers.emplace_back();
    if (auto s = sdk::ToAbsl(client.Allocate(static_cast<size_t>(n) * sdk::DTypeSize(dtype),
                                             MNT_MEMORY_DATA, &buffers.back()));
        !s.ok())
      return s;
    *out = sdk::MakeTensor(buffers.back().data(), dtype, static_cast<int32_t>(dims.size()),
                           dims.data());
    return absl::OkStatus();
  };
  std::vector<MNT_Tensor> weights(param_dims.size()), grads(param_dims.size());
  for (size_t i = 0; i < param_dims.size(); ++i) {
    if (auto s = make(precision.weight_dtype, param_dims[i], &weights[i]); !s.ok()) return s;
    if (auto s = make(precision.gradient_dtype, param_dims[i], &grads[i]); !s.ok()) return s;
    if (i < frozen.size() && frozen[i]) grads[i].data = nullptr;  // as the trainer hands it
  }
  std::vector<int64_t> input_dims{batch};
  for (int i = 0; i < d.input_rank && i < MNT_MAX_RANK - 1; ++i) {
    input_dims.push_back(d.input_dims[i]);
  }
  MNT_Tensor inputs, targets, loss, scales, scale_invs, amax;
  for (auto [dtype, dims, out] :
       std::vector<std::tuple<MNT_DType, std::vector<int64_t>, MNT_Tensor*>>{
           {d.input_dtype, input_dims, &inputs},
           {MNT_DTYPE_I32, {batch, std::max<int64_t>(1, d.targets_per_example)}, &targets},
           {MNT_DTYPE_F32, {1}, &loss},
           {MNT_DTYPE_F32, {sdk::kFp8Roles, fp8_slots}, &scales},
           {MNT_DTYPE_F32, {sdk::kFp8Roles, fp8_slots}, &scale_invs},
           {MNT_DTYPE_F32, {sdk::kFp8Roles, fp8_slots}, &amax}}) {
    if (auto s = make(dtype, dims, out); !s.ok()) return s;
  }
  if (fp8_slots > 0) model.UseFp8Tensors({&scales, &scale_invs, &amax});
  *forward_only = false;
  absl::Status s = sdk::ToAbsl(model.Forward(weights, inputs, targets, /*training=*/true, loss));
  if (s.ok()) {
    s = sdk::ToAbsl(model.Backward(weights, grads, 1.0f, /*accumulate=*/false));
  } else if (sdk::ToAbsl(model.Forward(weights, inputs, targets, /*training=*/false, loss))
                 .ok()) {
    *forward_only = true;
    s = absl::OkStatus();
  }
  model.UseFp8Tensors({});
  if (!s.ok()) return Prefixed(s, "a training pass on the counting backend: ");
  return absl::OkStatus();
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> MemoryEstimate::Rows() const {
  return {{"weights", weights},
          {"master_weights", master_weights},
          {"gradients", gradients},
          {"master_gradients", master_gradients},
          {"optimizer_state", optimizer_state},
          {"activations", activations},
          {"workspace", workspace},
          {"data", data},
          {"total", total()}};
}

absl::StatusOr<std::unique_ptr<MemoryEstimator>> MemoryEstimator::Create(
    const EstimateSetup& setup, trainer::PluginRegistry* registry) {
  std::unique_ptr<MemoryEstimator> e(new MemoryEstimator(setup, registry));
  if (setup.optimizer != "adamw" && setup.optimizer != "adam" && setup.optimizer != "sgd" &&
      setup.optimizer != "adamw8bit" && setup.optimizer != "adafactor") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--optimizer=", setup.optimizer,
        " is not one of adamw, adam, sgd, adamw8bit, adafactor"));
  }
  mantissa::OptimizerConfig optimizer;
  optimizer.set_name(setup.optimizer);
  optimizer.set_optimizer_options(setup.optimizer_options);
  if (auto options = trainer::ParseOptimizerOptions(optimizer); !options.ok()) {
    return options.status();
  }
  auto backend = registry->Get(MNT_PLUGIN_KIND_BACKEND, setup.device);
  if (!backend.ok()) return backend.status();
  e->backend_plugin_ = (*backend)->api;
  auto model = registry->Get(MNT_PLUGIN_KIND_MODEL, setup.model);
  if (!model.ok()) return model.status();
  e->model_plugin_ = (*model)->api;
  if (auto s = sdk::ToAbsl(sdk::BackendInstance::Create(e->backend_plugin_,
                                                         setup.backend_options, &e->backend_));
      !s.ok()) {
    return Prefixed(s, absl::StrCat("backend '", setup.device, "': "));
  }
  return e;
}

absl::StatusOr<MemoryEstimate> MemoryEstimator::Estimate(const std::string& precision,
                                                         int64_t batch_size) {
  if (batch_size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch size ", batch_size, " is not a positive integer"));
  }
  MemoryEstimate est;
  est.precision = precision;
  est.batch_size = batch_size;

  // The precision plugin's policy (the dtypes the model is created with) and
  // its memory plan (bytes per parameter of each kind).
  auto loaded = registry_->Get(MNT_PLUGIN_KIND_PRECISION, precision);
  if (!loaded.ok()) return loaded.status();
  const sdk::PrecisionClient plugin((*loaded)->api);
  MNT_Precision_GetPolicy_Args policy{};
  if (auto s = sdk::ToAbsl(plugin.GetPolicy(&policy)); !s.ok()) return s;
  if (auto s = trainer::CheckPolicyValues(policy); !s.ok()) {
    return Prefixed(s, absl::StrCat("precision '", precision, "': "));
  }
  mantissa::OptimizerConfig optimizer;
  optimizer.set_name(setup_.optimizer);
  optimizer.set_optimizer_options(setup_.optimizer_options);
  MNT_Precision_GetMemoryPlan_Args plan{};
  if (auto s = sdk::ToAbsl(
          plugin.GetMemoryPlan(trainer::Optimizer::StateSlots(optimizer), &plan));
      !s.ok()) {
    return Prefixed(s, absl::StrCat("precision '", precision, "': "));
  }
  est.mixed = plan.bytes_master_weights > 0;

  // FP8 GEMMs: the op-class policy decides, the scaling recipe (for
  // --precision_options) says how many amax the history keeps; refused as
  // the trainer refuses it (trainer/core/run_plugins.cc).
  MNT_Precision_GetOpClassPolicy_Args matmul;
  if (auto s = sdk::ToAbsl(plugin.GetOpClassPolicy(MNT_OP_CLASS_MATMUL, &matmul)); !s.ok()) {
    return Prefixed(s, absl::StrCat("precision '", precision, "': "));
  }
  MNT_Precision_GetScalingRecipe_Args recipe{};
  // A model without FP8 GEMMs runs its GEMMs in the policy's compute mode
  // instead (trainer/core/run_plugins.cc): no FP8 state.
  est.fp8 = sdk::IsFp8(matmul.compute_dtype) &&
            sdk::HasCapability(model_plugin_, MNT_CAPABILITY_MODEL_FP8_GEMMS);
  if (est.fp8) {
    if (auto s = sdk::ToAbsl(plugin.GetScalingRecipe(setup_.precision_options, &recipe));
        !s.ok()) {
      return Prefixed(s, absl::StrCat("precision '", precision, "': "));
    }
    if (auto s = sdk::ToAbsl(sdk::CheckScalingRecipe(recipe)); !s.ok()) {
      return Prefixed(s, absl::StrCat("precision '", precision, "': "));
    }
    if (recipe.recipe == MNT_SCALING_RECIPE_NONE) {
      return absl::FailedPreconditionError(absl::StrCat(
          "precision '", precision, "' computes GEMMs in ", sdk::DTypeName(matmul.compute_dtype),
          " but declares no scaling recipe"));
    }
    for (MNT_Op op : {MNT_OP_SCALED_CAST, MNT_OP_SCALED_GEMM, MNT_OP_FP8_SCALE_UPDATE}) {
      if (!backend_->Supports(op)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "precision '", precision, "' runs GEMMs in FP8, but backend '", setup_.device,
            "' does not support ", sdk::OpName(op),
            op == MNT_OP_FP8_SCALE_UPDATE ? "" : " (FP8 tensor cores: sm_89 or newer)"));
      }
    }
  }

  // The model, created for this batch size on a backend that only counts.
  std::unique_ptr<CountingBackend> counting;
  if (auto s = sdk::ToAbsl(CountingBackend::Create(backend_plugin_, backend_->backend(),
                                                   &counting));
      !s.ok())
    return s;
  // --lora reaches the model as its lora_* options (trainer/core/lora_flag.h).
  if (absl::StrContains(absl::StrCat(",", setup_.model_options), ",lora_r=") &&
      !sdk::HasCapability(model_plugin_, MNT_CAPABILITY_MODEL_LORA)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--lora: model '", setup_.model, "' does not take LoRA adapters (ABI 1.13's MODEL_LORA)"));
  }
  sdk::ModelSetup model_setup;
  model_setup.options = setup_.model_options;
  model_setup.backend = &counting->client();
  model_setup.data_spec = setup_.data_spec;
  model_setup.precision.weight_dtype = policy.weight_dtype;
  model_setup.precision.gradient_dtype = policy.gradient_dtype;
  model_setup.precision.activation_dtype = policy.activation_dtype;
  model_setup.precision.matmul_compute = policy.matmul_compute;
  model_setup.max_batch_size = batch_size;
  if (est.fp8) {
    model_setup.fp8.forward = recipe.forward_dtype;
    model_setup.fp8.backward = recipe.backward_dtype;
    model_setup.fp8.fast_accumulation_forward = recipe.fast_accumulation_forward != 0;
    model_setup.fp8.current_scaling = recipe.recipe == MNT_SCALING_RECIPE_CURRENT;
    model_setup.fp8.margin = recipe.margin;
  }
  sdk::ModelClient model;  // destroyed before `counting`
  if (auto s = sdk::ToAbsl(sdk::ModelClient::Create(model_plugin_, model_setup, &model));
      !s.ok()) {
    return Prefixed(s, absl::StrCat("model '", setup_.model, "': "));
  }

  // The parameter table, checked as ParameterStore checks it, in the
  // trainer's flat layout.
  int64_t count = 0;
  if (auto s = sdk::ToAbsl(model.ParamCount(&count)); !s.ok()) return s;
  std::vector<int64_t> numels;
  std::vector<std::vector<int64_t>> param_dims;
  std::vector<trainer::ParamShape> shapes;  // as the optimizers see them
  std::vector<std::string> names;
  for (int64_t i = 0; i < count; ++i) {
    sdk::ParamSpec spec;
    if (auto s = sdk::ToAbsl(model.GetParamSpec(i, &spec)); !s.ok()) return s;
    int64_t numel = 1;
    for (int64_t d : spec.dims) {
      if (d < 1 || __builtin_mul_overflow(numel, d, &numel) || numel > (int64_t{1} << 40)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "model '", setup_.model, "': parameter '", spec.name ? spec.name : "",
            "' has invalid dims [", absl::StrJoin(spec.dims, ","), "]"));
      }
    }
    numels.push_back(numel);
    param_dims.push_back(spec.dims);
    shapes.push_back({spec.dims, spec.stacked_dims, spec.role});
    names.push_back(spec.name != nullptr ? spec.name : absl::StrCat("param", i));
    est.num_parameters += numel;
  }
  // --freeze: frozen parameters take no element of the trainable kinds'
  // layout; the working weights keep theirs (ParameterStore::AllocateFlat).
  std::vector<bool> frozen(numels.size(), false);
  if (!setup_.freeze.empty()) {
    if (!model.TakesFrozenParams()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--freeze: model '", setup_.model, "' does not take frozen parameters (ABI 1.13)"));
    }
    auto matched = trainer::MatchFrozen(names, setup_.freeze);
    if (!matched.ok()) return matched.status();
    frozen = *matched;
  }
  std::vector<int64_t> trainable = numels;
  int64_t stepped_tensors = 0;
  for (size_t i = 0; i < numels.size(); ++i) {
    if (frozen[i]) {
      trainable[i] = 0;
      est.num_frozen += numels[i];
    } else {
      // Adafactor steps each stacked copy as a tensor, with its own counter.
      stepped_tensors += setup_.optimizer == "adafactor" ? shapes[i].copies() : 1;
    }
  }
  // The trainer's flat layout: padded to the ranks' shares when data
  // parallel, sharded under ZeRO-1 (ParameterStore::AllocateFlat).
  const bool zero1 = setup_.ranks > 1 && setup_.zero_stage == 1;
  // The exchanged gradient: fp32 master gradients, or the gradients.
  const int64_t exchanged_bytes = est.mixed ? 4 : plan.bytes_gradients;
  trainer::ParamShard shard;
  shard.world = setup_.ranks;
  shard.zero1 = zero1;
  shard.bucket_bytes = static_cast<int64_t>(setup_.bucket_mb * (1 << 20));
  // As GradientSync::ShardOf: one rank keeps the default alignment.
  if (setup_.ranks > 1) shard.alignment = trainer::ShardAlignmentFor(setup_.optimizer);
  const trainer::ShardLayout layout =
      trainer::MakeShardLayout(trainable, shard, std::max<int64_t>(exchanged_bytes, 1));
  const int64_t flat = layout.total();
  const int64_t sharded = zero1 ? layout.share() : flat;
  est.weights = (est.num_frozen > 0
                     ? trainer::FlatOffsets(numels, trainer::kFlatAlignmentElements).back()
                     : flat) *
                plan.bytes_weights;
  est.master_weights = sharded * plan.bytes_master_weights;
  est.gradients = flat * plan.bytes_gradients + (zero1 ? layout.share() * exchanged_bytes : 0);
  est.master_gradients = flat * plan.bytes_master_gradients;
  est.optimizer_state = sharded * plan.bytes_optimizer_state;
  if (trainer::KeepsOwnState(optimizer)) {
    // adamw8bit's codes and block absmax, Adafactor's rows and columns
    // (trainer/core/optimizer_state.h): rank 0's pieces' parts under ZeRO-1.
    auto options = trainer::ParseOptimizerOptions(optimizer);
    if (!options.ok()) return options.status();
    const std::vector<trainer::ParamPiece> pieces =
        zero1 ? layout.PiecesOf(0) : std::vector<trainer::ParamPiece>{};
    for (size_t i = 0; i < param_dims.size(); ++i) {
      for (const trainer::StateTensorSpec& spec :
           trainer::StateTensorsOf(optimizer, *options, shapes[i])) {
        if (!zero1) {
          est.optimizer_state += static_cast<int64_t>(spec.bytes());
          continue;
        }
        for (const trainer::ParamPiece& piece : pieces) {
          if (piece.param != static_cast<int64_t>(i)) continue;
          est.optimizer_state += static_cast<int64_t>(
              trainer::OptimizerState::ByteRange(piece, numels[i], spec).second);
        }
      }
    }
  }
  // AdamW on the device path keeps one I32 step counter per tensor it
  // steps (ZeRO-1: per piece of rank 0's share; Adafactor: per copy).
  const int64_t stepped =
      zero1 ? static_cast<int64_t>(layout.PiecesOf(0).size()) : stepped_tensors;
  if (setup_.optimizer != "sgd") est.optimizer_state += 4 * stepped;

  // What the model allocated, by the category it named.
  int64_t created[MNT_MEMORY_CATEGORY_COUNT];
  for (int c = 0; c < MNT_MEMORY_CATEGORY_COUNT; ++c) {
    created[c] = counting->peak(static_cast<MNT_MemoryCategory>(c));
  }

  if (est.fp8) {
    // The trainer's scaling state: scales, inverses and amax [3, S], and
    // the delayed recipe's forward [H, 2S] and backward [H, S] histories.
    est.fp8_slots = sdk::MakeFp8SlotLayout(param_dims).total;
    if (est.fp8_slots == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model '", setup_.model, "': FP8 GEMMs: the model has no matrix parameters (rank "
          "2, or rank 3 stacked by layer) for a GEMM to scale"));
    }
    est.fp8_history =
        recipe.recipe == MNT_SCALING_RECIPE_DELAYED ? recipe.history_length : 0;
    est.fp8_scaling_state = static_cast<int64_t>(sizeof(float)) * sdk::kFp8Roles *
                            est.fp8_slots * (3 + est.fp8_history);
    est.optimizer_state += est.fp8_scaling_state;
    // The model's FP8 operand scratch and kept inputs, grown by its first
    // passes.
    if (auto s = RunTrainingPass(counting->client(), model, param_dims, model_setup.precision,
                                 setup_.data_spec, batch_size, est.fp8_slots, frozen,
                                 &est.fp8_forward_only);
        !s.ok()) {
      return Prefixed(s, absl::StrCat("model '", setup_.model, "': "));
    }
    const int64_t workspace = counting->peak(MNT_MEMORY_WORKSPACE);
    est.fp8_scratch = workspace - created[MNT_MEMORY_WORKSPACE];
    created[MNT_MEMORY_WORKSPACE] = workspace;
    // And the FP8 inputs the training forward kept for its backward.
    const int64_t activations = counting->peak(MNT_MEMORY_ACTIVATIONS);
    est.fp8_kept_inputs = activations - created[MNT_MEMORY_ACTIVATIONS];
    created[MNT_MEMORY_ACTIVATIONS] = activations;
  }

  if (!est.fp8 && est.num_frozen > 0) {
    // The facade's gradient sink for frozen norm parameters, grown by the
    // first backward (plugins/sdk/model/ops.h).
    bool forward_only = false;
    if (auto s = RunTrainingPass(counting->client(), model, param_dims, model_setup.precision,
                                 setup_.data_spec, batch_size, 0, frozen, &forward_only);
        !s.ok()) {
      return Prefixed(s, absl::StrCat("model '", setup_.model, "': "));
    }
    created[MNT_MEMORY_WORKSPACE] = counting->peak(MNT_MEMORY_WORKSPACE);
    created[MNT_MEMORY_ACTIVATIONS] = counting->peak(MNT_MEMORY_ACTIVATIONS);
  }

  int64_t* const by_category[MNT_MEMORY_CATEGORY_COUNT] = {
      &est.weights, &est.master_weights, &est.gradients, &est.optimizer_state,
      &est.activations, &est.workspace, &est.data};
  for (int c = 0; c < MNT_MEMORY_CATEGORY_COUNT; ++c) *by_category[c] += created[c];

  // The batch as DeviceBatch holds it (4 bytes an element, f32 or i32).
  const MNT_DataSpec& d = setup_.data_spec;
  int64_t per_example = 1;
  for (int i = 0; i < d.input_rank && i < MNT_MAX_RANK; ++i) per_example *= d.input_dims[i];
  est.data += 4 * batch_size * per_example +
              4 * batch_size * std::max<int64_t>(1, d.targets_per_example) + kStepScalarBytes;
  return est;
}

absl::StatusOr<int64_t> MemoryEstimator::BreakEvenBatch(const std::string& precision,
                                                        int64_t limit) {
  auto more = [&](int64_t b) -> absl::StatusOr<bool> {
    auto mixed = Estimate(precision, b);
    if (!mixed.ok()) return mixed.status();
    auto fp32 = Estimate("fp32", b);
    if (!fp32.ok()) return fp32.status();
    return mixed->total() > fp32->total();
  };
  auto at = more(1);
  if (!at.ok()) return at.status();
  if (!*at) return 1;
  at = more(limit);
  if (!at.ok()) return at.status();
  if (*at) return 0;
  int64_t lo = 1, hi = limit;  // more at lo, not more at hi
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    at = more(mid);
    if (!at.ok()) return at.status();
    (*at ? lo : hi) = mid;
  }
  return hi;
}

absl::StatusOr<int64_t> MemoryEstimator::LargestBatch(const std::string& precision,
                                                      int64_t bytes, int64_t limit) {
  auto fits = [&](int64_t b) -> absl::StatusOr<bool> {
    auto e = Estimate(precision, b);
    if (!e.ok()) return e.status();
    return e->total() <= bytes;
  };
  auto at = fits(1);
  if (!at.ok()) return at.status();
  if (!*at) return 0;
  at = fits(limit);
  if (!at.ok()) return at.status();
  if (*at) return limit;
  int64_t lo = 1, hi = limit;  // fits at lo, not at hi
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    at = fits(mid);
    if (!at.ok()) return at.status();
    (*at ? lo : hi) = mid;
  }
  return lo;
}

int64_t MemoryEstimator::device_memory_bytes() const {
  MNT_Backend_GetInfo_Args info;
  if (!backend_->GetInfo(&info).ok()) return 0;
  return info.total_memory_bytes;
}

bool MemoryEstimator::host_addressable() const {
  MNT_Backend_GetInfo_Args info;
  if (!backend_->GetInfo(&info).ok()) return false;
  return info.host_addressable != 0;
}

}  // namespace mnt::memory
