// An out-of-tree Mantissa precision plugin: "fp16_floor".
//
// fp16 mixed precision (fp16 weights, activations and gradients, fp32 master
// weights and optimizer state, fp16 tensor-core GEMMs) with dynamic loss
// scaling in the style of DeepSpeed's DynamicLossScaler: the scale grows x2
// after a window of 1000 clean steps, halves on every overflow, and never
// drops below a floor (min_scale, default 1) nor grows beyond a ceiling
// (max_scale, default 2^24), so a long run of overflows cannot drive it to
// zero. Every step with a non-finite gradient is skipped.
//
// Built against the Mantissa SDK bundle only:
//   g++ -std=c++17 -O2 -shared -fPIC $(pkg-config --cflags mantissa)
//       fp16_floor.cc -o mnt_precision_fp16_floor.so
//       $(pkg-config --variable=plugin_ldflags mantissa)
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "plugins/abi/mantissa.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/options.h"
#include "plugins/sdk/status.h"

namespace fp16_floor {

using mnt::sdk::Status;

struct Config {
  MNT_LossScaling mode = MNT_LOSS_SCALING_DYNAMIC;
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  long long growth_interval = 1000;  // DeepSpeed's loss_scale_window
  double min_scale = 1.0;
  double max_scale = 16777216.0;  // 2^24
};

Status ParseConfig(const char* text, Config* out) {
  mnt::sdk::Options o;
  MNT_RETURN_IF_ERROR(mnt::sdk::Options::Parse(text, "fp16_floor options", &o));
  MNT_RETURN_IF_ERROR(o.CheckKnown({"mode", "init_scale", "growth_factor",
                                    "backoff_factor", "growth_interval",
                                    "min_scale", "max_scale"}));
  Config c;
  std::string mode = "dynamic";
  MNT_RETURN_IF_ERROR(o.GetString("mode", &mode));
  if (mode == "dynamic") {
    c.mode = MNT_LOSS_SCALING_DYNAMIC;
  } else if (mode == "static") {
    c.mode = MNT_LOSS_SCALING_STATIC;
  } else if (mode == "none") {
    c.mode = MNT_LOSS_SCALING_NONE;
  } else {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "fp16_floor options: mode='%s' is not dynamic, static or none",
        mode.c_str()));
  }
  MNT_RETURN_IF_ERROR(o.GetDouble("init_scale", &c.init_scale));
  MNT_RETURN_IF_ERROR(o.GetDouble("growth_factor", &c.growth_factor));
  MNT_RETURN_IF_ERROR(o.GetDouble("backoff_factor", &c.backoff_factor));
  MNT_RETURN_IF_ERROR(o.GetInt("growth_interval", &c.growth_interval));
  MNT_RETURN_IF_ERROR(o.GetDouble("min_scale", &c.min_scale));
  MNT_RETURN_IF_ERROR(o.GetDouble("max_scale", &c.max_scale));
  if (!(c.min_scale > 0) || !(c.max_scale >= c.min_scale) ||
      c.max_scale > 3.0e38) {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "fp16_floor options: need 0 < min_scale (%g) <= max_scale (%g) <= 3e38",
        c.min_scale, c.max_scale));
  }
  if (!(c.init_scale >= c.min_scale && c.init_scale <= c.max_scale)) {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "fp16_floor options: init_scale=%g is outside [min_scale, max_scale] "
        "= [%g, %g]", c.init_scale, c.min_scale, c.max_scale));
  }
  if (!(c.growth_factor > 1)) {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "fp16_floor options: growth_factor=%g must be > 1", c.growth_factor));
  }
  if (!(c.backoff_factor > 0 && c.backoff_factor < 1)) {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "fp16_floor options: backoff_factor=%g must be in (0, 1)",
        c.backoff_factor));
  }
  if (c.growth_interval < 1) {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "fp16_floor options: growth_interval=%lld must be >= 1",
        c.growth_interval));
  }
  if (c.mode == MNT_LOSS_SCALING_NONE) c.init_scale = 1.0;
  *out = c;
  return Status::Ok();
}

}  // namespace fp16_floor

// The opaque scaler handed to the trainer.
struct MNT_LossScaler {
  fp16_floor::Config config;
  float scale = 1.0f;
  int64_t growth_tracker = 0;
  int64_t skipped_steps = 0;
};

