// Mantissa plugin SDK: one loss scaler of a precision plugin, owned by the
// host. LossScaler_Create on the way in, LossScaler_Destroy on the way out,
// and typed calls for the state machine in between.
#ifndef MANTISSA_PLUGINS_SDK_LOSS_SCALER_CLIENT_H_
#define MANTISSA_PLUGINS_SDK_LOSS_SCALER_CLIENT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "plugins/abi/mnt_common.h"
#include "plugins/abi/mnt_precision.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"

namespace mnt::sdk {

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

  // LossScaler_Create with `options` ("" for the plugin's defaults). A plugin
  // that answers OK without a scaler is an error.
  static Status Create(const MNT_Plugin_Api* plugin, const std::string& options,
                       LossScalerClient* out) {
    MNT_LossScaler_Create_Args a{};
    a.struct_size = MNT_LossScaler_Create_Args_STRUCT_SIZE;
    a.options = options.c_str();
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
    MNT_LossScaler_GetState_Args a{};
    a.struct_size = MNT_LossScaler_GetState_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
    MNT_RETURN_IF_ERROR(
        StatusFromPluginError(plugin_, plugin_->precision->LossScaler_GetState(&a)));
    *state = a.state;
    return Status::Ok();
  }

  // Restores a state from GetState (scale, growth tracker, skipped steps);
  // its struct_size is set here.
  Status SetState(const MNT_LossScalerState& state) const {
    MNT_LossScaler_SetState_Args a{};
    a.struct_size = MNT_LossScaler_SetState_Args_STRUCT_SIZE;
    a.scaler = scaler_;
    a.state = state;
    a.state.struct_size = MNT_LossScalerState_STRUCT_SIZE;
    return StatusFromPluginError(plugin_,
                                 plugin_->precision->LossScaler_SetState(&a));
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
