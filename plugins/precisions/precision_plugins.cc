// The C entry points of MNT_Precision_Api: argument checks and translation
// to precision_policy.h / loss_scaler.h / scaling_recipe.h. One template
// instance per plugin.
#include "plugins/precisions/precision_plugins.h"

#include <memory>
#include <string>

#include "plugins/precisions/loss_scaler.h"
#include "plugins/precisions/precision_policy.h"
#include "plugins/precisions/scaling_recipe.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"

struct MNT_LossScaler {
  mnt::precision::LossScaler impl;
};

namespace mnt::precision {
namespace {

using sdk::Status;

Status CheckScaler(const char* call, const MNT_LossScaler* scaler) {
  if (scaler == nullptr) {
    return sdk::InvalidArgument(sdk::Format("%s: scaler is NULL", call));
  }
  return Status::Ok();
}

Status CheckStateSize(const char* call, const MNT_LossScalerState& state) {
  return sdk::CheckStructSize(
      (std::string(call) + ": MNT_LossScalerState").c_str(),
      MNT_LossScalerState_STRUCT_SIZE, state.struct_size);
}

template <PrecisionKind kKind>
struct Entry {
  static const PrecisionPolicy& policy() { return PolicyFor(kKind); }

  static MNT_Error* GetPolicy(MNT_Precision_GetPolicy_Args* args) {
    return sdk::Guard("Precision_GetPolicy", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Precision_GetPolicy_Args, args);
      const PrecisionPolicy& p = policy();
      args->weight_dtype = p.weight_dtype;
      args->master_weight_dtype = p.master_weight_dtype;
      args->gradient_dtype = p.gradient_dtype;
      args->activation_dtype = p.activation_dtype;
      args->optimizer_state_dtype = p.optimizer_state_dtype;
      args->matmul_compute = p.matmul_compute;
      args->loss_scaling = p.default_loss_scaling;
      return Status::Ok();
    });
  }

  static MNT_Error* GetOpClassPolicy(
      MNT_Precision_GetOpClassPolicy_Args* args) {
    return sdk::Guard("Precision_GetOpClassPolicy", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Precision_GetOpClassPolicy_Args, args);
      OpClassPolicy op;
      MNT_RETURN_IF_ERROR(OpClassPolicyFor(policy(), sdk::RawEnum(args->op_class), &op));
      args->storage_dtype = op.storage_dtype;
      args->compute_dtype = op.compute_dtype;
      args->accumulate_dtype = op.accumulate_dtype;
      args->compute_mode = op.compute_mode;
      return Status::Ok();
    });
  }

  static MNT_Error* GetMemoryPlan(MNT_Precision_GetMemoryPlan_Args* args) {
    return sdk::Guard("Precision_GetMemoryPlan", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Precision_GetMemoryPlan_Args, args);
      MemoryPlan plan;
      MNT_RETURN_IF_ERROR(
          MemoryPlanFor(policy(), args->optimizer_state_slots, &plan));
      args->bytes_weights = plan.bytes_weights;
      args->bytes_master_weights = plan.bytes_master_weights;
      args->bytes_gradients = plan.bytes_gradients;
      args->bytes_master_gradients = plan.bytes_master_gradients;
      args->bytes_optimizer_state = plan.bytes_optimizer_state;
      return Status::Ok();
    });
  }

  static bool has_scaled_formats() {
    return policy().scaled_matmul_dtype != MNT_DTYPE_INVALID;
  }

  static MNT_Error* ScalerCreate(MNT_LossScaler_Create_Args* args) {
    return sdk::Guard("LossScaler_Create", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_LossScaler_Create_Args, args);
      const PrecisionPolicy& p = policy();
      // A precision with scaled formats takes the scaling recipe's options
      // (the same parser as Precision_GetScalingRecipe); its scaler takes
      // none of its own.
      const char* scaler_precision_options = args->precision_options;
      if (has_scaled_formats()) scaler_precision_options = nullptr;
      LossScalerConfig config;
      MNT_RETURN_IF_ERROR(ParseLossScalerConfig(
          args->options, scaler_precision_options, p.name,
          p.default_loss_scaling, p.supports_loss_scaling, &config));
      if (has_scaled_formats()) {
        ScalingRecipeConfig recipe;
        MNT_RETURN_IF_ERROR(
            ParseScalingRecipe(args->precision_options, p.name, &recipe));
      }
      args->scaler = new MNT_LossScaler{LossScaler(config)};
      return Status::Ok();
    });
  }

  // Only in the table of a precision with scaled formats (fp8).
  static MNT_Error* GetScalingRecipe(
      MNT_Precision_GetScalingRecipe_Args* args) {
    return sdk::Guard("Precision_GetScalingRecipe", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Precision_GetScalingRecipe_Args, args);
      ScalingRecipeConfig recipe;
      MNT_RETURN_IF_ERROR(
          ParseScalingRecipe(args->precision_options, policy().name, &recipe));
      FillScalingRecipeArgs(recipe, args);
      return Status::Ok();
    });
  }
};

