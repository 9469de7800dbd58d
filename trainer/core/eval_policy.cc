#include "trainer/core/eval_policy.h"

#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/checkpoint/checkpoint_history.h"

namespace mnt::trainer {
namespace {

constexpr char kBestLossKey[] = "best_eval_loss";
constexpr char kBestStepKey[] = "best_eval_step";
constexpr char kWithoutImprovementKey[] = "evals_without_improvement";

absl::Status BadValue(const std::string& path, const char* key, const std::string& value,
                      const char* expected) {
  return absl::DataLossError(absl::StrCat(path, ": checkpoint ", key, " '",
                                          absl::CHexEscape(value), "' is not ", expected));
}

}  // namespace

bool EpochEndedInLastStep(const SamplerState& after, int64_t num_examples,
                          int64_t drawn_per_step) {
  if (num_examples < 1 || drawn_per_step < 1) return false;
  // The sampler starts the next epoch only when it needs its first example:
  // a cursor at the end is an epoch just completed.
  const int64_t drawn = after.epoch * num_examples + after.cursor;
  const int64_t before = drawn - drawn_per_step;
  return before >= 0 && drawn / num_examples > before / num_examples;
}

EvalPolicy::EvalPolicy(const mantissa::TrainConfig& config, const BatchSampler* sampler,
                       int64_t drawn_per_step)
    : strategy_(config.eval_strategy().empty() ? "steps" : config.eval_strategy()),
      eval_every_(config.eval_every()),
      save_best_(config.save_best()),
      patience_(config.early_stopping_patience()),
      threshold_(config.early_stopping_threshold()),
      sampler_(sampler),
      drawn_per_step_(drawn_per_step) {}

bool EvalPolicy::EvalDue(int64_t step, bool last) const {
  if (strategy_ == "no") return false;
  if (strategy_ == "epoch") {
    return EpochEndedInLastStep(sampler_->state(), sampler_->num_examples(), drawn_per_step_);
  }
  return (eval_every_ > 0 && step % eval_every_ == 0) || last;
}

EvalPolicy::Verdict EvalPolicy::OnEval(const EvalMetrics& m) {
  Verdict v;
  // NaN is never an improvement, nor the best.
  const bool finite = std::isfinite(m.loss);
  // Hugging Face's test: the first evaluation, or one below the best by
  // more than the threshold, resets the count.
  const bool improved =
      finite && (state_.best_step < 0 || state_.best_loss - m.loss > threshold_);
  state_.evals_without_improvement = improved ? 0 : state_.evals_without_improvement + 1;
  if (finite && (state_.best_step < 0 || m.loss < state_.best_loss)) {
    state_.best_loss = m.loss;
    state_.best_step = m.step;
    v.save_checkpoint = save_best_;
  }
  if (stop()) {
    v.save_checkpoint = true;
    v.message = absl::StrCat("early stopping at step ", m.step, ": ", StopReason());
  }
  return v;
}

bool EvalPolicy::stop() const {
  return patience_ > 0 && state_.evals_without_improvement >= patience_;
}

std::string EvalPolicy::StopReason() const {
  const std::string best =
      state_.best_step < 0
          ? std::string("no evaluation has had a finite loss")
          : absl::StrFormat("the best is %.6g at step %d", state_.best_loss, state_.best_step);
  return absl::StrCat(state_.evals_without_improvement,
                      state_.evals_without_improvement == 1 ? " evaluation" : " evaluations",
                      " in a row without an eval loss below the best by more than ",
                      threshold_, " (", best, "; --early_stopping_patience=", patience_,
                      ", --early_stopping_threshold=", threshold_, ")");
}

absl::StatusOr<std::string> EvalPolicy::PublishBest(const std::string& dir,
                                                    const std::string& step_file,
                                                    int64_t step) const {
  if (!save_best_ || step != state_.best_step) return std::string();
  if (auto s = PublishBestCheckpoint(dir, step_file); !s.ok()) return s;
  return absl::StrFormat(" and %s, eval loss %.6g, the lowest so far", BestCheckpointPath(dir),
                         state_.best_loss);
}

void EvalPolicy::Save(google::protobuf::Map<std::string, std::string>* metadata) const {
  if (state_.best_step < 0 && state_.evals_without_improvement == 0) return;
  // %.17g reads back as the same double: a resumed run compares exactly.
  (*metadata)[kBestLossKey] = absl::StrFormat("%.17g", state_.best_loss);
  (*metadata)[kBestStepKey] = absl::StrCat(state_.best_step);
  (*metadata)[kWithoutImprovementKey] = absl::StrCat(state_.evals_without_improvement);
}

absl::StatusOr<EvalPolicy::State> EvalPolicy::Read(
    const google::protobuf::Map<std::string, std::string>& metadata, const std::string& path) {
  State state;
  const auto loss = metadata.find(kBestLossKey);
  const auto step = metadata.find(kBestStepKey);
  const auto count = metadata.find(kWithoutImprovementKey);
  const int found = (loss != metadata.end()) + (step != metadata.end()) +
                    (count != metadata.end());
  if (found == 0) return state;
  if (found != 3) {
    return absl::DataLossError(absl::StrCat(path, ": checkpoint has ", found, " of ",
                                            kBestLossKey, ", ", kBestStepKey, " and ",
                                            kWithoutImprovementKey));
  }
  if (!absl::SimpleAtoi(step->second, &state.best_step) || state.best_step < -1) {
    return BadValue(path, kBestStepKey, step->second, "a step (or -1)");
  }
  // No finite best yet: the loss is the +inf it started from.
  if (!absl::SimpleAtod(loss->second, &state.best_loss) ||
      (state.best_step >= 0 ? !std::isfinite(state.best_loss)
                            : state.best_loss != std::numeric_limits<double>::infinity())) {
    return BadValue(path, kBestLossKey, loss->second,
                    state.best_step >= 0 ? "a finite number" : "inf (no best step)");
  }
  if (!absl::SimpleAtoi(count->second, &state.evals_without_improvement) ||
      state.evals_without_improvement < 0) {
    return BadValue(path, kWithoutImprovementKey, count->second, "a whole number >= 0");
  }
  return state;
}

std::string EvalPolicy::Apply(const State& state) {
  state_ = state;
  if (!stop()) return "";
  return absl::StrCat("early stopping had ended this run: ", StopReason(),
                      "; a larger --early_stopping_patience trains on");
}

}  // namespace mnt::trainer
