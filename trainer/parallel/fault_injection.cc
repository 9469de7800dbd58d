#include "trainer/parallel/fault_injection.h"

#include <cstdlib>
#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"

namespace mnt::trainer {

std::optional<InjectedFault> ParseInjectedFault(const std::string& value) {
  if (value.empty()) return std::nullopt;
  const std::vector<std::string> parts = absl::StrSplit(value, ':');
  InjectedFault f;
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &f.rank) ||
      !absl::SimpleAtoi(parts[1], &f.step) || f.rank < 0 || f.step < 1) {
    std::cerr << "mantissa: warning: MANTISSA_FAULT_INF_GRADIENT='" << value
              << "' is not <rank>:<step> (step >= 1); no fault injected\n";
    return std::nullopt;
  }
  return f;
}

const std::optional<InjectedFault>& InfGradientFault() {
  static const std::optional<InjectedFault> fault = [] {
    const char* v = std::getenv("MANTISSA_FAULT_INF_GRADIENT");
    return ParseInjectedFault(v != nullptr ? v : "");
  }();
  return fault;
}

std::optional<WeightFillFault> ParseWeightFillFault(const std::string& value) {
  if (value.empty()) return std::nullopt;
  const std::vector<std::string> parts = absl::StrSplit(value, ':');
  WeightFillFault f;
  if (parts.size() != 3 || parts[0].empty() || !absl::SimpleAtod(parts[1], &f.value) ||
      !absl::SimpleAtoi(parts[2], &f.step) || f.step < 1) {
    std::cerr << "mantissa: warning: MANTISSA_FAULT_FILL_WEIGHTS='" << value
              << "' is not <parameter>:<value>:<step> (step >= 1); no fault injected\n";
    return std::nullopt;
  }
  f.param = parts[0];
  return f;
}

const std::optional<WeightFillFault>& FillWeightsFault() {
  static const std::optional<WeightFillFault> fault = [] {
    const char* v = std::getenv("MANTISSA_FAULT_FILL_WEIGHTS");
    return ParseWeightFillFault(v != nullptr ? v : "");
  }();
  return fault;
}

}  // namespace mnt::trainer
