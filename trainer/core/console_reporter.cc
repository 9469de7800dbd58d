#include "trainer/core/console_reporter.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/text/byte_size.h"
#include "trainer/parallel/launch.h"

namespace mnt::trainer {

ProgressStyle ResolveProgressStyle(const std::string& progress, bool terminal, bool launched) {
  if (progress == "bar") return ProgressStyle::kBar;
  if (progress == "plain") return ProgressStyle::kPlain;
  if (progress == "none") return ProgressStyle::kNone;
  return terminal && !launched ? ProgressStyle::kBar : ProgressStyle::kPlain;
}

ProgressStyle ResolveProgressStyle(const std::string& progress, FILE* out) {
  return ResolveProgressStyle(progress, isatty(fileno(out)) != 0,
                              !DetectLaunch().launcher.empty());
}

int TerminalWidth(FILE* out) {
  winsize ws{};
  if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    const int c = std::atoi(columns);
    if (c > 0) return c;
  }
  return 80;
}

std::string FormatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

std::string FormatRate(double v) {
  if (!std::isfinite(v)) return "?";
  if (v >= 100) return absl::StrFormat("%.0f", v);
  if (v >= 10) return absl::StrFormat("%.1f", v);
  if (v >= 1) return absl::StrFormat("%.2f", v);
  return absl::StrFormat("%.3g", v);
}

std::string FormatRateShort(double v) {
  if (!std::isfinite(v)) return "?";
  // Three significant digits, trailing zeros kept: "20.0k", not "20k".
  if (v >= 1e6) return FormatRate(v / 1e6) + "M";
  if (v >= 1e4) return FormatRate(v / 1e3) + "k";
  return FormatRate(v);
}

namespace {

struct Times {
  double elapsed = 0;
  double eta = -1;  // unknown
};

Times StepTimes(const StepMetrics& m, int64_t start_step) {
  Times t;
  t.elapsed = m.elapsed_seconds;
  const int64_t done = m.step - start_step;
  if (done > 0) {
    t.eta = m.elapsed_seconds / static_cast<double>(done) *
            static_cast<double>(std::max<int64_t>(0, m.total_steps - m.step));
  }
  return t;
}

double Percent(const StepMetrics& m) {
  return 100.0 * static_cast<double>(m.step) /
         static_cast<double>(std::max<int64_t>(1, m.total_steps));
}

// Loss scaling is worth a field when it is doing something.
bool ShowsScale(const StepMetrics& m) {
  return m.loss_scale != 1.0 || m.skipped_steps > 0;
}

}  // namespace

std::string FormatProgressLine(const StepMetrics& m, int64_t start_step, int width) {
  const Times t = StepTimes(m, start_step);
  struct Field {
    int priority;  // dropped lowest first
    std::string text;
  };
  std::vector<Field> fields;
  fields.push_back({100, absl::StrFormat("%3.0f%%", std::floor(Percent(m)))});
  fields.push_back({90, absl::StrFormat("%d/%d", m.step, m.total_steps)});
  fields.push_back({80, absl::StrFormat("loss %.4f", m.loss)});
  if (ShowsScale(m)) {
    fields.push_back({30, absl::StrFormat("scale %g skipped %d", m.loss_scale,
                                          m.skipped_steps)});
  }
  fields.push_back({40, absl::StrFormat("lr %.2e", m.lr)});
  fields.push_back({60, m.tokens_per_second > 0
                            ? FormatRateShort(m.tokens_per_second) + " tok/s"
                            : FormatRateShort(m.samples_per_second) + " samples/s"});
  fields.push_back({50, FormatDuration(t.elapsed)});
  fields.push_back({70, absl::StrCat("eta ", t.eta < 0 ? "?" : FormatDuration(t.eta))});

  // The bar is a field too: it goes after the throughput, before the ETA.
  constexpr int kMinBar = 10, kMaxBar = 30;
  fields.insert(fields.begin(), {65, std::string(kMinBar + 2, '#')});
  const int limit = std::max(1, width - 1);
  auto length = [&] {
    int n = 0;
    for (const Field& f : fields) n += static_cast<int>(f.text.size()) + 2;
    return n - 2;
  };
  // The percentage and the step always stay.
  while (fields.size() > 2 && length() > limit) {
    fields.erase(std::min_element(
        fields.begin(), fields.end(),
        [](const Field& a, const Field& b) { return a.priority < b.priority; }));
  }
  const bool has_bar = fields.front().priority == 65;
  if (has_bar) {
    // Widen the bar into whatever room is left.
    const int bar = std::min(kMaxBar, kMinBar + limit - length());
    const int filled = static_cast<int>(bar * Percent(m) / 100.0);
    fields.front().text =
        absl::StrCat("[", std::string(filled, '#'), std::string(bar - filled, '.'), "]");
  }
  std::string line;
  for (size_t i = 0; i < fields.size(); ++i) {
    absl::StrAppend(&line, i > 0 ? "  " : "", fields[i].text);
  }
  if (static_cast<int>(line.size()) > limit) line.resize(limit);
  return line;
}

