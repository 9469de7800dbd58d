#include "trainer/cli/auto_batch.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "trainer/cli/dry_run.h"
#include "trainer/cli/memory_limit.h"
#include "trainer/dryrun/memory_estimate.h"
#include "trainer/text/byte_size.h"

namespace mnt::trainer {
namespace {

// The config's validation bound on --batch_size.
constexpr int64_t kMaxBatch = int64_t{1} << 24;

std::string Bytes(int64_t b) { return absl::StrCat(FormatBytes(b), " (", b, " bytes)"); }

}  // namespace

int64_t LargestDivisorAtMost(int64_t n, int64_t at_most) {
  for (int64_t d = std::min(n, at_most); d > 1; --d) {
    if (n % d == 0) return d;
  }
  return 1;
}

absl::StatusOr<std::string> ResolveAutoBatch(const AutoBatchRequest& request,
                                             PluginRegistry* registry, TrainConfig* config) {
  const int64_t ranks = request.ranks;
  int64_t per_rank = 0;  // the rank's part of a kept global batch
  if (request.keep_global) {
    if (config->global_batch_size() % ranks != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--batch_size=auto: the global batch of ", config->global_batch_size(),
          " does not split over ", ranks, " ranks"));
    }
    per_rank = config->global_batch_size() / ranks;
  }
  auto estimator = memory::MemoryEstimator::Create(
      EstimateSetupFor(*config, ranks, request.spec), registry);
  if (!estimator.ok()) return estimator.status();
  auto limit = ResolveMemoryLimit(config->memory_limit_gb(), (*estimator)->host_addressable(),
                                  (*estimator)->device_memory_bytes());
  if (!limit.ok()) return limit.status();

  // --precision=auto picks after measuring: the batch must fit each choice.
  const std::vector<std::string> precisions =
      config->precision() == "auto" ? std::vector<std::string>{"fp32", "tf32", "bf16", "fp16"}
                                    : std::vector<std::string>{config->precision()};
  const int64_t cap =
      std::min(kMaxBatch, request.keep_global
                              ? per_rank
                              : std::max<int64_t>(1, (request.train_examples + ranks - 1) / ranks));
  int64_t fit = cap;
  for (const std::string& p : precisions) {
    auto largest = (*estimator)->LargestBatch(p, limit->bytes, fit);
    if (!largest.ok()) return largest.status();
    if (*largest == 0) {
      auto one = (*estimator)->Estimate(p, 1);
      if (!one.ok()) return one.status();
      return absl::ResourceExhaustedError(absl::StrCat(
          "--batch_size=auto: not even batch size 1 fits: ", p, " takes an estimated ",
          Bytes(one->total()), " at batch size 1, over the limit of ", Bytes(limit->bytes),
          ", ", limit->source, " (train --dry_run --batch_size=1 shows where it goes)"));
    }
    fit = *largest;
  }

  int64_t batch = fit, accum = config->grad_accum_steps();
  if (request.keep_global) {
    batch = LargestDivisorAtMost(per_rank, fit);
    accum = per_rank / batch;
    if (request.accum_chosen && accum != config->grad_accum_steps()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--batch_size=auto with the global batch of ", config->global_batch_size(),
          " chooses the gradient accumulation itself (", accum, " micro-batches of ", batch,
          "), but --grad_accum_steps=", config->grad_accum_steps(), " was given; leave it out"));
    }
  }
  int64_t peak = 0;
  std::string peak_precision;
  for (const std::string& p : precisions) {
    auto e = (*estimator)->Estimate(p, batch);
    if (!e.ok()) return e.status();
    if (e->total() > peak) peak = e->total(), peak_precision = p;
  }
  config->set_batch_size(batch);
  config->set_grad_accum_steps(accum);
  config->set_global_batch_size(batch * accum * ranks);
  config->set_auto_batch_size(false);

  std::string line = absl::StrCat(
      "batch size: auto chose ", batch, " per micro-batch", accum > 1 ? absl::StrCat(" x ", accum, " micro-batches") : "",
      ranks > 1 ? absl::StrCat(" x ", ranks, " ranks") : "",
      request.keep_global || accum > 1 ? absl::StrCat(" (global batch ", batch * accum * ranks, ")") : "",
      ": estimated peak ", Bytes(peak), precisions.size() > 1 ? absl::StrCat(" (", peak_precision, "'s; the batch fits each precision auto may choose)") : "",
      " of the limit ", Bytes(limit->bytes), ", ", limit->source);
  if (fit < cap) {
    // What one example more would take: why the choice stops here.
    for (const std::string& p : precisions) {
      auto next = (*estimator)->Estimate(p, fit + 1);
      if (!next.ok()) return next.status();
      if (next->total() > limit->bytes) {
        absl::StrAppend(&line, "; ", fit + 1, " would take ", Bytes(next->total()));
        break;
      }
    }
    if (request.keep_global && batch < fit) {
      absl::StrAppend(&line, " (", fit, " fits; ", batch, " is the largest that divides the ",
                      per_rank, " examples per rank of the global batch)");
    }
  } else {
    absl::StrAppend(&line, request.keep_global
                               ? "; the whole global batch fits in one micro-batch"
                               : absl::StrCat("; capped at the ", request.train_examples,
                                              " training examples"));
  }
  return line;
}

}  // namespace mnt::trainer
