#include "trainer/core/out_of_memory_advice.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace mnt::trainer {
namespace {

constexpr char kEstimate[] = "tools/bazel run //tools/memory:estimate --";

}  // namespace

std::string MemoryEstimateCommand(const MemoryAdviceFacts& f) {
  const mantissa::TrainConfig& c = *f.config;
  std::vector<std::string> args = {kEstimate, absl::StrCat("--model=", c.model())};
  if (!c.model_options().empty()) args.push_back(absl::StrCat("--model_options=", c.model_options()));
  // One example as the model was created for it.
  const MNT_DataSpec& d = f.data_spec;
  if (d.input_dtype == MNT_DTYPE_I32) {
    args.push_back("--data=tokens");
    if (d.input_rank >= 1) args.push_back(absl::StrCat("--seq_len=", d.input_dims[0]));
    args.push_back(absl::StrCat("--vocab_size=", d.num_classes));
  } else {
    std::vector<int64_t> dims(d.input_dims, d.input_dims + std::max(0, d.input_rank));
    args.push_back("--data=images");
    args.push_back(absl::StrCat("--input_dims=", absl::StrJoin(dims, ",")));
    args.push_back(absl::StrCat("--num_classes=", d.num_classes));
  }
  if (!f.precision.empty()) args.push_back(absl::StrCat("--precisions=", f.precision));
  if (!c.precision_options().empty()) {
    args.push_back(absl::StrCat("--precision_options=", c.precision_options()));
  }
  if (!c.optimizer().name().empty()) {
    args.push_back(absl::StrCat("--optimizer=", c.optimizer().name()));
  }
  args.push_back(absl::StrCat("--batch_sizes=", c.batch_size()));
  args.push_back(absl::StrCat("--device=", c.device()));
  if (f.memory_bytes > 0) {
    // Rounded down, in the estimator's GB (10^9 bytes): it then says
    // whether the batch fits and the largest one that does.
    args.push_back(absl::StrFormat("--device_memory_gb=%g",
                                   std::floor(f.memory_bytes / 1e8) / 10));
  }
  return absl::StrJoin(args, " ");
}

absl::Status WithOutOfMemoryAdvice(const absl::Status& s, const MemoryAdviceFacts& f) {
  if (s.code() != absl::StatusCode::kResourceExhausted || f.config == nullptr ||
      absl::StrContains(s.message(), kEstimate)) {
    return s;
  }
  const mantissa::TrainConfig& c = *f.config;
  std::string what = absl::StrCat("a smaller --batch_size (now ", c.batch_size(),
                                  "; more --grad_accum_steps keep the examples per step)");
  if (!c.gradient_checkpointing()) {
    absl::StrAppend(&what, " or --gradient_checkpointing (recompute activations in backward)");
  }
  return absl::Status(s.code(), absl::StrCat(s.message(), ". The run does not fit in memory: use ",
                                             what, "; `", MemoryEstimateCommand(f),
                                             "` shows what fits"));
}

}  // namespace mnt::trainer
