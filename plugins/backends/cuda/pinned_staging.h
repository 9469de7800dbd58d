// Host-to-device uploads through a small ring of pinned host buffers, so
// that Memory_Copy(HOST_TO_DEVICE) keeps the ABI's promise (the host
// buffer may be reused on return) without draining the stream.
//
// Ownership: the caller's `src` is read (memcpy into a slot) before Upload
// returns and never touched again; each slot belongs to this object and is
// copied to the device asynchronously on the backend's stream; an event
// recorded after that copy says when the slot may be overwritten, and only
// a slot still in flight is waited for (its own event, not the stream).
// Device-side ordering is the stream's: kernels enqueued later see the data.
// If pinned memory cannot be had (a locked-memory limit), uploads fall back
// to a pageable copy followed by a stream sync, as before.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_PINNED_STAGING_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_PINNED_STAGING_H_

#include <cuda_runtime.h>

#include <cstddef>

#include "plugins/sdk/status.h"

namespace mnt::cuda {

class PinnedStaging {
 public:
  static constexpr size_t kSlotBytes = size_t{4} << 20;
  static constexpr int kSlots = 4;

  PinnedStaging() = default;
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;
  // Waits for the slots' copies, then frees the slots and their events.
  ~PinnedStaging();

  // dst (device) <- src (host), `bytes` of it, ordered on `stream`; returns
  // once src has been read. Large copies go through the slots in turn.
  sdk::Status Upload(void* dst, const void* src, size_t bytes, cudaStream_t stream);

 private:
  struct Slot {
    void* host = nullptr;         // kSlotBytes of pinned memory
    cudaEvent_t done = nullptr;   // recorded after the slot's last copy
    bool in_flight = false;
  };
  // The next slot, allocated on first use and free to overwrite; false
  // (with OK) when pinned memory is unavailable.
  sdk::Status NextSlot(Slot** slot, bool* have);

  Slot slots_[kSlots];
  int next_ = 0;
  bool pinned_unavailable_ = false;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_PINNED_STAGING_H_
