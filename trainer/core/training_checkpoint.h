// What a training checkpoint holds, and where each part comes from and goes
// back to: the fp32 master weights and optimizer state (ParameterStore), the
// applied-step count (Optimizer), the loss scaler's state (the precision
// plugin's scaler, after LossScaling::SyncToPlugin), the data position
// (BatchSampler), the step, and model/options/precision/optimizer for a
// compatibility check; with --stochastic_rounding also the rounding seed and
// the bf16 working copies. Everything needed to continue a run bit for bit. The
// file format is trainer/checkpoint.
//
// To add a field: write it in Save, read and validate it in Restore before
// the first state change (a bad file must lose nothing), and add it to
// CheckpointData (trainer/checkpoint/checkpoint.proto) or its metadata map.
#ifndef MANTISSA_TRAINER_CORE_TRAINING_CHECKPOINT_H_
#define MANTISSA_TRAINER_CORE_TRAINING_CHECKPOINT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/loss_scaler_client.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/eval_policy.h"
#include "trainer/core/fp8_scaling.h"
#include "trainer/core/loss_scaling.h"
#include "trainer/core/optimizer.h"
#include "trainer/core/parameters.h"
#include "trainer/data/sampler.h"

namespace mnt::trainer {

class TrainingCheckpoint {
 public:
  // All borrowed; they outlive this.
  struct Parts {
    const mantissa::TrainConfig* config = nullptr;
    std::string precision_name;
    const sdk::BackendClient* client = nullptr;
    ParameterStore* params = nullptr;
    Optimizer* optimizer = nullptr;
    BatchSampler* sampler = nullptr;
    const sdk::LossScalerClient* scaler = nullptr;
    LossScaling* scaling = nullptr;
    // FP8 GEMMs (ABI 1.10): the scaling state; NULL otherwise.
    Fp8Scaling* fp8 = nullptr;
    // The best eval loss and early stopping's count (eval_policy.h).
    EvalPolicy* eval_policy = nullptr;
    // ZeRO-1: after a restore, the shares' working weights to every rank;
    // and every rank's bytes to every rank (HostComm::AllGather), to
    // assemble the shares into whole tensors.
    std::function<absl::Status()> gather_working_weights;
    std::function<absl::StatusOr<std::vector<std::string>>(const std::string&)> all_gather;
  };
  explicit TrainingCheckpoint(const Parts& parts) : p_(parts) {}

  // The state after `step` optimizer steps, read back from the device; under
  // ZeRO-1 a collective that assembles the ranks' shares (every rank calls
  // it), the same bytes ZeRO-0 saves.
  absl::StatusOr<CheckpointData> Capture(int64_t step);

  // Writes a captured state to `path` atomically.
  static absl::Status Write(const std::string& path, const CheckpointData& ckpt);

  // A line that is equal for equal training states (a hash of every
  // tensor, the loss scale, the skipped steps): what data-parallel ranks
  // compare to check they hold one state.
  static std::string Fingerprint(const CheckpointData& ckpt);

  // Capture, then Write.
  absl::Status Save(const std::string& path, int64_t step);

  // Restores everything and sets *step. A checkpoint of another model,
  // options, precision or optimizer, or one that does not fit the model, is
  // refused before any state changes.
  absl::Status Restore(const std::string& path, int64_t* step);

  // After Restore: a line when the run's --precision_options differ from
  // those the checkpoint was written with (allowed: a floor or hysteresis
  // may be changed on purpose), or when early stopping had ended the run,
  // else "".
  const std::string& restore_note() const { return restore_note_; }

 private:
  Parts p_;
  std::string restore_note_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_TRAINING_CHECKPOINT_H_
