#include "trainer/cli/precision_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/core/device_choice.h"
#include "trainer/core/metrics.h"
#include "trainer/core/trainer.h"

namespace mnt::trainer {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Every step's loss and the time it was reported.
class ProbeSink : public MetricsSink {
 public:
  void OnStep(const StepMetrics& m) override {
    times.push_back(Now());
    losses.push_back(m.loss);
  }
  void OnEval(const EvalMetrics&) override {}
  void OnMessage(const std::string&) override {}
  std::vector<double> times, losses;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

ProbeRow Probe(const TrainConfig& base, const std::string& precision, int64_t steps,
               PluginRegistry* registry, const std::string& digits_csv) {
  ProbeRow row;
  row.precision = precision;
  TrainConfig c = base;
  c.set_precision(precision);
  // The run's own first steps: its schedule spans its steps (TrainUntil).
  c.set_eval_every(0);
  c.set_eval_batches(1);
  c.set_log_every(1);
  c.set_checkpoint_dir("");
  c.set_metrics_jsonl("");
  c.set_tensorboard_dir("");
  c.set_resume(false);
  c.set_resume_if_exists(false);
  c.set_resume_from("");
  c.set_eval_only(false);
  auto data = LoadDatasets(c, digits_csv);
  if (!data.ok()) {
    row.note = std::string(data.status().message());
    return row;
  }
  auto trainer = Trainer::Create(c, registry, std::move(data->train), std::move(data->eval));
  if (!trainer.ok()) {
    row.note = std::string(trainer.status().message());
    return row;
  }
  ProbeSink sink;
  if (auto s = (*trainer)->TrainUntil(steps, &sink); !s.ok()) {
    row.note = std::string(s.message());
    return row;
  }
  if (sink.times.size() < 3) {
    row.note = "too few steps reported";
    return row;
  }
  row.ran = true;
  std::vector<double> intervals;
  for (size_t i = 2; i < sink.times.size(); ++i) {  // the first step builds kernels
    intervals.push_back(1e3 * (sink.times[i] - sink.times[i - 1]));
  }
  row.step_ms = Median(intervals);
  const size_t last = std::min<size_t>(3, sink.losses.size());
  double sum = 0;
  for (size_t i = sink.losses.size() - last; i < sink.losses.size(); ++i) sum += sink.losses[i];
  row.loss = sum / static_cast<double>(last);
  return row;
}

}  // namespace

int64_t ProbeSteps(int64_t run_steps) {
  return std::clamp<int64_t>((run_steps + 39) / 40, kMinProbeSteps, 20);
}

std::vector<std::string> ProbeResult::Lines() const {
  std::vector<std::string> out;
  if (rows.empty()) return {absl::StrCat("precision: ", chosen, ": ", reason)};
  out.push_back(absl::StrFormat(
      "precision probe (--precision=auto): %d steps each, %.1f s; loss tolerance %.0f%% of "
      "fp32's",
      steps_each, seconds, 100 * kProbeLossTolerance));
  for (const ProbeRow& r : rows) {
    out.push_back(r.ran ? absl::StrFormat("  %-5s %8.2f ms/step  loss %.4f  %s%s", r.precision,
                                          r.step_ms, r.loss,
                                          r.within_tolerance ? "ok" : "off",
                                          r.note.empty() ? "" : "  (" + r.note + ")")
                        : absl::StrFormat("  %-5s not run: %s", r.precision, r.note));
  }
  out.push_back(absl::StrCat("precision: ", chosen, ": ", reason));
  return out;
}

absl::StatusOr<ProbeResult> ProbePrecisions(const TrainConfig& config, PluginRegistry* registry,
                                            const std::string& digits_csv) {
  ProbeResult result;
  result.steps_each = std::min(ProbeSteps(config.steps()), config.steps());
  if (result.steps_each < kMinProbeSteps) {
    result.chosen = ResolvePrecision("auto", config.device());
    result.reason = absl::StrCat("a run of ", config.steps(),
                                 " steps is too short to measure: the fixed rule, cpu -> fp32, "
                                 "other devices -> bf16");
    return result;
  }
  const double start = Now();
  for (const char* p : {"fp32", "tf32", "bf16", "fp16"}) {
    result.rows.push_back(Probe(config, p, result.steps_each, registry, digits_csv));
  }
  result.seconds = Now() - start;
  const ProbeRow& fp32 = result.rows[0];
  if (!fp32.ran || !std::isfinite(fp32.loss)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--precision=auto: the fp32 probe run failed: ", fp32.note));
  }
  const ProbeRow* best = &result.rows[0];
  for (ProbeRow& r : result.rows) {
    if (!r.ran) continue;
    r.within_tolerance = std::isfinite(r.loss) &&
                         std::abs(r.loss - fp32.loss) <= kProbeLossTolerance * std::abs(fp32.loss);
    if (r.within_tolerance && r.step_ms * kProbeMinSpeedup <= fp32.step_ms &&
        r.step_ms < best->step_ms) {
      best = &r;
    }
  }
  result.chosen = best->precision;
  result.reason =
      best == &result.rows[0]
          ? absl::StrFormat("no other precision within tolerance was %.0f%% faster than "
                            "fp32's %.2f ms/step",
                            100 * (kProbeMinSpeedup - 1), fp32.step_ms)
          : absl::StrFormat("%.2fx faster than fp32 (%.2f vs %.2f ms/step), loss within "
                            "%.2f%% of fp32's",
                            fp32.step_ms / best->step_ms, best->step_ms, fp32.step_ms,
                            100 * std::abs(best->loss - fp32.loss) / std::abs(fp32.loss));
  return result;
}

}  // namespace mnt::trainer
