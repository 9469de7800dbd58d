// Faults the tests inject on purpose, so that what must happen on an
// overflow can be checked on real runs:
//
//   MANTISSA_FAULT_INF_GRADIENT=<rank>:<step>
//
// puts +inf into that rank's gradient (the first element of the flat fp32
// gradient the optimizer reads, i.e. of the model's first parameter) at that
// 1-based step, before data parallelism's exchange (rank 0 without one). The
// averaged gradient is then non-finite on every rank, so with fp16's dynamic
// loss scaling every rank skips that step and backs off its scale alike.
//
//   MANTISSA_FAULT_FILL_WEIGHTS=<parameter>:<value>:<step>
//
// fills that parameter's working weights with <value> before the step's
// forward (on every rank): a layer made to overflow, for --debug_overflow.
// Read once; unset (the normal case) costs one comparison.
#ifndef MANTISSA_TRAINER_PARALLEL_FAULT_INJECTION_H_
#define MANTISSA_TRAINER_PARALLEL_FAULT_INJECTION_H_

#include <cstdint>
#include <optional>
#include <string>

namespace mnt::trainer {

struct InjectedFault {
  int rank = 0;
  int64_t step = 0;
};

// Parses "<rank>:<step>"; nullopt for an empty or malformed value (a
// malformed value is a test bug, so it is also reported on stderr once).
std::optional<InjectedFault> ParseInjectedFault(const std::string& value);

// The fault MANTISSA_FAULT_INF_GRADIENT asks for, parsed on the first call.
const std::optional<InjectedFault>& InfGradientFault();

struct WeightFillFault {
  std::string param;
  double value = 0;
  int64_t step = 0;
};

// Parses "<parameter>:<value>:<step>"; nullopt for empty or malformed.
std::optional<WeightFillFault> ParseWeightFillFault(const std::string& value);

// The fault MANTISSA_FAULT_FILL_WEIGHTS asks for, parsed on the first call.
const std::optional<WeightFillFault>& FillWeightsFault();

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_FAULT_INJECTION_H_
