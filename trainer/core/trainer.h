// The training loop: ties one backend, one precision policy and one model
// together, owns parameters, gradients and optimizer state on the device, and
// runs mixed-precision steps with loss scaling, clipping, accumulation,
// evaluation and checkpoints.
#ifndef MANTISSA_TRAINER_CORE_TRAINER_H_
#define MANTISSA_TRAINER_CORE_TRAINER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/batch_source.h"
#include "trainer/core/metrics.h"
#include "trainer/data/sampler.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

// Picks "cpu" or "cuda" for --device=auto (cuda when its plugin loads and
// finds a device) and the precision for --precision=auto (bf16 on a GPU,
// fp32 on the CPU, where 16-bit formats are emulated and only cost time).
absl::StatusOr<std::string> ResolveDevice(const std::string& device,
                                          PluginRegistry* registry);
std::string ResolvePrecision(const std::string& precision,
                             const std::string& device);

class Trainer {
 public:
  // `config` must be validated. The registry must outlive the trainer.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const mantissa::TrainConfig& config, PluginRegistry* registry,
      std::unique_ptr<BatchSource> train_data,
      std::unique_ptr<BatchSource> eval_data);
  ~Trainer();

  // Trains from the current step up to config.steps, evaluating and
  // checkpointing as configured. Stops with an error naming the step on a
  // NaN loss (without loss scaling) or on a plugin error.
  absl::Status Train(MetricsSink* sink);
  // As Train, but stops after optimizer step `last_step` (<= config.steps);
  // the schedule still spans config.steps. Used to interrupt and resume.
  absl::Status TrainUntil(int64_t last_step, MetricsSink* sink);

  // Mean loss and accuracy over the evaluation set (or eval_batches of it).
  absl::StatusOr<EvalMetrics> Evaluate();

  absl::Status SaveCheckpoint(const std::string& path);
  // Restores weights, optimizer and loss-scaler state, data position and
  // step. A checkpoint of another model, options or precision is refused.
  absl::Status RestoreCheckpoint(const std::string& path);

  FinalReport Report() const;
  int64_t step() const { return step_; }
  int64_t num_parameters() const { return num_parameters_; }
  const std::string& precision() const { return precision_name_; }
  const std::string& device() const { return device_name_; }
  // Whether dynamic loss scaling runs on the device (ABI 1.4 ops; see
  // --device_loss_scaling and docs/architecture.md).
  bool device_loss_scaling() const { return device_scaling_; }

 private:
  // One parameter tensor and everything the trainer keeps for it.
  struct Param {
    std::string name;
    std::vector<int64_t> dims;
    int64_t numel = 0;
    MNT_ParamInit init = MNT_PARAM_INIT_ZEROS;
    float init_scale = 0;
    bool weight_decay = false;
    sdk::DeviceBuffer weights;         // working weights (weight dtype)
    sdk::DeviceBuffer master;          // fp32 master (mixed precision only)
    sdk::DeviceBuffer grads;           // as backward writes them
    sdk::DeviceBuffer master_grads;    // fp32 accumulation (mixed only)
    sdk::DeviceBuffer state1, state2;  // Adam m, v / SGD momentum
    // Adam with device loss scaling: applied steps, I32 [1], advanced by
    // ADAMW_STEP itself (one per tensor, as torch's state_steps).
    sdk::DeviceBuffer step_counter;

    MNT_Tensor Tensor(const sdk::DeviceBuffer& b, MNT_DType dtype) const {
      return sdk::MakeTensor(b.data(), dtype, static_cast<int32_t>(dims.size()),
                             dims.data());
    }
  };
  Trainer() = default;

  absl::Status Init(std::unique_ptr<BatchSource> train_data,
                    std::unique_ptr<BatchSource> eval_data);
  absl::Status AllocateParameters();
  absl::Status UploadBatch(const BatchSource& source,
                           const std::vector<int64_t>& indices);
  absl::Status TrainStep(StepMetrics* metrics);
  // found_inf_ and multiplier_ hold the skip flag (device path only) and the
  // gradient multiplier.
  absl::Status ApplyOptimizer(double lr, bool device_skip);
  // Device-side loss scaling (trainer_device_scaling.cc).
  absl::Status ResolveDeviceLossScaling(const std::string& scaler_options);
  std::string DeviceLossScalingUnavailable(const std::string& scaler_options);
  std::string ScalerDisagreesWithDeviceFormula(const std::string& scaler_options);
  absl::Status AllocateDeviceScaling();
  absl::Status SyncScalerToDevice();
  absl::Status SyncScalerToPlugin();
  absl::StatusOr<float> DeviceLossScaleOnHost();
  absl::Status DeviceUnscaleUpdateAndClip(const std::vector<MNT_Tensor>& grads);
  absl::Status FillDeviceStepMetrics(StepMetrics* m);
  absl::StatusOr<int32_t> ReadI32(void* device_scalar);
  absl::Status WriteI32(void* device_scalar, int32_t value);
  absl::StatusOr<float> ReadScalar(void* device_scalar);
  absl::Status WriteScalar(void* device_scalar, float value);
  absl::Status SyncWorkingWeights();
  absl::Status Backend(MNT_Op op, const std::vector<MNT_Tensor>& in,
                       const std::vector<MNT_Tensor>& out,
                       const void* params = nullptr);
  void AddPhaseTime(const std::string& phase, double seconds);

  mantissa::TrainConfig config_;
  PluginRegistry* registry_ = nullptr;
  std::string device_name_, precision_name_;

  const MNT_Plugin_Api* backend_plugin_ = nullptr;
  const MNT_Plugin_Api* precision_plugin_ = nullptr;
  const MNT_Plugin_Api* model_plugin_ = nullptr;
  MNT_Backend* backend_ = nullptr;
  MNT_LossScaler* scaler_ = nullptr;
  MNT_Model* model_ = nullptr;
  sdk::BackendClient client_;
  std::string backend_description_;

  MNT_Precision_GetPolicy_Args policy_{};
  MNT_Precision_GetMemoryPlan_Args plan_{};
  bool mixed_ = false;          // separate fp32 master weights and grads
  bool loss_scaling_ = false;

  std::vector<Param> params_;
  int64_t num_parameters_ = 0;

  std::unique_ptr<BatchSource> train_data_, eval_data_;
  std::unique_ptr<BatchSampler> sampler_;
  std::vector<uint8_t> host_inputs_;
  std::vector<int32_t> host_targets_;
  sdk::DeviceBuffer inputs_, targets_;
  // Device scalars (F32 [1]): loss, correct count, found_inf, inv_scale,
  // squared grad norm, clip multiplier.
  sdk::DeviceBuffer loss_, correct_, found_inf_, inv_scale_, norm_sq_,
      multiplier_;

  int64_t step_ = 0;             // optimizer steps taken (applied or skipped)
  // Drives Adam's bias correction. With device loss scaling it is only
  // brought up to date (step_ - skipped steps) at SyncScalerToPlugin.
  int64_t applied_steps_ = 0;

  // Device-side dynamic loss scaling (ABI 1.4): the scale (F32), growth
  // tracker (I32) and skipped steps since the last sync (F32) live on the
  // device; inv_scale_ is kept by AMP_UPDATE_SCALE. loss_micro_ holds each
  // micro-batch's loss (F32 [accum]) until a report reads them.
  bool device_scaling_ = false;
  bool adam_step_counters_ = false;
  MNT_AmpUpdateScaleParams amp_params_{};
  sdk::DeviceBuffer scale_, growth_tracker_, skipped_, loss_micro_;
  int64_t skipped_synced_ = 0;   // skipped steps already in the plugin's state
  float host_scale_ = 1.0f;      // the device scale, when host_scale_valid_
  bool host_scale_valid_ = false;
  std::vector<PhaseTime> phases_;
  double samples_per_second_ = 0;
  // Samples/s times targets per example, for language models; 0 otherwise.
  double TokensPerSecond(double samples_per_second) const {
    const int tpe = train_data_->spec().targets_per_example;
    return tpe > 1 ? samples_per_second * tpe : 0.0;
  }
  EvalMetrics last_eval_;
  bool has_eval_ = false;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_TRAINER_H_
