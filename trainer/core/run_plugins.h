// The plugin instances one run uses: a backend instance, the precision
// plugin's policy, memory plan and loss scaler, and the model, created in
// that order with one-line errors naming the plugin. Destroyed in reverse
// (model, scaler, backend), after everything allocated on the backend.
#ifndef MANTISSA_TRAINER_CORE_RUN_PLUGINS_H_
#define MANTISSA_TRAINER_CORE_RUN_PLUGINS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/loss_scaler_client.h"
#include "plugins/sdk/model_client.h"
#include "plugins/sdk/precision_client.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/debug/op_tracer.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

struct RunPlugins {
  // Resolves --device and --precision, loads the three plugins from
  // `registry` and creates their instances. The model is sized for one
  // micro-batch of `data_spec`; the memory plan counts
  // `optimizer_state_slots` per parameter. `local_rank` (data parallel: the
  // rank's index on its machine) picks the device (launch.h).
  static absl::StatusOr<std::unique_ptr<RunPlugins>> Create(
      const mantissa::TrainConfig& config, PluginRegistry* registry,
      const MNT_DataSpec& data_spec, int optimizer_state_slots, int local_rank = 0);

  std::string device_name, precision_name;
  std::string backend_description;  // "<device>: <device name>"
  int64_t total_memory_bytes = 0;   // the backend's (Backend_GetInfo); 0: unknown
  std::unique_ptr<sdk::BackendInstance> backend;
  sdk::PrecisionClient precision;
  MNT_Precision_GetPolicy_Args policy{};
  MNT_Precision_GetMemoryPlan_Args plan{};
  sdk::LossScalerClient scaler;  // from --loss_scale_* and --precision_options
  // ABI 1.10: the precision's scaling recipe when its MATMUL op class
  // computes in FP8 (then the model runs its GEMMs in FP8); recipe NONE
  // otherwise.
  MNT_Precision_GetScalingRecipe_Args scaling_recipe{};
  // A precision with FP8 GEMMs and a model without them (no capability
  // MODEL_FP8_GEMMS): the line the run says once; its GEMMs then run in the
  // policy's compute mode (recipe NONE). "" otherwise.
  std::string fp8_note;
  // --debug_overflow: the backend as the model sees it (declared before the
  // model, which borrows its table, so it outlives the model); else null.
  std::unique_ptr<OpTracer> tracer;
  sdk::ModelClient model;
};

// OK when every enum in a precision plugin's policy is a value this ABI
// defines (read as int32, never loaded as the enum first); otherwise one
// line naming the field and the value.
absl::Status CheckPolicyValues(const MNT_Precision_GetPolicy_Args& policy);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_RUN_PLUGINS_H_
