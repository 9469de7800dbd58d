#include "trainer/core/memory_report.h"

namespace mnt::trainer {
namespace {

const char* CategoryName(MNT_MemoryCategory c) {
  switch (c) {
    case MNT_MEMORY_WEIGHTS: return "weights";
    case MNT_MEMORY_MASTER_WEIGHTS: return "master_weights";
    case MNT_MEMORY_GRADIENTS: return "gradients";
    case MNT_MEMORY_OPTIMIZER_STATE: return "optimizer_state";
    case MNT_MEMORY_ACTIVATIONS: return "activations";
    case MNT_MEMORY_WORKSPACE: return "workspace";
    case MNT_MEMORY_DATA: return "data";
    default: return "total";
  }
}

}  // namespace

std::vector<MemoryLine> MemoryReport(const sdk::BackendClient& client) {
  std::vector<MemoryLine> lines;
  for (int c = 0; c < MNT_MEMORY_CATEGORY_COUNT; ++c) {
    MemoryLine line;
    line.category = CategoryName(static_cast<MNT_MemoryCategory>(c));
    (void)client.GetStats(static_cast<MNT_MemoryCategory>(c), &line.current_bytes,
                          &line.peak_bytes);
    lines.push_back(line);
  }
  MemoryLine total;
  total.category = "total";
  (void)client.GetStats(MNT_MEMORY_ALL, &total.current_bytes, &total.peak_bytes);
  lines.push_back(total);
  return lines;
}

}  // namespace mnt::trainer