MNT_Error* ScalerDestroy(MNT_LossScaler_Destroy_Args* args) {
  return sdk::Guard("LossScaler_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Destroy_Args, args);
    delete args->scaler;
    return Status::Ok();
  });
}

MNT_Error* ScalerGetState(MNT_LossScaler_GetState_Args* args) {
  return sdk::Guard("LossScaler_GetState", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_GetState_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_GetState", args->scaler));
    MNT_RETURN_IF_ERROR(CheckStateSize("LossScaler_GetState", args->state));
    const LossScalerSnapshot s = args->scaler->impl.state();
    args->state.scale = s.scale;
    args->state.growth_tracker = s.growth_tracker;
    args->state.skipped_steps = s.skipped_steps;
    args->hysteresis_tracker = s.hysteresis_tracker;
    args->plugin_state = nullptr;  // the built-in scalers keep no state of their own
    args->plugin_state_size = 0;
    return Status::Ok();
  });
}

MNT_Error* ScalerSetState(MNT_LossScaler_SetState_Args* args) {
  return sdk::Guard("LossScaler_SetState", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_SetState_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_SetState", args->scaler));
    MNT_RETURN_IF_ERROR(CheckStateSize("LossScaler_SetState", args->state));
    LossScalerSnapshot s;
    s.scale = args->state.scale;
    s.growth_tracker = args->state.growth_tracker;
    s.skipped_steps = args->state.skipped_steps;
    s.hysteresis_tracker = args->hysteresis_tracker;
    if (args->plugin_state != nullptr && args->plugin_state_size != 0) {
      return sdk::InvalidArgument(sdk::Format(
          "LossScaler_SetState: plugin_state of %zu bytes, but this scaler "
          "keeps no state of its own",
          args->plugin_state_size));
    }
    return args->scaler->impl.SetState(s);
  });
}

MNT_Error* ScalerGetRecipe(MNT_LossScaler_GetRecipe_Args* args) {
  return sdk::Guard("LossScaler_GetRecipe", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_GetRecipe_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_GetRecipe", args->scaler));
    LossScaleRecipeParams r;
    if (!args->scaler->impl.Recipe(&r)) {
      args->recipe = MNT_LOSS_SCALE_RECIPE_NONE;
      return Status::Ok();
    }
    args->recipe = MNT_LOSS_SCALE_RECIPE_DYNAMIC;
    args->growth_factor = r.growth_factor;
    args->backoff_factor = r.backoff_factor;
    args->growth_interval = r.growth_interval;
    args->hysteresis = r.hysteresis;
    args->min_scale = r.min_scale;
    args->max_scale = r.max_scale;
    return Status::Ok();
  });
}

MNT_Error* ScalerUpdate(MNT_LossScaler_Update_Args* args) {
  return sdk::Guard("LossScaler_Update", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Update_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_Update", args->scaler));
    const UpdateResult r = args->scaler->impl.Update(args->found_inf != 0);
    args->skip_step = r.skip_step ? 1 : 0;
    args->new_scale = r.new_scale;
    return Status::Ok();
  });
}

template <PrecisionKind kKind>
const MNT_Precision_Api* PrecisionApi() {
  static const MNT_Precision_Api api = {
      MNT_Precision_Api_STRUCT_SIZE,
      nullptr,
      &Entry<kKind>::GetPolicy,
      &Entry<kKind>::GetOpClassPolicy,
      &Entry<kKind>::GetMemoryPlan,
      &Entry<kKind>::ScalerCreate,
      &ScalerDestroy,
      &ScalerGetState,
      &ScalerSetState,
      &ScalerUpdate,
      &ScalerGetRecipe,
      // NULL: MNT_SCALING_RECIPE_NONE, no scaled formats.
      Entry<kKind>::has_scaled_formats() ? &Entry<kKind>::GetScalingRecipe
                                         : nullptr,
  };
  return &api;
}

// Every in-tree precision takes its own options (ABI 1.5's
// precision_options; the built-in fp16's hysteresis, min_scale, max_scale,
// fp8's scaling recipe, the others' refusal of any key).
constexpr int32_t kCapabilities[] = {MNT_CAPABILITY_PRECISION_OPTIONS};

template <PrecisionKind kKind>
const MNT_Plugin_Api* PluginApi() {
  static MNT_Capabilities_Extension capabilities = sdk::MakeCapabilitiesExtension(kCapabilities);
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_PRECISION, PolicyFor(kKind).name,
      PolicyFor(kKind).description, nullptr, PrecisionApi<kKind>(), nullptr,
      nullptr, &capabilities.header.base);
  return &api;
}

}  // namespace

const MNT_Plugin_Api* Fp32PluginApi() { return PluginApi<PrecisionKind::kFp32>(); }
const MNT_Plugin_Api* Tf32PluginApi() { return PluginApi<PrecisionKind::kTf32>(); }
const MNT_Plugin_Api* Bf16PluginApi() { return PluginApi<PrecisionKind::kBf16>(); }
const MNT_Plugin_Api* Fp16PluginApi() { return PluginApi<PrecisionKind::kFp16>(); }
const MNT_Plugin_Api* Fp8PluginApi() { return PluginApi<PrecisionKind::kFp8>(); }

}  // namespace mnt::precision
