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
//   trainer/parallel/gradient_sync.h  how the ranks' gradients become one
//   step_observer.h        per-step features (FP8 scaling, the overflow
//                          tracer, fault injection)
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
#include "trainer/core/run_parts.h"
#include "trainer/core/step_observer.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {

class SkipGuard;
class ThroughputMeter;

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

  // `report`: a sink will get this step's metrics (so reading the device
  // loss scale is allowed).
  absl::Status TrainStep(bool report, StepMetrics* metrics);
  // The step's lr and loss multiplier, its tensors, the observers told.
  absl::Status BeginStep(bool report, StepMetrics* metrics);
  // Micro-batch context_.micro on the device (this rank's part of the
  // global batch), the observers told.
  absl::Status LoadMicroBatch();
  // Unscale, check, clip; then skip the step or take it (and, under ZeRO-1,
  // gather the updated shares).
  absl::Status OptimizerStep(StepMetrics* metrics);
  // One micro-batch's passes (context_.micro): the forward's loss (the
  // global batch's mean), and the backward's gradients accumulated.
  absl::StatusOr<double> Forward();
  absl::Status Backward();
  // After a step: its metrics completed, skipped steps named, the
  // observers' additions, the sinks told, SkipGuard asked.
  absl::Status ReportStep(MetricsSink* sink, int64_t total, int64_t reads_before,
                          SkipGuard* guard, ThroughputMeter* meter, StepMetrics* m);
  // Evaluates and checkpoints when step_ is due (or `last`); adds the time
  // it took to *seconds.
  absl::Status EvaluateAndCheckpointIfDue(bool last, MetricsSink* sink, double* seconds);
  // checkpoint_dir/checkpoint-<step>, then `latest`, then retention.
  absl::Status SaveStepCheckpoint(MetricsSink* sink);

  mantissa::TrainConfig config_;
  PluginRegistry* registry_ = nullptr;
  HostComm* ranks_ = nullptr;
  RunParts p_;           // what the run is made of (run_parts.h)
  StepContext context_;  // the step in flight, as observers see it

  int64_t step_ = 0;  // optimizer steps taken (applied or skipped)
  int64_t unreported_step_reads_ = 0;
  int64_t replayed_steps_ = 0;  // issued by the backend as a replay (ABI 1.7)
  int (*stop_check_)() = nullptr;
  int stopped_by_signal_ = 0;
  int64_t last_checkpoint_step_ = -1;  // the step SaveStepCheckpoint last saved
  bool wrote_run_config_ = false;       // <checkpoint_dir>/train_config.txtpb
  bool announced_ = false;              // the observers' announcements said
  PhaseTimes phases_;
  double samples_per_second_ = 0;
  double train_seconds_ = 0;
  int targets_per_example_ = 1;
  EvalMetrics last_eval_;
  bool has_eval_ = false;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_TRAINER_H_
