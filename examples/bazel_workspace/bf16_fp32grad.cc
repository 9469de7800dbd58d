// An out-of-tree Mantissa precision plugin built with Bazel: "bf16_fp32grad".
//
// bf16 mixed precision that keeps gradients in fp32: bf16 working weights and
// activations with bf16 tensor-core GEMMs, but fp32 gradients, master weights
// and optimizer state (as Megatron-LM does with its fp32 gradient
// accumulation), so small gradient contributions are not rounded away in
// bf16's 8-bit mantissa. bf16 has fp32's exponent range, so no loss scaling is
// needed by default; `mode=static,init_scale=S` multiplies the loss by a fixed
// S and skips steps whose gradients overflow.
//
// Built from a separate Bazel workspace against the SDK bundle, with
// -Wall -Wextra -Werror; see BUILD. Its table comes from the SDK's maker, so
// it stays warning-clean when a later minor appends to it.
#include <cmath>
#include <memory>
#include <string>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/options.h"
#include "plugins/sdk/status.h"

namespace bf16_fp32grad {

using mnt::sdk::Status;

struct Config {
  MNT_LossScaling mode = MNT_LOSS_SCALING_NONE;
  double init_scale = 1.0;
};

Status ParseConfig(const char* text, Config* out) {
  mnt::sdk::Options o;
  MNT_RETURN_IF_ERROR(
      mnt::sdk::Options::Parse(text, "bf16_fp32grad options", &o));
  MNT_RETURN_IF_ERROR(o.CheckKnown({"mode", "init_scale"}));
  Config c;
  std::string mode = "none";
  MNT_RETURN_IF_ERROR(o.GetString("mode", &mode));
  if (mode == "none") {
    c.mode = MNT_LOSS_SCALING_NONE;
  } else if (mode == "static") {
    c.mode = MNT_LOSS_SCALING_STATIC;
  } else {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "bf16_fp32grad options: mode='%s' is not none or static (bf16 needs "
        "no dynamic loss scaling)",
        mode.c_str()));
  }
  MNT_RETURN_IF_ERROR(o.GetDouble("init_scale", &c.init_scale));
  if (!(c.init_scale > 0) || c.init_scale > 3.0e38) {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "bf16_fp32grad options: init_scale=%g must be in (0, 3e38]",
        c.init_scale));
  }
  if (c.mode == MNT_LOSS_SCALING_NONE) c.init_scale = 1.0;
  *out = c;
  return Status::Ok();
}

}  // namespace bf16_fp32grad

// The opaque scaler handed to the trainer: a fixed scale and a skip counter.
struct MNT_LossScaler {
  bf16_fp32grad::Config config;
  int64_t skipped_steps = 0;
};

namespace bf16_fp32grad {
namespace {

Status CheckScaler(const char* call, const MNT_LossScaler* s) {
  if (s == nullptr) {
    return mnt::sdk::InvalidArgument(
        mnt::sdk::Format("bf16_fp32grad %s: scaler is NULL", call));
  }
  return Status::Ok();
}

MNT_Error* GetPolicy(MNT_Precision_GetPolicy_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad Precision_GetPolicy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Precision_GetPolicy_Args, args);
    args->weight_dtype = MNT_DTYPE_BF16;
    args->master_weight_dtype = MNT_DTYPE_F32;
    args->gradient_dtype = MNT_DTYPE_F32;
    args->activation_dtype = MNT_DTYPE_BF16;
    args->optimizer_state_dtype = MNT_DTYPE_F32;
    args->matmul_compute = MNT_COMPUTE_BF16;
    args->loss_scaling = MNT_LOSS_SCALING_NONE;
    return Status::Ok();
  });
}

// Matmuls in bf16; softmax, norms, losses, reductions and the optimizer in
// fp32 (the split autocast uses).
MNT_Error* GetOpClassPolicy(MNT_Precision_GetOpClassPolicy_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad Precision_GetOpClassPolicy",
                         [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Precision_GetOpClassPolicy_Args, args);
    args->accumulate_dtype = MNT_DTYPE_F32;
    args->compute_mode = MNT_COMPUTE_F32;
    switch (args->op_class) {
      case MNT_OP_CLASS_MATMUL:
        args->storage_dtype = MNT_DTYPE_BF16;
        args->compute_dtype = MNT_DTYPE_BF16;
        args->compute_mode = MNT_COMPUTE_BF16;
        return Status::Ok();
      case MNT_OP_CLASS_ELEMENTWISE:
      case MNT_OP_CLASS_NORMALIZATION:
      case MNT_OP_CLASS_SOFTMAX:
      case MNT_OP_CLASS_EMBEDDING:
        args->storage_dtype = MNT_DTYPE_BF16;
        args->compute_dtype = MNT_DTYPE_F32;
        return Status::Ok();
      case MNT_OP_CLASS_LOSS:
      case MNT_OP_CLASS_REDUCTION:
      case MNT_OP_CLASS_OPTIMIZER:
        args->storage_dtype = MNT_DTYPE_F32;
        args->compute_dtype = MNT_DTYPE_F32;
        return Status::Ok();
      default:
        return mnt::sdk::InvalidArgument(
            mnt::sdk::Format("bf16_fp32grad: unknown op class %d",
                             static_cast<int>(args->op_class)));
    }
  });
}