namespace fp16_floor {
namespace {

Status CheckScaler(const char* call, const MNT_LossScaler* s) {
  if (s == nullptr) {
    return mnt::sdk::InvalidArgument(
        mnt::sdk::Format("fp16_floor %s: scaler is NULL", call));
  }
  return Status::Ok();
}

MNT_Error* GetPolicy(MNT_Precision_GetPolicy_Args* args) {
  return mnt::sdk::Guard("fp16_floor Precision_GetPolicy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Precision_GetPolicy_Args, args);
    args->weight_dtype = MNT_DTYPE_F16;
    args->master_weight_dtype = MNT_DTYPE_F32;
    args->gradient_dtype = MNT_DTYPE_F16;
    args->activation_dtype = MNT_DTYPE_F16;
    args->optimizer_state_dtype = MNT_DTYPE_F32;
    args->matmul_compute = MNT_COMPUTE_F16;
    args->loss_scaling = MNT_LOSS_SCALING_DYNAMIC;
    return Status::Ok();
  });
}

// Autocast's split: matmuls in fp16; softmax, norms, losses, reductions and
// the optimizer compute in fp32.
MNT_Error* GetOpClassPolicy(MNT_Precision_GetOpClassPolicy_Args* args) {
  return mnt::sdk::Guard("fp16_floor Precision_GetOpClassPolicy",
                         [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Precision_GetOpClassPolicy_Args, args);
    args->accumulate_dtype = MNT_DTYPE_F32;
    args->compute_mode = MNT_COMPUTE_F32;
    switch (args->op_class) {
      case MNT_OP_CLASS_MATMUL:
        args->storage_dtype = MNT_DTYPE_F16;
        args->compute_dtype = MNT_DTYPE_F16;
        args->compute_mode = MNT_COMPUTE_F16;
        return Status::Ok();
      case MNT_OP_CLASS_ELEMENTWISE:
      case MNT_OP_CLASS_NORMALIZATION:
      case MNT_OP_CLASS_SOFTMAX:
      case MNT_OP_CLASS_EMBEDDING:
        args->storage_dtype = MNT_DTYPE_F16;
        args->compute_dtype = MNT_DTYPE_F32;
        return Status::Ok();
      case MNT_OP_CLASS_LOSS:
      case MNT_OP_CLASS_REDUCTION:
      case MNT_OP_CLASS_OPTIMIZER:
        args->storage_dtype = MNT_DTYPE_F32;
        args->compute_dtype = MNT_DTYPE_F32;
        return Status::Ok();
      default:
        return mnt::sdk::InvalidArgument(mnt::sdk::Format(
            "fp16_floor: unknown op class %d", static_cast<int>(args->op_class)));
    }
  });
}

MNT_Error* GetMemoryPlan(MNT_Precision_GetMemoryPlan_Args* args) {
  return mnt::sdk::Guard("fp16_floor Precision_GetMemoryPlan", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Precision_GetMemoryPlan_Args, args);
    if (args->optimizer_state_slots < 0 || args->optimizer_state_slots > 64) {
      return mnt::sdk::InvalidArgument(mnt::sdk::Format(
          "fp16_floor: optimizer_state_slots=%d is outside [0, 64]",
          args->optimizer_state_slots));
    }
    args->bytes_weights = 2;
    args->bytes_master_weights = 4;
    args->bytes_gradients = 2;
    args->bytes_master_gradients = 4;  // the trainer's fp32 accumulation copy
    args->bytes_optimizer_state = 4 * args->optimizer_state_slots;
    return Status::Ok();
  });
}

MNT_Error* ScalerCreate(MNT_LossScaler_Create_Args* args) {
  return mnt::sdk::Guard("fp16_floor LossScaler_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Create_Args, args);
    auto scaler = std::make_unique<MNT_LossScaler>();
    MNT_RETURN_IF_ERROR(ParseConfig(args->options, &scaler->config));
    scaler->scale = static_cast<float>(scaler->config.init_scale);
    args->scaler = scaler.release();
    return Status::Ok();
  });
}

MNT_Error* ScalerDestroy(MNT_LossScaler_Destroy_Args* args) {
  return mnt::sdk::Guard("fp16_floor LossScaler_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Destroy_Args, args);
    delete args->scaler;
    return Status::Ok();
  });
}

