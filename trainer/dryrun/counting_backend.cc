#include "trainer/dryrun/counting_backend.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace mnt::memory {

CountingBackend* CountingBackend::active_ = nullptr;

CountingBackend::CountingBackend(const MNT_Plugin_Api* real, MNT_Backend* instance)
    : real_(real) {
  // The real table (as much of it as the plugin has; the registry checked
  // its struct_size), then the memory, copy and op entry points replaced.
  std::memcpy(&api_, real->backend,
              std::min(real->backend->struct_size, sizeof(MNT_Backend_Api)));
  api_.Memory_Allocate = &Allocate;
  api_.Memory_Free = &Free;
  api_.Memory_Copy = &Copy;
  api_.Memory_GetStats = &GetStats;
  api_.Memory_ResetPeak = &ResetPeak;
  api_.Backend_Run = &Run;
  plugin_ = *real;
  plugin_.backend = &api_;
  plugin_.Error_Destroy = &ErrorDestroy;
  plugin_.Error_Message = &ErrorMessage;
  plugin_.Error_GetCode = &ErrorGetCode;
  client_ = sdk::BackendClient(&plugin_, instance);
}

sdk::Status CountingBackend::Create(const MNT_Plugin_Api* real, MNT_Backend* instance,
                                    std::unique_ptr<CountingBackend>* out) {
  if (active_ != nullptr) {
    return sdk::FailedPrecondition("a counting backend is already in use");
  }
  if (real == nullptr || real->backend == nullptr || instance == nullptr) {
    return sdk::InvalidArgument("counting backend: a backend plugin and instance are required");
  }
  out->reset(new CountingBackend(real, instance));
  active_ = out->get();
  return sdk::Status::Ok();
}

CountingBackend::~CountingBackend() {
  for (const auto& [address, block] : live_) {
    munmap(reinterpret_cast<void*>(address), block.mapped);
  }
  for (const MNT_Error* e : own_errors_) delete e;
  active_ = nullptr;
}

void CountingBackend::Count(int index, int64_t delta) {
  for (int i : {index, static_cast<int>(MNT_MEMORY_CATEGORY_COUNT)}) {
    current_[i] += delta;
    peak_[i] = std::max(peak_[i], current_[i]);
  }
}

MNT_Error* CountingBackend::Fail(const sdk::Status& s) {
  MNT_Error* e = sdk::ToError(s);
  active_->own_errors_.insert(e);
  return e;
}

MNT_Error* CountingBackend::Allocate(MNT_Memory_Allocate_Args* args) {
  const int32_t category = static_cast<int32_t>(args->category);
  if (category < 0 || category >= MNT_MEMORY_CATEGORY_COUNT) {
    return Fail(sdk::InvalidArgument(
        sdk::Format("Memory_Allocate: unknown memory category %d", category)));
  }
  args->data = nullptr;
  if (args->size_bytes == 0) return nullptr;
  // Address space only: a unique, aligned address that no byte backs and
  // that faults if anything touches it.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t mapped = (args->size_bytes + page - 1) / page * page;
  void* p = mapped < args->size_bytes
                ? MAP_FAILED
                : mmap(nullptr, mapped, PROT_NONE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    return Fail(sdk::ResourceExhausted(sdk::Format(
        "Memory_Allocate: %zu bytes is more than this process can map even as "
        "address space; the estimate cannot be made",
        args->size_bytes)));
  }
  active_->live_[reinterpret_cast<uintptr_t>(p)] = Block{args->size_bytes, mapped, category};
  active_->Count(category, static_cast<int64_t>(args->size_bytes));
  args->data = p;
  return nullptr;
}

MNT_Error* CountingBackend::Free(MNT_Memory_Free_Args* args) {
  if (args->data == nullptr) return nullptr;
  auto& live = active_->live_;
  auto it = live.find(reinterpret_cast<uintptr_t>(args->data));
  if (it == live.end()) {
    return Fail(sdk::InvalidArgument(
        sdk::Format("Memory_Free: %p was not allocated here", args->data)));
  }
  active_->Count(it->second.category, -static_cast<int64_t>(it->second.requested));
  munmap(args->data, it->second.mapped);
  live.erase(it);
  return nullptr;
}

// Nothing is read or written: the model's uploads (e.g. position ids) are
// values, not sizes.
MNT_Error* CountingBackend::Copy(MNT_Memory_Copy_Args*) { return nullptr; }

MNT_Error* CountingBackend::GetStats(MNT_Memory_GetStats_Args* args) {
  const int32_t c = static_cast<int32_t>(args->category);
  if (c != MNT_MEMORY_ALL && (c < 0 || c >= MNT_MEMORY_CATEGORY_COUNT)) {
    return Fail(sdk::InvalidArgument(
        sdk::Format("Memory_GetStats: unknown memory category %d", c)));
  }
  const int index = c == MNT_MEMORY_ALL ? MNT_MEMORY_CATEGORY_COUNT : c;
  args->current_bytes = active_->current_[index];
  args->peak_bytes = active_->peak_[index];
  return nullptr;
}

MNT_Error* CountingBackend::ResetPeak(MNT_Memory_ResetPeak_Args*) {
  for (int i = 0; i <= MNT_MEMORY_CATEGORY_COUNT; ++i) active_->peak_[i] = active_->current_[i];
  return nullptr;
}

// No op runs on memory that is not there (values, not sizes, again).
MNT_Error* CountingBackend::Run(MNT_Backend_Run_Args*) {
  ++active_->ops_run_;
  return nullptr;
}

void CountingBackend::ErrorDestroy(MNT_Error* error) {
  if (active_->own_errors_.erase(error) > 0) {
    delete error;
    return;
  }
  active_->real_->Error_Destroy(error);
}

const char* CountingBackend::ErrorMessage(const MNT_Error* error) {
  if (active_->own_errors_.count(error) > 0) return error->message.c_str();
  return active_->real_->Error_Message(error);
}

MNT_ErrorCode CountingBackend::ErrorGetCode(const MNT_Error* error) {
  if (active_->own_errors_.count(error) > 0) return error->code;
  return active_->real_->Error_GetCode(error);
}

}  // namespace mnt::memory
