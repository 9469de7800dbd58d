// Current and peak device bytes per memory category, for the final report.
#ifndef MANTISSA_TRAINER_CORE_MEMORY_REPORT_H_
#define MANTISSA_TRAINER_CORE_MEMORY_REPORT_H_

#include <vector>

#include "plugins/sdk/backend_client.h"
#include "trainer/core/metrics.h"

namespace mnt::trainer {

// One line per MNT_MemoryCategory, then "total" (Memory_GetStats; a category
// the backend cannot answer reads 0).
std::vector<MemoryLine> MemoryReport(const sdk::BackendClient& client);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_MEMORY_REPORT_H_
