// The FP8 scaling state of a run whose precision runs GEMMs in FP8 (ABI
// 1.10): per scaled tensor a scale, its inverse, the last pass's amax and,
// for delayed scaling, the amax history, all on the device. The model reads
// the scales and writes the amax (sdk::Fp8Tensors); the trainer runs the
// precision's recipe after every training step with FP8_SCALE_UPDATE (no
// host round trip), saves the state in checkpoints and reads it for the
// logs at --log_every.
//
// Slots come from the parameter shapes (plugins/sdk/fp8_slots.h); the
// forward roles (inputs, weights) and the backward role (output gradients)
// are two recipes' worth of tensors, because their formats' maxima differ,
// so each has its own history: [H, 2S] and [H, S].
#ifndef MANTISSA_TRAINER_CORE_FP8_SCALING_H_
#define MANTISSA_TRAINER_CORE_FP8_SCALING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model_client.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {

class Fp8Scaling {
 public:
  struct ParamShape {
    std::string name;
    std::vector<int64_t> dims;
  };

  // Allocates the state for `params` (spec order) with every scale 1, every
  // amax and history entry 0.
  static absl::StatusOr<std::unique_ptr<Fp8Scaling>> Create(
      const sdk::BackendClient& client, const MNT_Precision_GetScalingRecipe_Args& recipe,
      const std::vector<ParamShape>& params);

  const MNT_Precision_GetScalingRecipe_Args& recipe() const { return recipe_; }
  bool delayed() const { return recipe_.recipe == MNT_SCALING_RECIPE_DELAYED; }
  int64_t slots() const { return slots_; }
  // What Model Forward and Backward take (pointers into this object).
  sdk::Fp8Tensors tensors() const { return {&scales_, &scale_invs_, &amax_}; }
  // Every amax, F32 [3S] (for the data-parallel max before Update).
  MNT_Tensor flat_amax() const;
  // Device bytes of the state (for the memory report).
  int64_t device_bytes() const;

  // The recipe's step: history and scales from this step's amax (delayed
  // scaling; nothing for current scaling, whose model sets its scales).
  absl::Status Update();

  // The name of every slot a GEMM used so far (its amax was ever written),
  // "<param>[.<layer>]/<input|weight|grad_output>", with its scale and last
  // amax, read from the device.
  struct Entry {
    std::string name;
    float scale = 0;
    float amax = 0;
  };
  absl::StatusOr<std::vector<Entry>> Read() const;

  // The state as checkpoint tensors ("fp8.scales", "fp8.scale_invs",
  // "fp8.amax", and for delayed scaling "fp8.history_forward",
  // "fp8.history_backward") and back. CheckCheckpoint says whether a
  // checkpoint's state fits this run (one line naming `path` when not);
  // Restore writes a checked one to the device.
  absl::Status Save(mantissa::CheckpointData* ckpt) const;
  absl::Status CheckCheckpoint(const mantissa::CheckpointData& ckpt,
                               const std::string& path) const;
  absl::Status Restore(const mantissa::CheckpointData& ckpt);

 private:
  Fp8Scaling(const sdk::BackendClient& client, const MNT_Precision_GetScalingRecipe_Args& recipe)
      : client_(client), recipe_(recipe) {}
  struct Stored {
    const char* name;
    const MNT_Tensor* tensor;
  };
  std::vector<Stored> StoredTensors() const;

  sdk::BackendClient client_;
  MNT_Precision_GetScalingRecipe_Args recipe_;
  int64_t slots_ = 0;
  std::vector<std::string> slot_names_;
  sdk::DeviceBuffer block_;
  MNT_Tensor scales_{}, scale_invs_{}, amax_{}, history_forward_{}, history_backward_{};
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_FP8_SCALING_H_