std::string FormatStepLine(const StepMetrics& m, int64_t start_step) {
  const Times t = StepTimes(m, start_step);
  std::string line = absl::StrFormat("step %d/%d (%.1f%%)  loss %.4f  lr %.2e", m.step,
                                     m.total_steps, Percent(m), m.loss, m.lr);
  if (ShowsScale(m)) {
    absl::StrAppendFormat(&line, "  scale %g  skipped %d", m.loss_scale, m.skipped_steps);
  }
  absl::StrAppend(&line, "  ", FormatRate(m.samples_per_second), " samples/s");
  if (m.tokens_per_second > 0) {
    absl::StrAppend(&line, "  ", FormatRate(m.tokens_per_second), " tokens/s");
  }
  absl::StrAppend(&line, "  elapsed ", FormatDuration(t.elapsed), "  eta ",
                  t.eta < 0 ? "?" : FormatDuration(t.eta));
  if (m.skipped) absl::StrAppend(&line, "  (step skipped: non-finite gradients)");
  return line;
}

ConsoleReporter::ConsoleReporter(FILE* out, ProgressStyle style, int64_t log_every,
                                 int width)
    : out_(out), style_(style), log_every_(std::max<int64_t>(1, log_every)),
      width_(width) {}

ConsoleReporter::~ConsoleReporter() { EndBarLine(); }

void ConsoleReporter::EndBarLine() {
  if (bar_open_) {
    std::fputc('\n', out_);
    std::fflush(out_);
    bar_open_ = false;
  }
}

bool ConsoleReporter::NeedsStepMetrics(int64_t step, int64_t total_steps) const {
  if (style_ == ProgressStyle::kBar) return true;
  if (style_ == ProgressStyle::kNone) return false;
  return step % log_every_ == 0 || step == total_steps || step == 1;
}

void ConsoleReporter::OnStart(const RunHeader& h) { start_step_ = h.start_step; }

void ConsoleReporter::OnStep(const StepMetrics& m) {
  if (style_ == ProgressStyle::kBar) {
    // Redraw at most ~10 times a second: fast runs would spend their time
    // writing to the terminal.
    if (m.elapsed_seconds - last_draw_ < 0.1 && m.step != m.total_steps &&
        m.step != start_step_ + 1) {
      return;
    }
    last_draw_ = m.elapsed_seconds;
    const int width = width_ > 0 ? width_ : TerminalWidth(out_);
    last_bar_ = FormatProgressLine(m, start_step_, width);
    absl::FPrintF(out_, "\r\033[K%s", last_bar_);
    std::fflush(out_);
    bar_open_ = true;
  } else if (style_ == ProgressStyle::kPlain) {
    if (NeedsStepMetrics(m.step, m.total_steps) || m.skipped) {
      absl::FPrintF(out_, "%s\n", FormatStepLine(m, start_step_));
      std::fflush(out_);
    }
  }
}

