#include "trainer/core/run_plugins.h"

#include <cstdlib>
#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/tensor.h"
#include "trainer/core/device_choice.h"
#include "trainer/core/loss_scale_config.h"
#include "trainer/core/out_of_memory_advice.h"
#include "trainer/parallel/launch.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {
namespace {

// The status with "<prefix>" before its message.
absl::Status Prefixed(const sdk::Status& s, const std::string& prefix) {
  return absl::Status(sdk::ToAbsl(s).code(), absl::StrCat(prefix, s.message()));
}

// Model_Create's error as the run's: what the trainer asked of the model
// that it cannot do, in the trainer's words.
absl::Status ModelCreateError(const absl::Status& s, const MemoryAdviceFacts& facts) {
  const mantissa::TrainConfig& config = *facts.config;
  // --gradient_checkpointing reaches the model as its option checkpointing=1
  // (trainer/cli/train_main.cc); a model whose options lack it says so in
  // the options parser's words (plugins/sdk/options.h), which name a key
  // the user never wrote.
  if (config.gradient_checkpointing() && s.code() == absl::StatusCode::kInvalidArgument &&
      absl::StrContains(s.message(), "unknown key 'checkpointing'")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model '", config.model(),
        "' does not recompute activations: --gradient_checkpointing needs a model whose "
        "options take checkpointing (e.g. gpt2); run '", config.model(), "' without it"));
  }
  return WithOutOfMemoryAdvice(s, facts);
}

// What a run with FP8 GEMMs says once when its model has none.
std::string Fp8FallbackNote(const std::string& model, const MNT_Precision_GetPolicy_Args& policy) {
  const char* compute = policy.matmul_compute == MNT_COMPUTE_BF16  ? "bf16"
                        : policy.matmul_compute == MNT_COMPUTE_F16 ? "fp16"
                        : policy.matmul_compute == MNT_COMPUTE_TF32 ? "tf32"
                                                                    : "fp32";
  return absl::StrCat(
      "FP8 GEMMs: model '", model, "' has none (it does not offer capability MODEL_FP8_GEMMS), so ",
      "its GEMMs run in ", compute, " on ", sdk::DTypeName(policy.activation_dtype),
      " activations, as Transformer Engine runs what its FP8 layers do not cover; a model "
      "written on the SDK's model layer gets FP8 GEMMs (docs/plugins.md, \"FP8 GEMMs\")");
}

}  // namespace

