#include "trainer/cli/run_plan.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mnt::trainer {
namespace {

std::string Examples(int64_t n) { return absl::StrCat(n, n == 1 ? " example" : " examples"); }

std::string Split(int64_t batch, int64_t accum, int64_t ranks) {
  return absl::StrCat(batch, " per micro-batch x ", accum, " micro-batch", accum == 1 ? "" : "es",
                      " x ", ranks, ranks == 1 ? " rank" : " ranks");
}

// The plan fields a command may change on resume, by flag name, as text.
struct PlanField {
  const char* flag;
  std::string (*value)(const TrainConfig&);
};

const std::vector<PlanField>& PlanFields() {
  static const auto* const fields = new std::vector<PlanField>{
      {"steps", [](const TrainConfig& c) { return absl::StrCat(c.steps()); }},
      {"schedule", [](const TrainConfig& c) { return c.schedule().kind(); }},
      {"warmup_steps", [](const TrainConfig& c) { return absl::StrCat(c.schedule().warmup_steps()); }},
      {"warmup_ratio", [](const TrainConfig& c) { return absl::StrCat(c.schedule().warmup_ratio()); }},
      {"min_lr_ratio", [](const TrainConfig& c) { return absl::StrCat(c.schedule().min_lr_ratio()); }},
      {"lr", [](const TrainConfig& c) { return absl::StrCat(c.optimizer().lr()); }},
      {"optimizer", [](const TrainConfig& c) { return c.optimizer().name(); }},
      {"grad_accum_steps", [](const TrainConfig& c) { return absl::StrCat(c.grad_accum_steps()); }},
  };
  return *fields;
}

}  // namespace

absl::Status ResolveGlobalBatch(const ChosenNow& chosen, int64_t ranks, TrainConfig* c) {
  const int64_t accum = c->grad_accum_steps();
  const int64_t per_batch = accum * ranks;
  if (chosen("global_batch_size") && c->global_batch_size() > 0) {
    const int64_t global = c->global_batch_size();
    if (global % per_batch != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--global_batch_size=", global, " does not split into ", accum, " micro-batch",
          accum == 1 ? "" : "es", " on ", ranks, ranks == 1 ? " rank" : " ranks",
          ": give a multiple of ", per_batch, " (--grad_accum_steps x ranks)"));
    }
    const int64_t batch = global / per_batch;
    if (chosen("batch_size") && c->batch_size() != batch) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--global_batch_size=", global, " and --batch_size=", c->batch_size(),
          " disagree: the global batch would be ", Split(c->batch_size(), accum, ranks), " = ",
          c->batch_size() * per_batch, "; give one of them"));
    }
    c->set_batch_size(batch);
    return absl::OkStatus();
  }
  c->set_global_batch_size(c->batch_size() * per_batch);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> ResolveResumedPlan(const TrainConfig& saved,
                                                            const ChosenNow& chosen,
                                                            int64_t ranks, TrainConfig* c) {
  std::vector<std::string> lines;
  std::vector<std::string> changed;
  for (const PlanField& f : PlanFields()) {
    const std::string was = f.value(saved), now = f.value(*c);
    if (was != now) changed.push_back(absl::StrCat("--", f.flag, " ", was, " -> ", now));
  }
  if (!changed.empty()) {
    lines.push_back(absl::StrCat(
        "resume: this command changes the run's plan: ", absl::StrJoin(changed, ", "),
        saved.steps() != c->steps()
            ? absl::StrCat(" (the learning-rate schedule now spans ", c->steps(), " steps)")
            : ""));
  }
  // Configs saved before the global batch was kept name only the per-rank
  // batch; those runs were trained on one rank unless a flag said otherwise.
  const int64_t saved_global = saved.global_batch_size() > 0
                                   ? saved.global_batch_size()
                                   : saved.batch_size() * saved.grad_accum_steps();
  const int64_t accum = c->grad_accum_steps();
  if (!chosen("batch_size") && !chosen("global_batch_size")) {
    if (saved_global % (accum * ranks) != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "resume: the run's global batch of ", Examples(saved_global), " does not split into ",
          accum, " micro-batch", accum == 1 ? "" : "es", " on ", ranks,
          ranks == 1 ? " rank" : " ranks",
          ": give --batch_size (per rank; the global batch then changes) or "
          "--grad_accum_steps"));
    }
    c->set_global_batch_size(saved_global);
    c->set_batch_size(saved_global / (accum * ranks));
    if (c->batch_size() != saved.batch_size()) {
      lines.push_back(absl::StrCat("resume: the run's global batch of ", Examples(saved_global),
                                   " is kept: ", Split(c->batch_size(), accum, ranks),
                                   " (it saved --batch_size=", saved.batch_size(), ")"));
    }
    return lines;
  }
  if (auto s = ResolveGlobalBatch(chosen, ranks, c); !s.ok()) return s;
  if (c->global_batch_size() != saved_global) {
    lines.push_back(absl::StrCat("resume: global batch ", saved_global, " -> ",
                                 c->global_batch_size(), " (",
                                 Split(c->batch_size(), accum, ranks), ", as given)"));
  }
  return lines;
}

}  // namespace mnt::trainer