void ConsoleReporter::PrintAboveBar(const std::string& line) {
  if (bar_open_) std::fputs("\r\033[K", out_);
  absl::FPrintF(out_, "%s\n", line);
  if (bar_open_) absl::FPrintF(out_, "%s", last_bar_);
  std::fflush(out_);
}

void ConsoleReporter::OnEval(const EvalMetrics& m) {
  if (style_ == ProgressStyle::kNone) return;
  PrintAboveBar(absl::StrFormat("eval  step %d  loss %.4f  accuracy %.2f%%  (%d examples)",
                                m.step, m.loss, 100.0 * m.accuracy, m.examples));
}

// Under --progress=none too: a message says what happened to the run, not
// how far it is.
void ConsoleReporter::OnMessage(const std::string& line) { PrintAboveBar(line); }


std::string FormatFinalReport(const FinalReport& r) {
  std::string s;
  absl::StrAppendFormat(&s, "\n== Mantissa run report ==\n");
  absl::StrAppendFormat(&s, "backend    %s\nprecision  %s\nmodel      %s (%d parameters)\n",
                        r.backend, r.precision, r.model, r.num_parameters);
  absl::StrAppendFormat(&s, "steps      %d (%d skipped), final loss scale %g, %s samples/s",
                        r.steps, r.skipped_steps, r.final_loss_scale,
                        FormatRate(r.samples_per_second));
  if (r.tokens_per_second > 0) {
    absl::StrAppend(&s, ", ", FormatRate(r.tokens_per_second), " tokens/s");
  }
  if (r.train_seconds > 0) {
    absl::StrAppendFormat(&s, "\n           (training steps only: %.2f s; evaluation and "
                          "checkpoints not counted)", r.train_seconds);
  }
  if (r.replayed_steps > 0) {
    absl::StrAppendFormat(&s, "\n           %d of them replayed by the backend (CUDA graph)",
                          r.replayed_steps);
  }
  absl::StrAppend(&s, "\n");
  if (r.has_eval) {
    absl::StrAppendFormat(&s, "eval       loss %.4f, accuracy %.2f%% on %d examples\n",
                          r.last_eval.loss, 100.0 * r.last_eval.accuracy,
                          r.last_eval.examples);
  }
  const int model_bytes = r.bytes_weights + r.bytes_master_weights;
  // Whole bytes as before; adamw8bit's and Adafactor's state to 0.01.
  auto bytes = [](double b) {
    return b == std::floor(b) ? absl::StrFormat("%.0f", b) : absl::StrFormat("%.2f", b);
  };
  absl::StrAppendFormat(
      &s,
      "\nbytes per parameter: weights %d + master weights %d = %d (%.2fx fp32's 4), "
      "gradients %d + fp32 master gradients %d, optimizer state %s%s; total %s\n",
      r.bytes_weights, r.bytes_master_weights, model_bytes, model_bytes / 4.0,
      r.bytes_gradients, r.bytes_master_gradients, bytes(r.bytes_optimizer_state),
      r.optimizer.empty() ? "" : " (" + r.optimizer + ")",
      bytes(model_bytes + r.bytes_gradients + r.bytes_master_gradients +
            r.bytes_optimizer_state));
  absl::StrAppendFormat(&s, "\n%-16s %12s %12s\n", "memory", "current", "peak");
  for (const MemoryLine& m : r.memory) {
    absl::StrAppendFormat(&s, "%-16s %12s %12s\n", m.category, FormatBytes(m.current_bytes),
                          FormatBytes(m.peak_bytes));
  }
  if (!r.slow_paths.empty()) {
    absl::StrAppend(&s, "\nslow paths the backend took (calls x kind: shape)\n");
    for (const std::string& line : r.slow_paths) absl::StrAppend(&s, "  ", line, "\n");
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
