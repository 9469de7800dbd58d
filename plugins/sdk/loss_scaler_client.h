// Mantissa plugin SDK: one loss scaler of a precision plugin, owned by the
// host. LossScaler_Create on the way in, LossScaler_Destroy on the way out,
// and typed calls for the state machine in between.
#ifndef MANTISSA_PLUGINS_SDK_LOSS_SCALER_CLIENT_H_
#define MANTISSA_PLUGINS_SDK_LOSS_SCALER_CLIENT_H_

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/loss_scale_math.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

// What LossScaler_GetRecipe answered (ABI 1.5): whether the scaler's update
// is the standard dynamic recipe (loss_scale_math.h), and its parameters.
struct LossScalerRecipe {
  bool declared = false;  // MNT_LOSS_SCALE_RECIPE_DYNAMIC
  LossScaleRecipeParams params;
};

// The whole state of a scaler: the 1.0 fields, the recipe's hysteresis
// tracker and the plugin's own bytes (both ABI 1.5; zero and empty for an
// older plugin).
struct LossScalerFullState {
  MNT_LossScalerState state{};
  int64_t hysteresis_tracker = 0;
  std::string plugin_state;
};

// What one LossScaler_Update answered.
struct LossScalerUpdate {
  // As the plugin wrote it: 1 means the optimizer step must not be applied.
  // Update() passes in the value it holds, so a caller can preset a
  // sentinel and see whether the plugin wrote it.
  int32_t skip_step = 0;
  float new_scale = 0;  // the scale for the next step
  bool skip() const { return skip_step != 0; }
};

// Owns one MNT_LossScaler. Movable, not copyable; empty after a move.
class LossScalerClient {
 public:
  LossScalerClient() = default;
  LossScalerClient(LossScalerClient&& o) noexcept { *this = std::move(o); }
  LossScalerClient& operator=(LossScalerClient&& o) noexcept {
    if (this != &o) {
      Reset();
      plugin_ = std::exchange(o.plugin_, nullptr);
      scaler_ = std::exchange(o.scaler_, nullptr);
    }
    return *this;
  }
  LossScalerClient(const LossScalerClient&) = delete;
  LossScalerClient& operator=(const LossScalerClient&) = delete;
  ~LossScalerClient() { Reset(); }

