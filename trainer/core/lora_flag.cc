#include "trainer/core/lora_flag.h"

#include <cmath>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace mnt::trainer {

absl::StatusOr<std::string> LoraModelOptions(const std::string& flag) {
  int64_t rank = 0;
  double alpha = 8.0, dropout = 0.0;
  std::vector<std::string> targets;
  bool in_targets = false;
  for (absl::string_view raw : absl::StrSplit(flag, ',', absl::SkipWhitespace())) {
    const absl::string_view item = absl::StripAsciiWhitespace(raw);
    const size_t eq = item.find('=');
    if (eq == absl::string_view::npos) {
      if (!in_targets) {
        return absl::InvalidArgumentError(absl::StrCat(
            "--lora: expected key=value, got '", item,
            "' (keys: r, alpha, dropout, targets; e.g. --lora=r=8,alpha=16,targets=qkvw,fcw)"));
      }
      targets.emplace_back(item);
      continue;
    }
    const absl::string_view key = absl::StripAsciiWhitespace(item.substr(0, eq));
    const absl::string_view value = absl::StripAsciiWhitespace(item.substr(eq + 1));
    in_targets = false;
    if (key == "r") {
      if (!absl::SimpleAtoi(value, &rank) || rank < 1 || rank > (1 << 20)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--lora: r='", value, "' is not a rank from 1 to 1048576"));
      }
    } else if (key == "alpha") {
      if (!absl::SimpleAtod(value, &alpha) || !std::isfinite(alpha) || alpha <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("--lora: alpha='", value, "' is not a positive number"));
      }
    } else if (key == "dropout") {
      if (!absl::SimpleAtod(value, &dropout) || !(dropout >= 0 && dropout < 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--lora: dropout='", value, "' is not in [0, 1)"));
      }
      if (dropout != 0) {
        return absl::UnimplementedError(absl::StrCat(
            "--lora: dropout=", value, ": dropout on the adapters' input is not implemented; "
            "use dropout=0"));
      }
    } else if (key == "targets") {
      in_targets = true;
      if (!value.empty()) targets.emplace_back(value);
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "--lora: unknown key '", key, "' (keys: r, alpha, dropout, targets)"));
    }
  }
  if (rank == 0 || targets.empty()) {
    return absl::InvalidArgumentError(
        "--lora needs r and targets (globs over parameter names), e.g. "
        "--lora=r=8,alpha=16,targets=qkvw,attprojw for gpt2; plugin_info lists a model's "
        "parameters");
  }
  for (const std::string& t : targets) {
    if (t.find('|') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("--lora: target '", t, "' has a '|'; separate targets with commas"));
    }
  }
  return absl::StrCat("lora_r=", rank, ",lora_alpha=", alpha, ",lora_dropout=0,lora_targets=",
                      absl::StrJoin(targets, "|"));
}

}  // namespace mnt::trainer
