// A fault the data-parallel tests inject on purpose, so that what must
// happen when one rank alone sees an overflow can be checked on real runs:
//
//   MANTISSA_FAULT_INF_GRADIENT=<rank>:<step>
//
// puts +inf into that rank's local gradient (the first element of the flat
// fp32 gradient the ranks exchange) at that 1-based step, before the
// exchange. The averaged gradient is then non-finite on every rank, so with
// fp16's dynamic loss scaling every rank skips that step and backs off its
// scale alike. Read once; unset (the normal case) costs one comparison.
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

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_PARALLEL_FAULT_INJECTION_H_
