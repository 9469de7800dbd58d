#include "trainer/tensorboard/tensorboard_sink.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace mnt::tensorboard {

absl::StatusOr<std::unique_ptr<TensorBoardSink>> TensorBoardSink::Create(
    const std::string& dir, int64_t log_every) {
  auto writer = EventFileWriter::Create(dir);
  if (!writer.ok()) return writer.status();
  return std::unique_ptr<TensorBoardSink>(
      new TensorBoardSink(std::move(*writer), std::max<int64_t>(1, log_every)));
}

void TensorBoardSink::Scalar(const std::string& tag, int64_t step, double value,
                             double time) {
  if (!status_.ok()) return;
  status_ = writer_->AddScalar(tag, step, value, time);
}

void TensorBoardSink::Flush() {
  if (status_.ok()) status_ = writer_->Flush();
}

bool TensorBoardSink::NeedsStepMetrics(int64_t step, int64_t total_steps) const {
  // As the console's plain lines: reading a step's metrics may cost a device
  // sync (device loss scaling), so not every step.
  return step % log_every_ == 0 || step == 1 || step == total_steps;
}

void TensorBoardSink::OnStart(const trainer::RunHeader& h) {
  std::string text = absl::StrCat(
      "**", h.model, "** (", h.num_parameters, " parameters), precision **",
      h.precision, "** on **", h.backend, "**, ", h.total_steps, " steps",
      h.start_step > 0 ? absl::StrCat(", resumed at step ", h.start_step, " from ",
                                      h.resumed_from)
                       : std::string(),
      "\n\n| plugin | name | ABI | file |\n|---|---|---|---|\n");
  for (const trainer::PluginInfo& p : h.plugins) {
    absl::StrAppend(&text, "| ", p.kind, " | ", p.name, " | ", p.abi_version, " | ",
                    p.origin, " |\n");
  }
  // Indented four spaces: a Markdown code block, shown verbatim.
  absl::StrAppend(&text, "\n    ");
  for (char c : h.config_text) {
    text.push_back(c);
    if (c == '\n') text.append("    ");
  }
  if (status_.ok()) status_ = writer_->AddText("run/config", h.start_step, text, h.wall_time);
  Flush();
}

void TensorBoardSink::OnStep(const trainer::StepMetrics& m) {
  // Sinks see every step another sink asked for; a skipped step is always
  // worth a point on the loss-scale curve.
  if (!NeedsStepMetrics(m.step, m.total_steps) && !m.skipped) return;
  const double t = WallTimeNow();
  Scalar("train/loss", m.step, m.loss, t);
  Scalar("train/lr", m.step, m.lr, t);
  Scalar("train/loss_scale", m.step, m.loss_scale, t);
  Scalar("train/skipped_steps", m.step, static_cast<double>(m.skipped_steps), t);
  // A skipped step has no norm: its gradients were not finite.
  if (!m.skipped) Scalar("train/grad_norm", m.step, m.grad_norm, t);
  Scalar("train/samples_per_second", m.step, m.samples_per_second, t);
  if (m.tokens_per_second > 0) {
    Scalar("train/tokens_per_second", m.step, m.tokens_per_second, t);
  }
  for (const trainer::StepMetrics::Fp8Scale& f : m.fp8_scales) {
    Scalar("fp8_scale/" + f.name, m.step, f.scale, t);
    Scalar("fp8_amax/" + f.name, m.step, f.amax, t);
  }
  Flush();
}

void TensorBoardSink::OnEval(const trainer::EvalMetrics& m) {
  const double t = WallTimeNow();
  Scalar("eval/loss", m.step, m.loss, t);
  Scalar("eval/accuracy", m.step, m.accuracy, t);
  Flush();
}

void TensorBoardSink::OnFinish(const trainer::FinalReport& r) {
  const double t = WallTimeNow();
  const int64_t step = r.steps;
  for (const trainer::MemoryLine& line : r.memory) {
    Scalar(absl::StrCat("memory/", line.category, "_peak_mib"), step,
           static_cast<double>(line.peak_bytes) / (1024.0 * 1024.0), t);
  }
  Scalar("summary/samples_per_second", step, r.samples_per_second, t);
  if (r.tokens_per_second > 0) {
    Scalar("summary/tokens_per_second", step, r.tokens_per_second, t);
  }
  Scalar("summary/skipped_steps", step, static_cast<double>(r.skipped_steps), t);
  Flush();
}

}  // namespace mnt::tensorboard