  // LossScaler_Create with the loss-scaler `options` and the plugin's own
  // `precision_options` ("" for the plugin's defaults). A plugin that answers
  // OK without a scaler is an error; so are precision options for a plugin
  // that does not offer MNT_CAPABILITY_PRECISION_OPTIONS (one built before
  // ABI 1.5 would not see them).
  static Status Create(const MNT_Plugin_Api* plugin, const std::string& options,
                       LossScalerClient* out) {
    return Create(plugin, options, "", out);
  }
  static Status Create(const MNT_Plugin_Api* plugin, const std::string& options,
                       const std::string& precision_options, LossScalerClient* out) {
    if (!precision_options.empty() &&
        !HasCapability(plugin, MNT_CAPABILITY_PRECISION_OPTIONS)) {
      return InvalidArgument(Format(
          "precision options '%s' refused: the plugin (ABI %d.%d) takes none "
          "(capability PRECISION_OPTIONS, ABI 1.5)%s",
          precision_options.c_str(), plugin->abi_version.major_version,
          plugin->abi_version.minor_version,
          RebuiltSourceHint(plugin, MNT_CAPABILITY_PRECISION_OPTIONS).c_str()));
    }
    MNT_LossScaler_Create_Args a{};
    a.struct_size = MNT_LossScaler_Create_Args_STRUCT_SIZE;
    a.options = options.c_str();
    a.precision_options = precision_options.c_str();
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin, plugin->precision->LossScaler_Create(&a)));
    if (a.scaler == nullptr) {
      return Internal("LossScaler_Create returned OK but no scaler");
    }
    LossScalerClient c;
    c.plugin_ = plugin;
    c.scaler_ = a.scaler;
    *out = std::move(c);
    return Status::Ok();
  }

  bool empty() const { return scaler_ == nullptr; }
  const MNT_Plugin_Api* plugin() const { return plugin_; }

  Status GetState(MNT_LossScalerState* state) const {
    LossScalerFullState full;
    MNT_RETURN_IF_ERROR(GetFullState(&full));
    *state = full.state;
    return Status::Ok();
  }

  // The state with the recipe's hysteresis tracker and the plugin's own
  // bytes (copied out of the plugin's storage).
  Status GetFullState(LossScalerFullState* out) const {
    MNT_LossScaler_GetState_Args a{};
    a.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin_, plugin_->precision->LossScaler_GetState(&a)));
    if (a.plugin_state == nullptr && a.plugin_state_size != 0) {
      return Internal(Format(
          "LossScaler_GetState gave plugin_state_size %zu with a NULL plugin_state",
          a.plugin_state_size));
    }
    out->state = a.state;
    out->hysteresis_tracker = a.hysteresis_tracker;
    out->plugin_state.assign(static_cast<const char*>(a.plugin_state),
                             a.plugin_state == nullptr ? 0 : a.plugin_state_size);
    return Status::Ok();
  }

  // Restores a state from GetState (scale, growth tracker, skipped steps);
  // its struct_size is set here. The plugin keeps its own state and a zero
  // hysteresis tracker.
  Status SetState(const MNT_LossScalerState& state) const {
    LossScalerFullState full;
    full.state = state;
    return SetFullState(full, /*with_plugin_state=*/false);
  }

  // Restores a full state; `with_plugin_state` false leaves the plugin's own
  // bytes as they are (plugin_state NULL), as when the host hands back what
  // the device computed.
  Status SetFullState(const LossScalerFullState& full, bool with_plugin_state) const {
    MNT_LossScaler_SetState_Args a{};
    a.struct_size = MNT_LossScaler_SetState_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.state = full.state;
    a.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
    a.hysteresis_tracker = full.hysteresis_tracker;
    if (with_plugin_state) {
      // A non-NULL pointer even for 0 bytes: "the plugin's state is empty".
      a.plugin_state = full.plugin_state.data();
      a.plugin_state_size = full.plugin_state.size();
    }
    return StatusFromPluginError(plugin_,
                                 plugin_->precision->LossScaler_SetState(&a));
  }

  // LossScaler_GetRecipe, or "no recipe" for a plugin without it (before
  // ABI 1.5, or NULL). A declared recipe with parameters outside their
  // ranges is an error.
  Status GetRecipe(LossScalerRecipe* out) const {
    *out = LossScalerRecipe{};
#if MNT_ABI_MINOR < 5
    return Status::Ok();  // a source built for a minor before 1.5 has no recipes
#else
    const MNT_Precision_Api* api = plugin_->precision;
    if (!MNT_HAS_FIELD(api, MNT_Precision_Api, LossScaler_GetRecipe) ||
        api->LossScaler_GetRecipe == nullptr) {
      return Status::Ok();
    }
    MNT_LossScaler_GetRecipe_Args a{};
    a.struct_size = MNT_LossScaler_GetRecipe_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    MNT_RETURN_IF_ERROR(StatusFromPluginError(plugin_, api->LossScaler_GetRecipe(&a)));
    const std::optional<MNT_LossScaleRecipe> recipe = ReadEnum(a.recipe);
    if (!recipe) {
      return InvalidArgument(
          Format("LossScaler_GetRecipe: unknown recipe %d", RawEnum(a.recipe)));
    }
    if (*recipe == MNT_LOSS_SCALE_RECIPE_NONE) return Status::Ok();
    LossScaleRecipeParams& p = out->params;
    p.growth_factor = a.growth_factor;
    p.backoff_factor = a.backoff_factor;
    p.growth_interval = a.growth_interval;
    p.hysteresis = a.hysteresis;
    p.min_scale = a.min_scale;
    p.max_scale = a.max_scale;
    if (!(p.growth_factor > 1 && p.growth_factor < 1e300) ||
        !(p.backoff_factor > 0 && p.backoff_factor < 1) || p.growth_interval < 1 ||
        p.hysteresis < 1 || !(p.min_scale >= 0 && std::isfinite(p.min_scale)) ||
        !(p.max_scale == 0 || (p.max_scale >= p.min_scale && std::isfinite(p.max_scale)))) {
      return InvalidArgument(Format(
          "LossScaler_GetRecipe: parameters out of range (growth_factor %g, "
          "backoff_factor %g, growth_interval %lld, hysteresis %d, min_scale %g, "
          "max_scale %g)",
          p.growth_factor, p.backoff_factor, static_cast<long long>(p.growth_interval),
          p.hysteresis, static_cast<double>(p.min_scale), static_cast<double>(p.max_scale)));
    }
    out->declared = true;
    return Status::Ok();
#endif
  }

  // One optimizer step's update after the non-finite check.
  Status Update(bool found_inf, LossScalerUpdate* update) const {
    MNT_LossScaler_Update_Args a{};
    a.struct_size = MNT_LossScaler_Update_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.found_inf = found_inf ? 1 : 0;
    a.skip_step = update->skip_step;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin_, plugin_->precision->LossScaler_Update(&a)));
    update->skip_step = a.skip_step;
    update->new_scale = a.new_scale;
    return Status::Ok();
  }

  // Destroys the scaler now (also done by the destructor).
  void Reset() {
    if (scaler_ == nullptr) return;
    MNT_LossScaler_Destroy_Args a{};
    a.struct_size = MNT_LossScaler_Destroy_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    // Destructors cannot report; a failing destroy has nothing left to save.
    (void)StatusFromPluginError(plugin_,
                                plugin_->precision->LossScaler_Destroy(&a));
    scaler_ = nullptr;
  }

 private:
  const MNT_Plugin_Api* plugin_ = nullptr;
  MNT_LossScaler* scaler_ = nullptr;
};

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_LOSS_SCALER_CLIENT_H_