MNT_Error* GetMemoryPlan(MNT_Precision_GetMemoryPlan_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad Precision_GetMemoryPlan",
                         [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Precision_GetMemoryPlan_Args, args);
    if (args->optimizer_state_slots < 0 || args->optimizer_state_slots > 64) {
      return mnt::sdk::InvalidArgument(mnt::sdk::Format(
          "bf16_fp32grad: optimizer_state_slots=%d is outside [0, 64]",
          args->optimizer_state_slots));
    }
    args->bytes_weights = 2;
    args->bytes_master_weights = 4;
    args->bytes_gradients = 4;
    args->bytes_master_gradients = 4;  // the trainer's fp32 accumulation copy
    args->bytes_optimizer_state = 4 * args->optimizer_state_slots;
    return Status::Ok();
  });
}

MNT_Error* ScalerCreate(MNT_LossScaler_Create_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad LossScaler_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Create_Args, args);
    auto scaler = std::make_unique<MNT_LossScaler>();
    MNT_RETURN_IF_ERROR(ParseConfig(args->options, &scaler->config));
    // bf16 has no options of its own (--precision_options): refuse any.
    mnt::sdk::Options own;
    MNT_RETURN_IF_ERROR(mnt::sdk::Options::Parse(
        args->precision_options, "bf16_fp32grad precision options", &own));
    MNT_RETURN_IF_ERROR(own.CheckKnown({}));
    args->scaler = scaler.release();
    return Status::Ok();
  });
}

MNT_Error* ScalerDestroy(MNT_LossScaler_Destroy_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad LossScaler_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Destroy_Args, args);
    delete args->scaler;
    return Status::Ok();
  });
}

MNT_Error* ScalerGetState(MNT_LossScaler_GetState_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad LossScaler_GetState", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_GetState_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_GetState", args->scaler));
    MNT_RETURN_IF_ERROR(mnt::sdk::CheckStructSize(
        "MNT_LossScalerState", MNT_LossScalerState_STRUCT_SIZE,
        args->state.struct_size));
    args->state.scale = static_cast<float>(args->scaler->config.init_scale);
    args->state.growth_tracker = 0;
    args->state.skipped_steps = args->scaler->skipped_steps;
    return Status::Ok();
  });
}

// The scale is fixed by the options, so only the skip counter is restored;
// a checkpoint written with a different scale is refused rather than mixed.
MNT_Error* ScalerSetState(MNT_LossScaler_SetState_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad LossScaler_SetState", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_SetState_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_SetState", args->scaler));
    MNT_RETURN_IF_ERROR(mnt::sdk::CheckStructSize(
        "MNT_LossScalerState", MNT_LossScalerState_STRUCT_SIZE,
        args->state.struct_size));
    const MNT_LossScalerState& s = args->state;
    const float scale = static_cast<float>(args->scaler->config.init_scale);
    if (s.scale != scale || s.growth_tracker != 0 || s.skipped_steps < 0) {
      return mnt::sdk::InvalidArgument(mnt::sdk::Format(
          "bf16_fp32grad LossScaler_SetState: state scale=%g tracker=%lld "
          "skipped=%lld does not fit this fixed scale %g",
          static_cast<double>(s.scale), static_cast<long long>(s.growth_tracker),
          static_cast<long long>(s.skipped_steps), static_cast<double>(scale)));
    }
    args->scaler->skipped_steps = s.skipped_steps;
    return Status::Ok();
  });
}

MNT_Error* ScalerUpdate(MNT_LossScaler_Update_Args* args) {
  return mnt::sdk::Guard("bf16_fp32grad LossScaler_Update", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Update_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_Update", args->scaler));
    MNT_LossScaler& s = *args->scaler;
    // Without scaling nothing is skipped (as the ABI asks of mode=none);
    // a static scale skips the steps whose gradients overflowed.
    args->skip_step = 0;
    if (s.config.mode == MNT_LOSS_SCALING_STATIC && args->found_inf) {
      args->skip_step = 1;
      ++s.skipped_steps;
    }
    args->new_scale = static_cast<float>(s.config.init_scale);
    return Status::Ok();
  });
}

// The calls every precision has; the optional ones (a recipe, scaled
// formats, whatever a later minor appends) stay NULL: not offered.
const MNT_Precision_Api kPrecisionApi = mnt::sdk::MakePrecisionApi(
    &GetPolicy, &GetOpClassPolicy, &GetMemoryPlan, &ScalerCreate, &ScalerDestroy,
    &ScalerGetState, &ScalerSetState, &ScalerUpdate);

}  // namespace

const MNT_Plugin_Api* PluginApi() {
  // What the plugin offers beyond its minimum, here precision_options (it
  // takes none, and refuses any with one line, rather than the trainer
  // refusing them for it).
  static const int32_t kCapabilities[] = {MNT_CAPABILITY_PRECISION_OPTIONS};
  static MNT_Capabilities_Extension capabilities =
      mnt::sdk::MakeCapabilitiesExtension(kCapabilities);
  static const MNT_Plugin_Api api = mnt::sdk::MakePluginApi(
      MNT_PLUGIN_KIND_PRECISION, "bf16_fp32grad",
      "bf16 weights, activations and GEMMs; fp32 gradients, master weights "
      "and optimizer state; no loss scaling by default",
      nullptr, &kPrecisionApi, nullptr, nullptr, &capabilities.header.base);
  return &api;
}

}  // namespace bf16_fp32grad

MNT_EXPORT_PLUGIN(bf16_fp32grad::PluginApi)
