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
// Built against ABI 1.5 it also shows what a plugin owns there:
//   * its own options, from the trainer's --precision_options:
//     min_scale, max_scale and recipe=declare|none;
//   * its own state: floor_hits, how many backoffs the floor stopped, kept
//     in the scaler's plugin_state bytes, so checkpoints carry it and
//     --resume continues it;
//   * a declaration (LossScaler_GetRecipe): its update is the standard
//     dynamic recipe with a floor and a ceiling, so the trainer may run it on
//     the device; recipe=none declares nothing and keeps the host path (the
//     trainer then calls LossScaler_Update every step, and floor_hits counts;
//     on the device path LossScaler_Update is not called, the trainer hands
//     back the recipe's state with plugin_state NULL, and floor_hits keeps
//     its value).
// The same file still builds against older SDKs (the #if blocks).
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

// Doubles at or above this round to inf as float; a growth that would get
// there keeps the scale (as GradScaler and the standard recipe do).
constexpr double kFloatOverflow = 0x1.ffffffp+127;

struct Config {
  MNT_LossScaling mode = MNT_LOSS_SCALING_DYNAMIC;
  bool declare_recipe = true;
  double init_scale = 65536.0;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  long long growth_interval = 1000;  // DeepSpeed's loss_scale_window
  double min_scale = 1.0;
  double max_scale = 16777216.0;  // 2^24
};

// `text`: the loss-scaler options (--loss_scale_* flags); `own`: the
// plugin's own options (--precision_options, ABI 1.5; NULL before).
Status ParseConfig(const char* text, const char* own, Config* out) {
  mnt::sdk::Options o;
  MNT_RETURN_IF_ERROR(mnt::sdk::Options::Parse(text, "fp16_floor options", &o));
  MNT_RETURN_IF_ERROR(o.CheckKnown({"mode", "init_scale", "growth_factor",
                                    "backoff_factor", "growth_interval",
                                    "min_scale", "max_scale"}));
  mnt::sdk::Options p;
  MNT_RETURN_IF_ERROR(
      mnt::sdk::Options::Parse(own, "fp16_floor precision options", &p));
  MNT_RETURN_IF_ERROR(p.CheckKnown({"min_scale", "max_scale", "recipe"}));
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
  MNT_RETURN_IF_ERROR(p.GetDouble("min_scale", &c.min_scale));
  MNT_RETURN_IF_ERROR(p.GetDouble("max_scale", &c.max_scale));
  std::string recipe = "declare";
  MNT_RETURN_IF_ERROR(p.GetString("recipe", &recipe));
  if (recipe != "declare" && recipe != "none") {
    return mnt::sdk::InvalidArgument(mnt::sdk::Format(
        "fp16_floor precision options: recipe='%s' is not declare or none",
        recipe.c_str()));
  }
  c.declare_recipe = recipe == "declare";
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
  // The declared recipe keeps the floor and the ceiling in fp32.
  c.min_scale = static_cast<float>(c.min_scale);
  c.max_scale = static_cast<float>(c.max_scale);
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
  // The plugin's own state (ABI 1.5 plugin_state): backoffs the floor
  // stopped. Serialized as a version byte (1) and 8 little-endian bytes.
  int64_t floor_hits = 0;
  unsigned char state_bytes[9] = {};  // GetState's plugin_state points here
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
#if MNT_ABI_MINOR >= 5
    const char* own = args->precision_options;
#else
    const char* own = nullptr;
#endif
    MNT_RETURN_IF_ERROR(ParseConfig(args->options, own, &scaler->config));
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
#if MNT_ABI_MINOR >= 5
    unsigned char* b = args->scaler->state_bytes;
    b[0] = 1;  // format version
    const uint64_t hits = static_cast<uint64_t>(args->scaler->floor_hits);
    for (int i = 0; i < 8; ++i) b[1 + i] = static_cast<unsigned char>(hits >> (8 * i));
    args->hysteresis_tracker = 0;  // backs off on every overflow
    args->plugin_state = b;
    args->plugin_state_size = sizeof(args->scaler->state_bytes);
#endif
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
    int64_t floor_hits = args->scaler->floor_hits;
#if MNT_ABI_MINOR >= 5
    if (args->hysteresis_tracker != 0) {
      return mnt::sdk::InvalidArgument(
          "fp16_floor LossScaler_SetState: hysteresis_tracker must be 0");
    }
    if (args->plugin_state != nullptr) {  // NULL: keep floor_hits as it is
      const auto* b = static_cast<const unsigned char*>(args->plugin_state);
      if (args->plugin_state_size != 9 || b[0] != 1) {
        return mnt::sdk::InvalidArgument(mnt::sdk::Format(
            "fp16_floor LossScaler_SetState: plugin_state of %zu bytes is not "
            "fp16_floor's format 1 (9 bytes)",
            args->plugin_state_size));
      }
      uint64_t hits = 0;
      for (int i = 0; i < 8; ++i) hits |= static_cast<uint64_t>(b[1 + i]) << (8 * i);
      floor_hits = static_cast<int64_t>(hits);
    }
#endif
    args->scaler->scale = s.scale;
    args->scaler->growth_tracker = s.growth_tracker;
    args->scaler->skipped_steps = s.skipped_steps;
    args->scaler->floor_hits = floor_hits;
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
      // Products in double, rounded to fp32 once, then the floor or the
      // ceiling: the standard recipe's bits (plugins/sdk/loss_scale_math.h).
      const float floor = static_cast<float>(c.min_scale);
      const float ceiling = static_cast<float>(c.max_scale);
      if (args->found_inf) {
        const float backed_off =
            static_cast<float>(static_cast<double>(s.scale) * c.backoff_factor);
        if (backed_off < floor) ++s.floor_hits;
        s.scale = backed_off < floor ? floor : backed_off;
        s.growth_tracker = 0;
      } else if (++s.growth_tracker >= c.growth_interval) {
        const double v = static_cast<double>(s.scale) * c.growth_factor;
        const float grown = v < kFloatOverflow ? static_cast<float>(v) : s.scale;
        s.scale = grown > ceiling ? ceiling : grown;
        s.growth_tracker = 0;
      }
    }
    args->new_scale = s.scale;
    return Status::Ok();
  });
}

#if MNT_ABI_MINOR >= 5
// The update above is the standard dynamic recipe with a floor and a
// ceiling (hysteresis 1); plugin_conformance replays it against this
// declaration. recipe=none (or a static/none mode) declares nothing.
MNT_Error* ScalerGetRecipe(MNT_LossScaler_GetRecipe_Args* args) {
  return mnt::sdk::Guard("fp16_floor LossScaler_GetRecipe", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_LossScaler_GetRecipe_Args, args);
    MNT_RETURN_IF_ERROR(CheckScaler("LossScaler_GetRecipe", args->scaler));
    const Config& c = args->scaler->config;
    args->recipe = MNT_LOSS_SCALE_RECIPE_NONE;
    if (!c.declare_recipe || c.mode != MNT_LOSS_SCALING_DYNAMIC) return Status::Ok();
    args->recipe = MNT_LOSS_SCALE_RECIPE_DYNAMIC;
    args->growth_factor = c.growth_factor;
    args->backoff_factor = c.backoff_factor;
    args->growth_interval = c.growth_interval;
    args->hysteresis = 1;
    args->min_scale = static_cast<float>(c.min_scale);
    args->max_scale = static_cast<float>(c.max_scale);
    return Status::Ok();
  });
}
#endif

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
#if MNT_ABI_MINOR >= 5
    &ScalerGetRecipe,
#endif
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