MNT_Error* ScalerGetState(MNT_LossScaler_GetState_Args* args) {
  return mnt::sdk::Guard("fp16_floor LossScaler_GetState", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_GetState_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_GetState", args->scaler));
    MNT_RETURN_IF_ERROR(mnt::sdk::CheckStructSize(
        "MNT_LossScalerState", MNT_LossScalerState_STRUCT_SIZE,
        args->state.struct_size));
    args->state.scale = args->scaler->scale;
    args->state.growth_tracker = args->scaler->growth_tracker;
    args->state.skipped_steps = args->scaler->skipped_steps;
    return Status::Ok();
  });
}

MNT_Error* ScalerSetState(MNT_LossScaler_SetState_Args* args) {
  return mnt::sdk::Guard("fp16_floor LossScaler_SetState", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_SetState_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_SetState", args->scaler));
    MNT_RETURN_IF_ERROR(mnt::sdk::CheckStructSize(
        "MNT_LossScalerState", MNT_LossScalerState_STRUCT_SIZE,
        args->state.struct_size));
    const MNT_LossScalerState& s = args->state;
    const Config& c = args->scaler->config;
    if (!std::isfinite(s.scale) || !(s.scale > 0)) {
      return mnt::sdk::InvalidArgument(mnt::sdk::Format(
          "fp16_floor LossScaler_SetState: scale=%g must be positive and finite",
          static_cast<double>(s.scale)));
    }
    if (s.growth_tracker < 0 || s.growth_tracker >= c.growth_interval ||
        s.skipped_steps < 0) {
      return mnt::sdk::InvalidArgument(mnt::sdk::Format(
          "fp16_floor LossScaler_SetState: growth_tracker=%lld must be in "
          "[0, %lld) and skipped_steps=%lld >= 0",
          static_cast<long long>(s.growth_tracker), c.growth_interval,
          static_cast<long long>(s.skipped_steps)));
    }
    args->scaler->scale = s.scale;
    args->scaler->growth_tracker = s.growth_tracker;
    args->scaler->skipped_steps = s.skipped_steps;
    return Status::Ok();
  });
}

MNT_Error* ScalerUpdate(MNT_LossScaler_Update_Args* args) {
  return mnt::sdk::Guard("fp16_floor LossScaler_Update", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_Update_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_Update", args->scaler));
    MNT_LossScaler& s = *args->scaler;
    const Config& c = s.config;
    args->skip_step = 0;
    if (c.mode != MNT_LOSS_SCALING_NONE && args->found_inf) {
      args->skip_step = 1;
      ++s.skipped_steps;
    }
    if (c.mode == MNT_LOSS_SCALING_DYNAMIC) {
      if (args->found_inf) {
        // Computed in double, clamped to the floor, then rounded to fp32.
        s.scale = static_cast<float>(
            std::fmax(static_cast<double>(s.scale) * c.backoff_factor,
                      c.min_scale));
        s.growth_tracker = 0;
      } else if (++s.growth_tracker >= c.growth_interval) {
        s.scale = static_cast<float>(
            std::fmin(static_cast<double>(s.scale) * c.growth_factor,
                      c.max_scale));
        s.growth_tracker = 0;
      }
    }
    args->new_scale = s.scale;
    return Status::Ok();
  });
}

const MNT_Precision_Api kPrecisionApi = {
    MNT_Precision_Api_STRUCT_SIZE,
    nullptr,
    &GetPolicy,
    &GetOpClassPolicy,
    &GetMemoryPlan,
    &ScalerCreate,
    &ScalerDestroy,
    &ScalerGetState,
    &ScalerSetState,
    &ScalerUpdate,
};

}  // namespace

const MNT_Plugin_Api* PluginApi() {
  static const MNT_Plugin_Api api = mnt::sdk::MakePluginApi(
      MNT_PLUGIN_KIND_PRECISION, "fp16_floor",
      "fp16 mixed precision; dynamic loss scale with a floor and a ceiling "
      "(DeepSpeed style)",
      nullptr, &kPrecisionApi, nullptr, nullptr);
  return &api;
}

}  // namespace fp16_floor

MNT_EXPORT_PLUGIN(fp16_floor::PluginApi)
