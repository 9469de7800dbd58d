// Human-facing output: a progress bar on a terminal, plain lines otherwise,
// metrics as JSON lines, and the final report with the memory breakdown.
#ifndef MANTISSA_TRAINER_CORE_CONSOLE_REPORTER_H_
#define MANTISSA_TRAINER_CORE_CONSOLE_REPORTER_H_

#include <cstdio>
#include <memory>
#include <string>

#include "trainer/core/metrics.h"

namespace mnt::trainer {

enum class ProgressStyle { kBar, kPlain, kNone };

// "auto" picks the bar when `out` is a terminal.
ProgressStyle ResolveProgressStyle(const std::string& progress, FILE* out);

class ConsoleReporter : public MetricsSink {
 public:
  // metrics_jsonl may be empty (no file). log_every applies to plain lines.
  ConsoleReporter(FILE* out, ProgressStyle style, int64_t log_every,
                  const std::string& metrics_jsonl);
  ~ConsoleReporter() override;
  bool jsonl_ok() const { return jsonl_ != nullptr || jsonl_path_.empty(); }

  // JSONL and the bar want every step; plain lines every log_every steps
  // (and the first and last); none only what JSONL needs.
  bool NeedsStepMetrics(int64_t step, int64_t total_steps) const override;
  void OnStep(const StepMetrics& m) override;
  void OnEval(const EvalMetrics& m) override;
  void OnMessage(const std::string& line) override;

 private:
  void EndBarLine();
  FILE* out_;
  ProgressStyle style_;
  int64_t log_every_;
  std::string jsonl_path_;
  FILE* jsonl_ = nullptr;
  bool bar_open_ = false;
  double last_draw_ = -1;
};

// The closing summary: what ran, accuracy, memory by category with the
// per-parameter plan, and time per phase.
std::string FormatFinalReport(const FinalReport& r);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_CONSOLE_REPORTER_H_
