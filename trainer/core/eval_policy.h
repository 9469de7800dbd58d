// When a run evaluates, and what it does with each evaluation's loss, as
// Hugging Face's Trainer does: --eval_strategy=steps|epoch|no, the best
// checkpoint (--save_best: load_best_model_at_end with metric_for_best_model
// eval_loss) and early stopping (--early_stopping_patience and
// --early_stopping_threshold: its EarlyStoppingCallback).
//
// The Trainer asks it after every step whether to evaluate, hands it every
// evaluation, saves a checkpoint when it says so and stops when it says so.
// Its state (the lowest eval loss, its step, the evaluations since the last
// improvement) goes into every checkpoint's metadata, so a resumed run
// compares against the same best and keeps counting its patience.
#ifndef MANTISSA_TRAINER_CORE_EVAL_POLICY_H_
#define MANTISSA_TRAINER_CORE_EVAL_POLICY_H_

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/map.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/metrics.h"
#include "trainer/data/sampler.h"

namespace mnt::trainer {

class EvalPolicy {
 public:
  // What survives a resume.
  struct State {
    double best_loss = std::numeric_limits<double>::infinity();
    int64_t best_step = -1;  // -1: no finite eval loss yet
    // Evaluations in a row whose loss was not below the best (as it was
    // before them) by more than the threshold.
    int64_t evals_without_improvement = 0;
  };

  // `sampler` (borrowed) hands out the run's examples, `drawn_per_step` of
  // them per optimizer step (every rank's part of every micro-batch): where
  // it stands says when an epoch ends.
  EvalPolicy(const mantissa::TrainConfig& config, const BatchSampler* sampler,
             int64_t drawn_per_step);

  // Whether to evaluate after optimizer step `step`; `last`: the last step
  // this training call takes.
  bool EvalDue(int64_t step, bool last) const;

  struct Verdict {
    bool save_checkpoint = false;  // a new best (--save_best), or the stop
    std::string message;           // for the log; "" = nothing to say
  };
  // After the evaluation `m` (at step m.step).
  Verdict OnEval(const EvalMetrics& m);

  // Whether early stopping has ended the run; also right after a restore of
  // a checkpoint it had ended, unless the patience is now larger.
  bool stop() const;

  // After `step_file`, the checkpoint of `step`, was written in `dir`: when
  // --save_best and `step` is the best, makes <dir>/best the same file.
  // Returns what to add to the checkpoint's log line ("" = nothing).
  absl::StatusOr<std::string> PublishBest(const std::string& dir, const std::string& step_file,
                                          int64_t step) const;

  // The state as checkpoint metadata (CheckpointData.metadata), and back:
  // Read only checks and parses (DataLoss naming `path` and the key for a
  // value no run writes), so that Restore can refuse a file before it
  // changes anything; Apply then takes it. A checkpoint without the keys
  // (written before they existed) reads as no evaluation yet.
  void Save(google::protobuf::Map<std::string, std::string>* metadata) const;
  static absl::StatusOr<State> Read(const google::protobuf::Map<std::string, std::string>& metadata,
                                    const std::string& path);
  // Returns a line for the log when the restored state has already ended the
  // run (early stopping), else "".
  std::string Apply(const State& state);

  const State& state() const { return state_; }

 private:
  std::string StopReason() const;

  std::string strategy_;  // no | steps | epoch
  int64_t eval_every_;
  bool save_best_;
  int64_t patience_;
  double threshold_;
  const BatchSampler* sampler_;
  int64_t drawn_per_step_;
  State state_;
};

// Whether an epoch of `num_examples` ended within the last optimizer step,
// which drew `drawn_per_step` examples and left the sampler at `after`.
bool EpochEndedInLastStep(const SamplerState& after, int64_t num_examples,
                          int64_t drawn_per_step);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_EVAL_POLICY_H_
