#include "trainer/core/console_reporter.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mnt::trainer {

ProgressStyle ResolveProgressStyle(const std::string& progress, FILE* out) {
  if (progress == "bar") return ProgressStyle::kBar;
  if (progress == "plain") return ProgressStyle::kPlain;
  if (progress == "none") return ProgressStyle::kNone;
  return isatty(fileno(out)) ? ProgressStyle::kBar : ProgressStyle::kPlain;
}

ConsoleReporter::ConsoleReporter(FILE* out, ProgressStyle style,
                                 int64_t log_every,
                                 const std::string& metrics_jsonl)
    : out_(out), style_(style), log_every_(std::max<int64_t>(1, log_every)),
      jsonl_path_(metrics_jsonl) {
  if (!jsonl_path_.empty()) jsonl_ = std::fopen(jsonl_path_.c_str(), "a");
}

ConsoleReporter::~ConsoleReporter() {
  EndBarLine();
  if (jsonl_ != nullptr) std::fclose(jsonl_);
}

void ConsoleReporter::EndBarLine() {
  if (bar_open_) {
    std::fputc('\n', out_);
    bar_open_ = false;
  }
}

namespace {
// %.9g keeps every fp32 bit, so JSONL losses compare exactly across runs.
std::string Num(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  return absl::StrFormat("%.9g", v);
}
}  // namespace

bool ConsoleReporter::NeedsStepMetrics(int64_t step, int64_t total_steps) const {
  if (jsonl_ != nullptr || style_ == ProgressStyle::kBar) return true;
  if (style_ == ProgressStyle::kNone) return false;
  return step % log_every_ == 0 || step == total_steps || step == 1;
}

void ConsoleReporter::OnStep(const StepMetrics& m) {
  if (jsonl_ != nullptr) {
    absl::FPrintF(jsonl_,
                  "{\"type\":\"train\",\"step\":%d,\"loss\":%s,\"lr\":%s,"
                  "\"loss_scale\":%s,\"skipped\":%s,\"skipped_steps\":%d,"
                  "\"grad_norm\":%s,\"samples_per_second\":%s}\n",
                  m.step, Num(m.loss), Num(m.lr), Num(m.loss_scale),
                  m.skipped ? "true" : "false", m.skipped_steps,
                  Num(m.grad_norm), Num(m.samples_per_second));
    std::fflush(jsonl_);
  }
  std::string stats = absl::StrFormat(
      "step %d/%d  loss %.4f  lr %.2e  scale %g  skipped %d  %.0f samples/s",
      m.step, m.total_steps, m.loss, m.lr, m.loss_scale, m.skipped_steps,
      m.samples_per_second);
  if (m.tokens_per_second > 0) {
    absl::StrAppendFormat(&stats, "  %.0f tokens/s", m.tokens_per_second);
  }
  if (style_ == ProgressStyle::kBar) {
    // Redraw at most ~10 times a second: fast runs would spend their time
    // writing to the terminal.
    if (m.elapsed_seconds - last_draw_ < 0.1 && m.step != m.total_steps &&
        m.step != 1) {
      return;
    }
    last_draw_ = m.elapsed_seconds;
    const int width = 24;
    const int filled = static_cast<int>(
        width * static_cast<double>(m.step) / std::max<int64_t>(1, m.total_steps));
    std::string bar(filled, '#');
    bar.resize(width, '.');
    absl::FPrintF(out_, "\r\033[K[%s] %s", bar, stats);
    std::fflush(out_);
    bar_open_ = true;
  } else if (style_ == ProgressStyle::kPlain) {
    if (m.step % log_every_ == 0 || m.step == m.total_steps || m.step == 1 ||
        m.skipped) {
      absl::FPrintF(out_, "%s%s\n", stats, m.skipped ? "  (step skipped: non-finite gradients)" : "");
    }
  }
}

void ConsoleReporter::OnEval(const EvalMetrics& m) {
  if (jsonl_ != nullptr) {
    absl::FPrintF(jsonl_,
                  "{\"type\":\"eval\",\"step\":%d,\"eval_loss\":%s,"
                  "\"eval_accuracy\":%s,\"examples\":%d}\n",
                  m.step, Num(m.loss), Num(m.accuracy), m.examples);
    std::fflush(jsonl_);
  }
  if (style_ == ProgressStyle::kNone) return;
  EndBarLine();
  absl::FPrintF(out_, "eval  step %d  loss %.4f  accuracy %.2f%%  (%d examples)\n",
                m.step, m.loss, 100.0 * m.accuracy, m.examples);
}

void ConsoleReporter::OnMessage(const std::string& line) {
  if (style_ == ProgressStyle::kNone) return;
  EndBarLine();
  absl::FPrintF(out_, "%s\n", line);
}

namespace {
std::string Bytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", b / 1073741824.0);
  if (b >= (int64_t{1} << 20)) return absl::StrFormat("%.2f MiB", b / 1048576.0);
  if (b >= 1024) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrFormat("%d B", b);
}
}  // namespace

std::string FormatFinalReport(const FinalReport& r) {
  std::string s;
  absl::StrAppendFormat(&s, "\n== Mantissa run report ==\n");
  absl::StrAppendFormat(&s, "backend    %s\nprecision  %s\nmodel      %s (%d parameters)\n",
                        r.backend, r.precision, r.model, r.num_parameters);
  absl::StrAppendFormat(&s, "steps      %d (%d skipped), final loss scale %g, %.0f samples/s\n",
                        r.steps, r.skipped_steps, r.final_loss_scale,
                        r.samples_per_second);
  if (r.tokens_per_second > 0) {
    absl::StrAppendFormat(&s, "           %.0f tokens/s\n", r.tokens_per_second);
  }
  if (r.has_eval) {
    absl::StrAppendFormat(&s, "eval       loss %.4f, accuracy %.2f%% on %d examples\n",
                          r.last_eval.loss, 100.0 * r.last_eval.accuracy,
                          r.last_eval.examples);
  }
  const int model_bytes = r.bytes_weights + r.bytes_master_weights;
  absl::StrAppendFormat(
      &s,
      "\nbytes per parameter: weights %d + master weights %d = %d (%.2fx fp32's 4), "
      "gradients %d + fp32 master gradients %d, optimizer state %d; total %d\n",
      r.bytes_weights, r.bytes_master_weights, model_bytes, model_bytes / 4.0,
      r.bytes_gradients, r.bytes_master_gradients, r.bytes_optimizer_state,
      model_bytes + r.bytes_gradients + r.bytes_master_gradients +
          r.bytes_optimizer_state);
  absl::StrAppendFormat(&s, "\n%-16s %12s %12s\n", "memory", "current", "peak");
  for (const MemoryLine& m : r.memory) {
    absl::StrAppendFormat(&s, "%-16s %12s %12s\n", m.category, Bytes(m.current_bytes),
                          Bytes(m.peak_bytes));
  }
  double total = 0;
  for (const PhaseTime& p : r.phases) total += p.seconds;
  absl::StrAppendFormat(&s, "\n%-16s %10s %7s\n", "phase", "seconds", "share");
  for (const PhaseTime& p : r.phases) {
    absl::StrAppendFormat(&s, "%-16s %10.3f %6.1f%%\n", p.phase, p.seconds,
                          total > 0 ? 100.0 * p.seconds / total : 0.0);
  }
  return s;
}

}  // namespace mnt::trainer
