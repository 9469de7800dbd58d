// The memory --batch_size=auto fits a run into: --memory_limit_gb when
// given, else what the device has less a margin for what the estimate does
// not count (the process itself, the runtime's own allocations, the
// allocator's rounding).
#ifndef MANTISSA_TRAINER_CLI_MEMORY_LIMIT_H_
#define MANTISSA_TRAINER_CLI_MEMORY_LIMIT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace mnt::trainer {

struct MemoryLimit {
  int64_t bytes = 0;
  std::string source;  // where the figure came from, for the run's line
};

// The margin left below what the device has: 10% of it, at least 1 GiB.
int64_t MemoryMargin(int64_t available);

// `limit_gb` > 0: that many GB (10^9 bytes). Otherwise a host-addressable
// device (the CPU) gets /proc/meminfo's MemAvailable less the margin, and
// any other its `device_total_bytes` (Backend_GetInfo) less the margin; an
// error when neither is known.
absl::StatusOr<MemoryLimit> ResolveMemoryLimit(double limit_gb, bool host_addressable,
                                               int64_t device_total_bytes);

// MemAvailable from a /proc/meminfo text, in bytes; -1 when absent.
int64_t MemAvailableBytes(const std::string& meminfo);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_MEMORY_LIMIT_H_
