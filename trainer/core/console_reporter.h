// Human-facing output: a progress bar on a terminal, plain lines otherwise,
// and the final report with the memory breakdown. --progress=none drops the
// step and evaluation lines only: every other message (warnings, where a
// checkpoint went) still prints. Machine-readable metrics
// are other sinks' job (trainer/sinks:jsonl_sink, trainer/tensorboard).
#ifndef MANTISSA_TRAINER_CORE_CONSOLE_REPORTER_H_
#define MANTISSA_TRAINER_CORE_CONSOLE_REPORTER_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "trainer/core/metrics.h"

namespace mnt::trainer {

enum class ProgressStyle { kBar, kPlain, kNone };

// "auto" picks the bar when `out` is a terminal and no launcher (mpirun,
// srun: launch.h) started the process: a launched rank's stdout is often a
// pty of the launcher's, which forwards it line by line among the other
// ranks' output, so the bar's redraws would reach a pipe as escape codes.
ProgressStyle ResolveProgressStyle(const std::string& progress, FILE* out);
// The same with the facts given: `terminal` (out is a tty), `launched`.
ProgressStyle ResolveProgressStyle(const std::string& progress, bool terminal, bool launched);

// Columns of the terminal `out` is, else $COLUMNS, else 80.
int TerminalWidth(FILE* out);

// "1:05", "12:00:07": elapsed and remaining times.
std::string FormatDuration(double seconds);
// A rate with at least three significant digits: "20534", "87.3", "0.412"
// (never "0" for a slow model).
std::string FormatRate(double per_second);
// Compact for the bar: "20.5k", "87.3", "0.412".
std::string FormatRateShort(double per_second);

// One redraw of the progress bar, at most width - 1 characters (a line that
// fills the last column wraps on some terminals, and a wrapped line cannot
// be redrawn with \r). Fields drop, least useful first, as the width
// shrinks: the loss scale, the lr, the elapsed time, the throughput, the bar,
// the ETA, the loss; the percentage and step always stay. `start_step`: the
// step the current training call began at (ETA counts from there).
std::string FormatProgressLine(const StepMetrics& m, int64_t start_step,
                               int width);

// A plain line for logs and pipes (no width limit).
std::string FormatStepLine(const StepMetrics& m, int64_t start_step);

class ConsoleReporter : public MetricsSink {
 public:
  // log_every applies to plain lines. width 0: ask the terminal at each
  // redraw (it may be resized).
  ConsoleReporter(FILE* out, ProgressStyle style, int64_t log_every, int width = 0);
  ~ConsoleReporter() override;

  // The bar wants every step; plain lines every log_every steps (and the
  // first and last); none nothing.
  bool NeedsStepMetrics(int64_t step, int64_t total_steps) const override;
  void OnStart(const RunHeader& h) override;
  void OnStep(const StepMetrics& m) override;
  void OnEval(const EvalMetrics& m) override;
  void OnMessage(const std::string& line) override;

 private:
  // A line other than the bar: the bar is cleared first (no stale copy
  // above the line) and drawn again below it.
  void PrintAboveBar(const std::string& line);
  // At the end: the last bar stays, its line ended.
  void EndBarLine();
  FILE* out_;
  ProgressStyle style_;
  int64_t log_every_;
  int width_;
  int64_t start_step_ = 0;
  bool bar_open_ = false;
  std::string last_bar_;  // the bar as last drawn
  double last_draw_ = -1;
};

// The closing summary: what ran, accuracy, memory by category with the
// per-parameter plan, and time per phase.
std::string FormatFinalReport(const FinalReport& r);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_CONSOLE_REPORTER_H_
