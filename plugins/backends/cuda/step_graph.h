// One training step captured into a CUDA graph (ABI 1.7 step markers; the
// policy of when to capture and replay is common/step_session.h's), and
// what the graph owns so that a replay reads what the capture saw:
//
//   - scratch blocks (Scratch in backend.h) allocated while capturing are
//     not given back to the allocator at the end of their op: the graph's
//     kernels write them at every replay, so no other buffer may get them.
//     They stay allocated (WORKSPACE) until the graph is released;
//   - host bytes a captured copy reads (the multi-tensor optimizers' table)
//     are copied into pinned buffers the graph owns: a replay copies them
//     again, long after the kernel method's own buffer is gone. They are
//     the same bytes at every replay because a step is replayed only when
//     its ops and params equal the captured step's.
//
// Nothing is allocated or freed inside a capture: the device allocator
// serves it from blocks reserved beforehand (block_cache.h), and the pinned
// buffers come from a pool filled beforehand (ReservePinned); a released
// graph's buffers go back to the pool, not to the driver. Capture runs in
// cudaStreamCaptureModeRelaxed. Anything that cannot be captured (a sync, a
// failed call, a request nothing was reserved for) makes the capture fail;
// the step is then issued eagerly (no work was done under capture) and the
// instance captures no more.
// Every CUDA status is checked; a failure reports why in `why_not`.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_STEP_GRAPH_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_STEP_GRAPH_H_

#include <cuda_runtime.h>

#include <cstddef>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "plugins/backends/common/allocator.h"
#include "plugins/backends/cuda/block_cache.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

class StepGraph {
 public:
  StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;
  // Frees the pinned buffers and destroys the graph; the owner has
  // synchronised its stream and frees the device blocks (Release).
  ~StepGraph();

  bool capturing() const { return capturing_; }
  bool has_graph() const { return exec_ != nullptr; }

  // While capturing: `block` (from `memory`, `bytes` requested) belongs to
  // the graph being captured and is freed with it.
  void Keep(void* block, size_t bytes) {
    pending_.blocks.push_back(block);
    pending_.bytes += bytes;
  }
  // While capturing: a pinned copy of `bytes` of host memory at `src`,
  // owned by the graph being captured, for a captured host-to-device copy;
  // from the pool only (an error when ReservePinned did not provide it).
  sdk::Status PinnedCopy(const void* src, size_t bytes, void** pinned);
  // Outside capture: the pool holds a buffer for each of `sizes`.
  sdk::Status ReservePinned(const std::vector<size_t>& sizes);
  // Device bytes the current graph keeps for its life (WORKSPACE).
  size_t kept_bytes() const { return owned_.bytes; }

  // Releases the current graph (waits for `stream` first: a replay may be
  // in flight), then captures `issue` on `stream`, instantiates and
  // launches it. A capture that fails leaves no work issued, the previous
  // graph released and *why_not set; the status is OK then. A launch that
  // fails after a successful capture is reported the same way (nothing ran).
  sdk::Status Capture(cudaStream_t stream, backend::Allocator& memory,
                      const std::function<sdk::Status()>& issue, std::string* why_not);
  // Launches the captured step on `stream`.
  sdk::Status Replay(cudaStream_t stream);
  // Waits for `stream`, destroys the graph, frees its blocks and buffers.
  sdk::Status Release(cudaStream_t stream, backend::Allocator& memory);

 private:
  struct Owned {
    std::vector<void*> blocks;  // device, from the allocator
    size_t bytes = 0;           // requested bytes of `blocks`
    std::vector<std::pair<size_t, void*>> pinned;  // (size class, buffer)
  };
  // Blocks back to the allocator, pinned buffers back to the pool.
  void Free(Owned* owned, backend::Allocator& memory);

  cudaGraphExec_t exec_ = nullptr;
  Owned owned_;    // the current graph's
  Owned pending_;  // the capture in progress's
  // cudaMallocHost buffers by size class, with the device allocator's rules
  // (block_cache.h): filled before a capture, served from during it.
  BlockCache pinned_pool_;
  bool capturing_ = false;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_STEP_GRAPH_H_
