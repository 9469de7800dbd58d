// Metrics as JSON lines, one object per line, for scripts and the precision
// report (tools/report). Records, each with "type" and "time" (seconds since
// the Unix epoch):
//   run      once at the start: config, versions, device, precision, every
//            plugin with its ABI version (a resumed run appends another)
//   train    every step: loss, lr, loss scale, skips, grad norm, samples/s,
//            tokens/s
//   eval     every evaluation
//   message  what the console printed as a line (checkpoints, warnings)
//   summary  once at the end: throughput, memory by category, phases
// docs/metrics.md lists every field.
//
// A new run starts a new file: an existing file at the path is first
// renamed to <path>.1 (or .2, ...; nothing is lost). A resumed run appends.
#ifndef MANTISSA_TRAINER_SINKS_JSONL_SINK_H_
#define MANTISSA_TRAINER_SINKS_JSONL_SINK_H_

#include <cstdio>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/core/metrics.h"

namespace mnt::trainer {

class JsonlSink : public MetricsSink {
 public:
  // `append`: continue the file (a resumed run); otherwise start a new one.
  static absl::StatusOr<std::unique_ptr<JsonlSink>> Create(const std::string& path,
                                                           bool append);
  ~JsonlSink() override;

  // Where an earlier run's file was moved to, or "" if none was there.
  const std::string& kept_previous() const { return kept_previous_; }
  // False after a write failed; status() then names the file and the error,
  // and the trainer stops the run.
  bool ok() const { return status_.ok(); }
  absl::Status status() const override { return status_; }

  void OnStart(const RunHeader& h) override;
  void OnStep(const StepMetrics& m) override;
  void OnEval(const EvalMetrics& m) override;
  void OnMessage(const std::string& line) override;
  void OnFinish(const FinalReport& r) override;
  // {"type":"error","time":...,"message":...}: the run's last record.
  void OnError(const std::string& message) override;

 private:
  JsonlSink(FILE* file, std::string path, std::string kept_previous)
      : file_(file), path_(std::move(path)), kept_previous_(std::move(kept_previous)) {}
  void WriteLine(const std::string& json_object_body);

  FILE* file_;
  std::string path_;
  std::string kept_previous_;
  int64_t lines_written_ = 0;
  absl::Status status_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_SINKS_JSONL_SINK_H_
