// A MetricsSink that writes the run to a TensorBoard event file:
//   train/loss, train/lr, train/loss_scale, train/skipped_steps,
//   train/grad_norm (applied steps), train/samples_per_second,
//   train/tokens_per_second (language models)       every log_every steps
//   eval/loss, eval/accuracy                         at every evaluation
//   memory/<category>_peak_mib, summary/samples_per_second,
//   summary/tokens_per_second, summary/skipped_steps at the end
//   run/config (Text tab): precision, device, plugins and the config
// `tensorboard --logdir=<dir>` shows them while the run goes.
#ifndef MANTISSA_TRAINER_TENSORBOARD_TENSORBOARD_SINK_H_
#define MANTISSA_TRAINER_TENSORBOARD_TENSORBOARD_SINK_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/core/metrics.h"
#include "trainer/tensorboard/event_writer.h"

namespace mnt::tensorboard {

class TensorBoardSink : public trainer::MetricsSink {
 public:
  // A new event file in `dir` (created if needed). log_every >= 1.
  static absl::StatusOr<std::unique_ptr<TensorBoardSink>> Create(
      const std::string& dir, int64_t log_every);

  bool NeedsStepMetrics(int64_t step, int64_t total_steps) const override;
  void OnStart(const trainer::RunHeader& header) override;
  void OnStep(const trainer::StepMetrics& m) override;
  void OnEval(const trainer::EvalMetrics& m) override;
  void OnMessage(const std::string& line) override { (void)line; }
  void OnFinish(const trainer::FinalReport& r) override;

  // The first write error, if any (writing stops there and the trainer ends
  // the run with it).
  absl::Status status() const override { return status_; }
  const std::string& path() const { return writer_->path(); }

 private:
  TensorBoardSink(std::unique_ptr<EventFileWriter> writer, int64_t log_every)
      : writer_(std::move(writer)), log_every_(log_every) {}
  void Scalar(const std::string& tag, int64_t step, double value, double time);
  void Flush();

  std::unique_ptr<EventFileWriter> writer_;
  int64_t log_every_;
  absl::Status status_;
};

}  // namespace mnt::tensorboard

#endif  // MANTISSA_TRAINER_TENSORBOARD_TENSORBOARD_SINK_H_