namespace {

// Every enum the plugin wrote is read as its int32 and checked before the
// trainer (or the model it is handed to) uses it as the enum (abi_enum.h).
template <typename E>
absl::Status CheckPolicyEnum(const char* field, const E& value, bool allow_invalid) {
  const std::optional<E> known = sdk::ReadEnum(value);
  if (!known || (!allow_invalid && static_cast<int32_t>(*known) == 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Precision_GetPolicy returned ", field, " = ", sdk::RawEnum(value),
        ", not a value this trainer's ABI defines"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckPolicyValues(const MNT_Precision_GetPolicy_Args& p) {
  absl::Status s = CheckPolicyEnum("weight_dtype", p.weight_dtype, false);
  // INVALID master dtype means "no second copy" (mnt_precision.h).
  if (s.ok()) s = CheckPolicyEnum("master_weight_dtype", p.master_weight_dtype, true);
  if (s.ok()) s = CheckPolicyEnum("gradient_dtype", p.gradient_dtype, false);
  if (s.ok()) s = CheckPolicyEnum("activation_dtype", p.activation_dtype, false);
  if (s.ok()) s = CheckPolicyEnum("optimizer_state_dtype", p.optimizer_state_dtype, true);
  if (s.ok()) s = CheckPolicyEnum("matmul_compute", p.matmul_compute, false);
  // NONE is 0 and valid.
  if (s.ok()) s = CheckPolicyEnum("loss_scaling", p.loss_scaling, true);
  return s;
}

absl::StatusOr<std::unique_ptr<RunPlugins>> RunPlugins::Create(
    const mantissa::TrainConfig& config, PluginRegistry* registry,
    const MNT_DataSpec& data_spec, int optimizer_state_slots, int local_rank) {
  auto p = std::make_unique<RunPlugins>();
  auto device = ResolveDevice(config.device(), registry);
  if (!device.ok()) return device.status();
  p->device_name = *device;
  p->precision_name = ResolvePrecision(config.precision(), p->device_name);

  auto backend = registry->Get(MNT_PLUGIN_KIND_BACKEND, p->device_name);
  if (!backend.ok()) return backend.status();
  auto precision = registry->Get(MNT_PLUGIN_KIND_PRECISION, p->precision_name);
  if (!precision.ok()) return precision.status();
  auto model = registry->Get(MNT_PLUGIN_KIND_MODEL, config.model());
  if (!model.ok()) return model.status();

  // Data parallel: each rank on a machine takes its own device.
  const int ordinal = DeviceOrdinalForRank(p->device_name, local_rank,
                                           [](const char* name) { return std::getenv(name); });
  if (sdk::Status s = sdk::BackendInstance::Create((*backend)->api, config.backend_options(),
                                                   &p->backend, ordinal);
      !s.ok()) {
    absl::Status st = Prefixed(s, absl::StrCat("backend '", p->device_name, "': "));
    if (ordinal > 0) {
      // Data parallel: this rank wanted device `ordinal` of its machine.
      return absl::Status(st.code(), absl::StrCat(
          st.message(), " (data parallel: the rank with local rank ", local_rank,
          " takes device ", ordinal, "; start at most as many ranks per machine as it has "
          "devices, or give each rank one with CUDA_VISIBLE_DEVICES)"));
    }
    if (s.code() == MNT_ERROR_UNAVAILABLE && p->device_name != "cpu") {
      // The device is missing or unusable: say what runs instead.
      st = absl::Status(st.code(), absl::StrCat(st.message(),
                                                 "; train on the CPU with --device=cpu, or use "
                                                 "--device=auto to take the GPU when it works"));
    }
    return st;
  }
  MNT_Backend_GetInfo_Args info;
  if (sdk::Status s = p->backend->GetInfo(&info); !s.ok()) return sdk::ToAbsl(s);
  p->backend_description =
      absl::StrCat(p->device_name, ": ", info.device_name ? info.device_name : "");
  p->total_memory_bytes = info.total_memory_bytes;

  p->precision = sdk::PrecisionClient((*precision)->api);
  if (sdk::Status s = p->precision.GetPolicy(&p->policy); !s.ok()) return sdk::ToAbsl(s);
  if (absl::Status s = CheckPolicyValues(p->policy); !s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("precision '", p->precision_name, "': ", s.message()));
  }
  if (sdk::Status s = p->precision.GetMemoryPlan(optimizer_state_slots, &p->plan); !s.ok())
    return sdk::ToAbsl(s);
  // The op-class policy decides whether GEMMs run in FP8; such a precision
  // must say how its scales evolve, and the backend must have the ops.
  // Asked before the loss scaler, so an FP8 option's error is not read as
  // one of loss scaling.
  MNT_Precision_GetOpClassPolicy_Args matmul;
  if (sdk::Status s = p->precision.GetOpClassPolicy(MNT_OP_CLASS_MATMUL, &matmul); !s.ok()) {
    return Prefixed(s, absl::StrCat("precision '", p->precision_name, "': "));
  }
  p->scaling_recipe = {};
  p->scaling_recipe.recipe = MNT_SCALING_RECIPE_NONE;
  bool fp8_gemms = sdk::IsFp8(matmul.compute_dtype);
  if (fp8_gemms) {
    if (sdk::Status s = p->precision.GetScalingRecipe(config.precision_options(),
                                                      &p->scaling_recipe);
        !s.ok()) {
      return Prefixed(s, absl::StrCat("precision '", p->precision_name, "': "));
    }
    if (sdk::Status s = sdk::CheckScalingRecipe(p->scaling_recipe); !s.ok()) {
      return Prefixed(s, absl::StrCat("precision '", p->precision_name, "': "));
    }
    if (p->scaling_recipe.recipe == MNT_SCALING_RECIPE_NONE) {
      return absl::FailedPreconditionError(absl::StrCat(
          "precision '", p->precision_name, "' computes GEMMs in ",
          sdk::DTypeName(matmul.compute_dtype), " but declares no scaling recipe"));
    }
    if (!sdk::HasCapability((*model)->api, MNT_CAPABILITY_MODEL_FP8_GEMMS)) {
      // As Transformer Engine runs what its FP8 layers do not cover in
      // higher precision: the model's GEMMs run in the precision's compute
      // mode on its storage (fp8's: bf16), said once, instead of a refusal.
      p->fp8_note = Fp8FallbackNote(config.model(), p->policy);
      p->scaling_recipe = {};
      p->scaling_recipe.recipe = MNT_SCALING_RECIPE_NONE;
      fp8_gemms = false;
    }
    for (MNT_Op op : {MNT_OP_SCALED_CAST, MNT_OP_SCALED_GEMM, MNT_OP_FP8_SCALE_UPDATE}) {
      if (!fp8_gemms) break;
      if (!p->backend->Supports(op)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "precision '", p->precision_name, "' runs GEMMs in FP8, but backend '",
            p->device_name, "' (", info.device_name ? info.device_name : "", ") does not support ",
            sdk::OpName(op),
            op == MNT_OP_FP8_SCALE_UPDATE ? "" : " (FP8 tensor cores: sm_89 or newer)",
            "; use --precision=bf16"));
      }
    }
  }

  if (sdk::Status s = sdk::LossScalerClient::Create(
          (*precision)->api, LossScalerOptions(config.loss_scale()),
          config.precision_options(), &p->scaler);
      !s.ok()) {
    return Prefixed(s, absl::StrCat("precision '", p->precision_name, "' loss scaling: "));
  }
  MNT_LossScalerState state;  // a scaler whose state cannot be read is refused now
  if (sdk::Status s = p->scaler.GetState(&state); !s.ok()) return sdk::ToAbsl(s);

  if (!config.lora().empty() && !sdk::HasCapability((*model)->api, MNT_CAPABILITY_MODEL_LORA)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--lora: model '", config.model(), "' does not take LoRA adapters (ABI 1.13's "
        "MODEL_LORA; a model on the SDK's model layer gets it by rebuilding)"));
  }
  sdk::ModelSetup setup;
  setup.options = config.model_options();
  if (fp8_gemms) {
    setup.fp8.forward = p->scaling_recipe.forward_dtype;
    setup.fp8.backward = p->scaling_recipe.backward_dtype;
    setup.fp8.fast_accumulation_forward = p->scaling_recipe.fast_accumulation_forward != 0;
    setup.fp8.current_scaling = p->scaling_recipe.recipe == MNT_SCALING_RECIPE_CURRENT;
    setup.fp8.margin = p->scaling_recipe.margin;
  }
  setup.backend = &p->backend->client();
  if (config.debug_overflow()) {
    auto tracer = OpTracer::Create(p->backend->client());
    if (!tracer.ok()) return tracer.status();
    p->tracer = std::move(*tracer);
    setup.backend = &p->tracer->client();
  }
  setup.data_spec = data_spec;
  setup.precision.weight_dtype = p->policy.weight_dtype;
  setup.precision.gradient_dtype = p->policy.gradient_dtype;
  setup.precision.activation_dtype = p->policy.activation_dtype;
  setup.precision.matmul_compute = p->policy.matmul_compute;
  setup.max_batch_size = config.batch_size();
  if (sdk::Status s = sdk::ModelClient::Create((*model)->api, setup, &p->model); !s.ok()) {
    return ModelCreateError(Prefixed(s, absl::StrCat("model '", config.model(), "': ")),
                            {&config, data_spec, p->precision_name, p->total_memory_bytes});
  }
  return p;
}

}  // namespace mnt::trainer
