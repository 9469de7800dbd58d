#include "trainer/config/optimizer_options.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "plugins/sdk/options.h"

namespace mnt::trainer {
namespace {

absl::Status ToAbsl(const sdk::Status& s) {
  // Options only ever refuse a value, so every failure is the user's input.
  return s.ok() ? absl::OkStatus() : absl::InvalidArgumentError(s.message());
}

absl::Status OutOfRange(const char* key, double value, const char* expected) {
  return absl::InvalidArgumentError(absl::StrCat("--optimizer_options: ", key, "=", value,
                                                 " is out of range: expected ", expected));
}

// A 0/1 option.
absl::Status GetFlag(const sdk::Options& o, const char* key, bool* out) {
  long long v = *out ? 1 : 0;
  if (auto s = ToAbsl(o.GetInt(key, &v)); !s.ok()) return s;
  if (v != 0 && v != 1) return OutOfRange(key, static_cast<double>(v), "0 or 1");
  *out = v == 1;
  return absl::OkStatus();
}

absl::Status GetFloat(const sdk::Options& o, const char* key, float* out) {
  double v = *out;
  if (auto s = ToAbsl(o.GetDouble(key, &v)); !s.ok()) return s;
  *out = static_cast<float>(v);
  return absl::OkStatus();
}

absl::Status ParseAdafactor(const sdk::Options& o, AdafactorOptions* a) {
  for (const auto& [key, value] : {std::pair<const char*, float*>{"beta1", &a->beta1},
                                   {"decay_rate", &a->decay_rate},
                                   {"clip_threshold", &a->clip_threshold},
                                   {"eps1", &a->eps1},
                                   {"eps2", &a->eps2}}) {
    if (auto s = GetFloat(o, key, value); !s.ok()) return s;
  }
  for (const auto& [key, value] : {std::pair<const char*, bool*>{"relative_step", &a->relative_step},
                                   {"scale_parameter", &a->scale_parameter},
                                   {"warmup_init", &a->warmup_init}}) {
    if (auto s = GetFlag(o, key, value); !s.ok()) return s;
  }
  // The ranges ADAFACTOR_STEP accepts (plugins/abi/mnt_backend.h).
  if (!(a->beta1 >= 0.0f && a->beta1 < 1.0f)) return OutOfRange("beta1", a->beta1, "[0, 1)");
  if (!(a->decay_rate < 0.0f && a->decay_rate > -1e3f)) {
    return OutOfRange("decay_rate", a->decay_rate, "a negative number");
  }
  if (!(a->clip_threshold > 0.0f)) {
    return OutOfRange("clip_threshold", a->clip_threshold, "a positive number");
  }
  if (!(a->eps1 >= 0.0f && a->eps1 <= 1.0f)) return OutOfRange("eps1", a->eps1, "[0, 1]");
  if (!(a->eps2 >= 0.0f && a->eps2 <= 1.0f)) return OutOfRange("eps2", a->eps2, "[0, 1]");
  if (a->warmup_init && !a->relative_step) {
    return absl::InvalidArgumentError(
        "--optimizer_options: warmup_init=1 needs relative_step=1 (it shapes the relative "
        "step)");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OptimizerOptions> ParseOptimizerOptions(const mantissa::OptimizerConfig& config) {
  OptimizerOptions out;
  const std::string context = absl::StrCat("--optimizer_options for --optimizer=", config.name());
  sdk::Options o;
  if (auto s = ToAbsl(sdk::Options::Parse(config.optimizer_options().c_str(), context.c_str(), &o));
      !s.ok())
    return s;
  if (config.name() == "adafactor") {
    if (auto s = ToAbsl(o.CheckKnown({"beta1", "decay_rate", "clip_threshold", "eps1", "eps2",
                                      "relative_step", "scale_parameter", "warmup_init"}));
        !s.ok())
      return s;
    if (auto s = ParseAdafactor(o, &out.adafactor); !s.ok()) return s;
    return out;
  }
  if (config.name() == "adamw8bit") {
    if (auto s = ToAbsl(o.CheckKnown({"min_8bit_size", "embedding_8bit"})); !s.ok()) return s;
    if (auto s = GetFlag(o, "embedding_8bit", &out.embedding_8bit); !s.ok()) return s;
    long long min_size = out.min_8bit_size;
    if (auto s = ToAbsl(o.GetInt("min_8bit_size", &min_size)); !s.ok()) return s;
    if (min_size < 0) return OutOfRange("min_8bit_size", static_cast<double>(min_size), ">= 0");
    out.min_8bit_size = min_size;
    return out;
  }
  if (!config.optimizer_options().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--optimizer_options='", config.optimizer_options(), "': --optimizer=", config.name(),
        " takes none (its settings are flags: --lr, --beta1, ...; options are for adafactor "
        "and adamw8bit)"));
  }
  return out;
}

}  // namespace mnt::trainer
