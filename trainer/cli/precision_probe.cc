#include "trainer/cli/precision_probe.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

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

// Every step's loss.
class ProbeSink : public MetricsSink {
 public:
  void OnStep(const StepMetrics& m) override { losses.push_back(m.loss); }
  void OnEval(const EvalMetrics&) override {}
  void OnMessage(const std::string&) override {}
  std::vector<double> losses;
};

// After this many timed steps each, a candidate whose median step takes
// more than kSlowerThanFp32ToStop times fp32's is not run further.
constexpr size_t kTimedStepsToStop = 2;
constexpr double kSlowerThanFp32ToStop = 1.5;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One candidate: its trainer, its losses and its steps' wall times.
struct Candidate {
  ProbeRow row;
  bool stopped = false;  // dropped early: far slower than fp32
  // Why it could not even start (the data, the model, the device): for fp32
  // that is the run's own error, not the probe's.
  absl::Status start_error;
  std::unique_ptr<Trainer> trainer;
  ProbeSink sink;
  std::vector<double> step_ms;
};

// The run's own config in `precision`: its schedule spans its steps (the
// probe runs its first ones with TrainUntil), nothing evaluated or written.
void Start(const TrainConfig& base, PluginRegistry* registry, const std::string& digits_csv,
           Candidate* c) {
  TrainConfig config = base;
  config.set_precision(c->row.precision);
  config.set_eval_every(0);
  config.set_eval_batches(1);
  config.set_log_every(1);
  config.set_checkpoint_dir("");
  config.set_metrics_jsonl("");
  config.set_tensorboard_dir("");
  config.set_resume(false);
  config.set_resume_if_exists(false);
  config.set_resume_from("");
  config.set_eval_only(false);
  // Its per-step evaluations must neither save a best nor stop a candidate.
  config.set_save_best(false);
  config.set_early_stopping_patience(0);
  auto data = LoadDatasets(config, digits_csv);
  if (!data.ok()) {
    c->row.note = std::string(data.status().message());
    c->start_error = data.status();
    return;
  }
  auto trainer =
      Trainer::Create(config, registry, std::move(data->train), std::move(data->eval));
  if (!trainer.ok()) {
    c->row.note = std::string(trainer.status().message());
    c->start_error = trainer.status();
    return;
  }
  c->trainer = std::move(*trainer);
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
                                          r.stopped_slow       ? "slow"
                                          : r.within_tolerance ? "ok"
                                                               : "off",
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
  // All four side by side, a step each in turn: a change in the machine's
  // load while the probe runs hits every precision alike.
  std::vector<Candidate> candidates(4);
  const char* precisions[] = {"fp32", "tf32", "bf16", "fp16"};
  for (size_t i = 0; i < candidates.size(); ++i) {
    candidates[i].row.precision = precisions[i];
    Start(config, registry, digits_csv, &candidates[i]);
    // fp32 cannot start: neither can the run, whatever its precision.
    if (i == 0 && !candidates[0].start_error.ok()) return candidates[0].start_error;
  }
  for (int64_t step = 1; step <= result.steps_each; ++step) {
    for (Candidate& c : candidates) {
      if (c.trainer == nullptr || c.stopped) continue;
      const double t0 = Now();
      if (auto s = c.trainer->TrainUntil(step, &c.sink); !s.ok()) {
        c.row.note = std::string(s.message());
        c.trainer.reset();
        continue;
      }
      if (step > 1) c.step_ms.push_back(1e3 * (Now() - t0));  // the first builds kernels
    }
    // A candidate far slower than fp32 cannot win: its remaining steps would
    // only make the probe cost more than the run it chooses for (a 16-bit
    // convolution the CPU emulates is several times slower than fp32's).
    const Candidate& fp32 = candidates[0];
    if (step == result.steps_each || fp32.trainer == nullptr ||
        fp32.step_ms.size() < kTimedStepsToStop) {
      continue;  // nothing left to save, or nothing to compare with
    }
    for (size_t i = 1; i < candidates.size(); ++i) {
      Candidate& c = candidates[i];
      if (c.trainer == nullptr || c.stopped || c.step_ms.size() < kTimedStepsToStop) continue;
      const double ratio = Median(c.step_ms) / Median(fp32.step_ms);
      if (ratio > kSlowerThanFp32ToStop) {
        c.stopped = true;
        c.row.note = absl::StrFormat("stopped after %d steps: %.1fx fp32's step time",
                                     static_cast<int>(step), ratio);
      }
    }
  }
  for (Candidate& c : candidates) {
    if (c.stopped) {
      c.row.ran = true;
      c.row.stopped_slow = true;
      c.row.step_ms = Median(c.step_ms);
      c.row.loss = c.sink.losses.back();
    } else if (c.trainer != nullptr && !c.step_ms.empty() && !c.sink.losses.empty()) {
      c.row.ran = true;
      c.row.step_ms = Median(c.step_ms);
      const size_t last = std::min<size_t>(3, c.sink.losses.size());
      double sum = 0;
      for (size_t i = c.sink.losses.size() - last; i < c.sink.losses.size(); ++i) {
        sum += c.sink.losses[i];
      }
      c.row.loss = sum / static_cast<double>(last);
    }
    c.trainer.reset();
    result.rows.push_back(c.row);
  }
  result.seconds = Now() - start;
  const ProbeRow& fp32 = result.rows[0];
  if (!fp32.ran || !std::isfinite(fp32.loss)) {
    return absl::FailedPreconditionError(
        absl::StrCat("--precision=auto: the fp32 probe run failed after it started (",
                     fp32.note, "); --precision=fp32 runs the job without the probe"));
  }
  const ProbeRow* best = &result.rows[0];
  for (size_t i = 0; i < result.rows.size(); ++i) {
    ProbeRow& r = result.rows[i];
    if (!r.ran || r.stopped_slow) continue;
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
