#include "plugins/backends/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

using sdk::Status;

PinnedStaging::~PinnedStaging() {
  for (Slot& s : slots_) {
    if (s.done != nullptr) {
      if (s.in_flight) cudaEventSynchronize(s.done);
      cudaEventDestroy(s.done);
    }
    if (s.host != nullptr) cudaFreeHost(s.host);
  }
}

Status PinnedStaging::NextSlot(Slot** slot, bool* have) {
  *have = false;
  if (pinned_unavailable_) return Status::Ok();
  Slot& s = slots_[next_];
  if (s.host == nullptr) {
    // Portable: pinned for every device's context, whichever is current.
    if (cudaHostAlloc(&s.host, kSlotBytes, cudaHostAllocPortable) != cudaSuccess) {
      (void)cudaGetLastError();  // handled: pageable copies from now on
      s.host = nullptr;
      pinned_unavailable_ = true;
      return Status::Ok();
    }
    MNT_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&s.done, cudaEventDisableTiming),
                             "Memory_Copy: cudaEventCreateWithFlags(staging)");
  }
  if (s.in_flight) {  // only this slot's previous copy, not the whole stream
    MNT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(s.done),
                             "Memory_Copy: cudaEventSynchronize(staging slot)");
    s.in_flight = false;
  }
  next_ = (next_ + 1) % kSlots;
  *slot = &s;
  *have = true;
  return Status::Ok();
}

Status PinnedStaging::Upload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  size_t done = 0;
  while (done < bytes) {
    Slot* slot = nullptr;
    bool have = false;
    MNT_RETURN_IF_ERROR(NextSlot(&slot, &have));
    if (!have) {  // pageable: cudaMemcpyAsync may still read src after return
      MNT_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(static_cast<char*>(dst) + done, static_cast<const char*>(src) + done,
                          bytes - done, cudaMemcpyHostToDevice, stream),
          sdk::Format("Memory_Copy: cudaMemcpyAsync(%zu bytes)", bytes - done));
      return CudaStatus(cudaStreamSynchronize(stream), "Memory_Copy: cudaStreamSynchronize");
    }
    const size_t chunk = std::min(kSlotBytes, bytes - done);
    std::memcpy(slot->host, static_cast<const char*>(src) + done, chunk);
    MNT_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(static_cast<char*>(dst) + done, slot->host, chunk,
                        cudaMemcpyHostToDevice, stream),
        sdk::Format("Memory_Copy: cudaMemcpyAsync(%zu bytes, staged)", chunk));
    MNT_CUDA_RETURN_IF_ERROR(cudaEventRecord(slot->done, stream),
                             "Memory_Copy: cudaEventRecord(staging slot)");
    slot->in_flight = true;
    done += chunk;
  }
  return Status::Ok();
}

}  // namespace mnt::cuda
