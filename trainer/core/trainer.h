// The training loop: ties one backend, one precision policy and one model
// together and runs mixed-precision steps with loss scaling, clipping,
// accumulation, evaluation and checkpoints. It orchestrates; each job has
// its own file:
//   run_plugins.h          the plugin instances (backend, precision, model)
//   parameters.h           parameters, gradients, master copies, init
//   optimizer.h            the AdamW / SGD step
//   loss_scaling.h         loss scaling (host or device, chosen once at
//                          start in loss_scaling_choice.h)
//   evaluator.h            evaluation
//   training_checkpoint.h  what a checkpoint holds
#ifndef MANTISSA_TRAINER_CORE_TRAINER_H_
#define MANTISSA_TRAINER_CORE_TRAINER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/batch_source.h"
#include "trainer/core/device_choice.h"
#include "trainer/core/metrics.h"
#include "trainer/core/phase_times.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

class BatchSampler;
class BucketReadiness;
class DataParallel;
class DeviceBatch;
class HostComm;
class Evaluator;
class Fp8Scaling;
class LossScaling;
class Optimizer;
class ParameterStore;
class TrainingCheckpoint;
struct RunPlugins;
struct StepScalars;

class Trainer {
 public:
  // `config` must be validated. The registry must outlive the trainer.
  // With `ranks` (data parallel, trainer/parallel/), this trainer is rank
  // ranks->rank() of ranks->world_size(): it trains on its part of every
  // global batch of world_size x batch_size examples, averages gradients
  // (and losses) over the ranks before the optimizer, splits evaluation
  // across them, and only rank 0 writes checkpoints. `ranks` outlives it.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(
      const mantissa::TrainConfig& config, PluginRegistry* registry,
      std::unique_ptr<BatchSource> train_data,
      std::unique_ptr<BatchSource> eval_data, HostComm* ranks = nullptr);
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
  // After RestoreCheckpoint: a line about what the run changed on purpose
  // (--precision_options), else "".
  const std::string& restore_note() const;

  // A function Train polls after every step (the CLI's: stop_signals.h);
  // when it returns a signal number the run stops at that step boundary,
  // saves a checkpoint (when checkpoint_dir is set and this step has none
  // yet) and Train returns OK with stopped_by_signal() set.
  void set_stop_check(int (*check)()) { stop_check_ = check; }
  // 0, or the signal that stopped the last Train/TrainUntil early.
  int stopped_by_signal() const { return stopped_by_signal_; }

  FinalReport Report() const;
  int64_t step() const { return step_; }
  int64_t num_parameters() const;
  const std::string& precision() const;
  const std::string& device() const;
  // Whether dynamic loss scaling runs on the device (ABI 1.4 ops; see
  // --device_loss_scaling and docs/architecture.md).
  bool device_loss_scaling() const;
  // Whether the step's scalars (losses, clip factor, lr; the scale when the
  // run scales) stay on the device, so that a step reads nothing back
  // unless a sink reports it: every precision under --device_loss_scaling=
  // auto on a backend with the ops, never under off.
  bool device_step_scalars() const;
  // Device -> host copies the trainer made during steps no sink asked for
  // (the step and its metrics; not evaluation or checkpoints). 0 on the
  // device path: the check that a step is sync-free.
  int64_t device_reads_on_unreported_steps() const { return unreported_step_reads_; }
  // Where loss scaling runs and why, one line ("" when the run does not
  // scale its loss).
  const std::string& loss_scaling_description() const;
  // Data parallel: one line on the ranks, the global batch and the
  // collectives ("" for one rank); seconds and calls spent in collectives.
  // --debug_overflow, after the run stopped at an inf/NaN: the last ops'
  // operands (several lines); "" otherwise.
  std::string debug_overflow_report() const;
  std::string data_parallel_description() const;
  double collective_seconds() const;
  int64_t collective_calls() const;

 private:
  Trainer() = default;

  absl::Status Init(std::unique_ptr<BatchSource> train_data,
                    std::unique_ptr<BatchSource> eval_data);
  // `report`: a sink will get this step's metrics (so reading the device
  // loss scale is allowed).
  absl::Status TrainStep(bool report, StepMetrics* metrics);
  // This rank's part of the sampler's next global batch (all of it for one
  // rank): the sampler only ever sees global batches, so N ranks train on
  // exactly the examples one rank with N times the batch would.
  std::vector<int64_t> NextLocalBatch();
  // Data parallel: the overflow a test asks this rank to see
  // (trainer/parallel/fault_injection.h); nothing otherwise.
  absl::Status MaybeInjectInfGradient();
  // --debug_overflow: the tracer's one line once an op made an inf/NaN.
  absl::Status StopIfTraced();
  // After a skipped step: the parameters whose gradients hold inf/NaN, in
  // the order backward reaches them (the model's last first). Under ZeRO-1
  // a collective: each rank checks its share and the ranks' finds are joined.
  absl::StatusOr<std::vector<std::string>> NonFiniteGradientParams();
  // `s` with what to do when it is an allocation that failed
  // (out_of_memory_advice.h).
  absl::Status WithMemoryAdvice(const absl::Status& s) const;
  // The weights a test asks to fill before this step (fault_injection.h).
  absl::Status MaybeFillWeights();
  // Data parallel: the micro-batches' gradients averaged over ranks, in
  // buckets: all-reduced (ZeRO-0) or reduce-scattered into each rank's
  // share (ZeRO-1).
  absl::Status ExchangeGradients();
  // One bucket of it (b: ShardLayout's bucket index).
  absl::Status ExchangeBucket(int64_t b);
  // The model's hand-over of finished gradient slices (ABI 1.11): a C
  // callback, so errors wait in handover_ until Backward returns.
  static void OnGradientReady(void* trainer, int64_t param, int64_t first, int64_t count);
  absl::Status HandleGradientReady(int64_t param, int64_t first, int64_t count);
  // After Backward: the hand-over's error, or every element handed over.
  absl::Status FinishHandover();
  // ZeRO-1: every share's working weights to every rank (no-op unsharded).
  absl::Status GatherWorkingWeights();
  // Data parallel: every rank's captured state is the same (fingerprints
  // compared across ranks), or an error naming the first rank that differs.
  absl::Status CheckRanksHoldOneState(const CheckpointData& ckpt);
  // The stop signal, agreed by every rank (any rank's counts).
  absl::StatusOr<int> AgreedStopSignal();
  // FP8 delayed scaling: every rank's amax maxed, then the recipe's update
  // of histories and scales.
  absl::Status UpdateFp8Scales();
  // The recipe in one line, printed once when training starts.
  std::string Fp8Description() const;
  // Before the first step of a fresh run with a calibrating recipe: one
  // forward and backward of the uploaded batch that only records amax, and
  // the update, so step 1 is already scaled.
  absl::Status CalibrateFp8(const MNT_Tensor& inputs, const MNT_Tensor& targets, float multiplier,
                            const MNT_Tensor* device_multiplier);
  // Evaluates and checkpoints when step_ is due (or `last`); adds the time
  // it took to *seconds.
  absl::Status EvaluateAndCheckpointIfDue(bool last, MetricsSink* sink, double* seconds);
  // checkpoint_dir/checkpoint-<step>, then `latest`, then retention.
  absl::Status SaveStepCheckpoint(MetricsSink* sink);

  mantissa::TrainConfig config_;
  PluginRegistry* registry_ = nullptr;
  // Declared first, destroyed last: every buffer below lives on its backend.
  std::unique_ptr<RunPlugins> plugins_;
  std::unique_ptr<BatchSource> train_data_, eval_data_;
  std::unique_ptr<ParameterStore> params_;
  // FP8 GEMMs (ABI 1.10): the scales the model reads; NULL otherwise.
  std::unique_ptr<Fp8Scaling> fp8_;
  std::unique_ptr<DeviceBatch> batch_;
  std::unique_ptr<StepScalars> scalars_;
  std::unique_ptr<BatchSampler> sampler_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LossScaling> scaling_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<TrainingCheckpoint> checkpoint_;
  HostComm* ranks_ = nullptr;
  std::unique_ptr<DataParallel> data_parallel_;  // before plugins_ goes
  // Exchange in backward: the buckets backward has finished, and the state
  // the model's callback sees during one Backward.
  std::unique_ptr<BucketReadiness> readiness_;
  struct Handover {
    bool armed = false;
    int64_t micro = 0;
    bool last_micro = false;
    absl::Status error;
  } handover_;
  int64_t buckets_exchanged_ = 0, buckets_in_backward_ = 0;
  bool loss_scaling_active_ = false;  // the run scales its loss at all
  // The scale is on the device and the model takes it there (ABI 1.6).
  bool device_loss_multiplier_ = false;
  std::string loss_scaling_description_;
  double loss_scale_floor_ = 0;  // the recipe's min_scale, for SkipGuard

  int64_t step_ = 0;  // optimizer steps taken (applied or skipped)
  int64_t unreported_step_reads_ = 0;
  int64_t replayed_steps_ = 0;  // issued by the backend as a replay (ABI 1.7)
  int (*stop_check_)() = nullptr;
  int stopped_by_signal_ = 0;
  int64_t last_checkpoint_step_ = -1;  // the step SaveStepCheckpoint last saved
  bool wrote_run_config_ = false;       // <checkpoint_dir>/train_config.txtpb
  bool fp8_announced_ = false;          // Fp8Description printed
  PhaseTimes phases_;
  double samples_per_second_ = 0;
  double train_seconds_ = 0;
  int targets_per_example_ = 1;
  EvalMetrics last_eval_;
  bool has_eval_ = false;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_TRAINER_H_
