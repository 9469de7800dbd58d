// The MNT_Backend_Api table of the CPU backend and its plugin descriptor.
#include <cblas.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "plugins/backends/cpu/backend_state.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/backends/cpu/run.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/options.h"

// The backend links the generic libblas.so.3: OpenBLAS through Debian's
// alternatives, Debian's reference BLAS in the GPU device bundle. OpenBLAS's
// own calls are weak so the plugin also loads against a BLAS without them.
extern "C" {
void openblas_set_num_threads(int) __attribute__((weak));
int openblas_get_num_threads(void) __attribute__((weak));
}

namespace mnt::cpu {
namespace {

using sdk::Status;

// Resolves the backend handle of an Args struct (validated magic).
Status GetBackend(const char* call, MNT_Backend* handle, CpuBackend** out) {
  CpuBackend* b = FromHandle(handle);
  if (b == nullptr) return sdk::InvalidArgument(std::string(call) + ": backend is NULL");
  if (b->magic != CpuBackend::kMagic) {
    return sdk::InvalidArgument(std::string(call) +
                                ": backend is not a live cpu backend instance");
  }
  *out = b;
  return Status::Ok();
}

bool IsOpenBlas() { return openblas_get_num_threads != nullptr; }

std::string TrimmedOpenBlasVersion() {
  if (!IsOpenBlas()) return "reference BLAS";
  std::string v = OPENBLAS_VERSION;  // " OpenBLAS 0.3.21 "
  const size_t b = v.find_first_not_of(' ');
  const size_t e = v.find_last_not_of(' ');
  return b == std::string::npos ? "OpenBLAS" : v.substr(b, e - b + 1);
}

MNT_Error* BackendCreate(MNT_Backend_Create_Args* args) {
  return sdk::Guard("Backend_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Create_Args, args);
    sdk::Options options;
    MNT_RETURN_IF_ERROR(
        sdk::Options::Parse(args->options, "cpu backend options", &options));
    MNT_RETURN_IF_ERROR(options.CheckKnown({"threads"}));
    long long threads = 0;
    MNT_RETURN_IF_ERROR(options.GetInt("threads", &threads));
    if (options.Has("threads") && (threads < 1 || threads > 1024)) {
      return sdk::InvalidArgument(sdk::Format(
          "cpu backend options: threads=%lld is outside [1, 1024]", threads));
    }
    if (args->device_ordinal != 0) {
      return sdk::InvalidArgument(sdk::Format(
          "Backend_Create: the cpu backend has one device (ordinal 0), got %d",
          args->device_ordinal));
    }
    if (threads > 0 && IsOpenBlas()) openblas_set_num_threads(static_cast<int>(threads));
    auto backend = std::make_unique<CpuBackend>();
    backend->device_name = sdk::Format("cpu (%s, %d threads)",
                                       TrimmedOpenBlasVersion().c_str(),
                                       IsOpenBlas() ? openblas_get_num_threads() : 1);
    args->backend = ToHandle(backend.release());
    return Status::Ok();
  });
}

MNT_Error* BackendDestroy(MNT_Backend_Destroy_Args* args) {
  return sdk::Guard("Backend_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Destroy_Args, args);
    if (args->backend == nullptr) return Status::Ok();
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_Destroy", args->backend, &b));
    delete b;  // frees remaining allocations and events
    return Status::Ok();
  });
}

MNT_Error* BackendGetInfo(MNT_Backend_GetInfo_Args* args) {
  return sdk::Guard("Backend_GetInfo", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_GetInfo_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_GetInfo", args->backend, &b));
    args->device_name = b->device_name.c_str();
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    args->total_memory_bytes =
        pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
    args->host_addressable = 1;
    return Status::Ok();
  });
}

MNT_Error* MemoryAllocate(MNT_Memory_Allocate_Args* args) {
  return sdk::Guard("Memory_Allocate", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_Allocate_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_Allocate", args->backend, &b));
    return b->allocator.Allocate(args->size_bytes, args->category, &args->data);
  });
}

MNT_Error* MemoryFree(MNT_Memory_Free_Args* args) {
  return sdk::Guard("Memory_Free", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_Free_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_Free", args->backend, &b));
    return b->allocator.Free(args->data);
  });
}

MNT_Error* MemoryCopy(MNT_Memory_Copy_Args* args) {
  return sdk::Guard("Memory_Copy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_Copy_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_Copy", args->backend, &b));
    bool dst_device, src_device;
    switch (args->kind) {
      case MNT_COPY_HOST_TO_DEVICE: dst_device = true; src_device = false; break;
      case MNT_COPY_DEVICE_TO_HOST: dst_device = false; src_device = true; break;
      case MNT_COPY_DEVICE_TO_DEVICE: dst_device = true; src_device = true; break;
      default:
        return sdk::InvalidArgument(sdk::Format("Memory_Copy: unknown copy kind %d",
                                                static_cast<int>(args->kind)));
    }
    const size_t n = args->size_bytes;
    if (n == 0) return Status::Ok();
    if (args->dst == nullptr || args->src == nullptr) {
      return sdk::InvalidArgument("Memory_Copy: dst or src is NULL");
    }
    if (dst_device && !b->allocator.Contains(args->dst, n)) {
      return sdk::InvalidArgument(sdk::Format(
          "Memory_Copy: dst %p + %zu bytes is not inside memory allocated by "
          "this backend", args->dst, n));
    }
    if (src_device && !b->allocator.Contains(args->src, n)) {
      return sdk::InvalidArgument(sdk::Format(
          "Memory_Copy: src %p + %zu bytes is not inside memory allocated by "
          "this backend", args->src, n));
    }
    std::memmove(args->dst, args->src, n);
    return Status::Ok();
  });
}

MNT_Error* MemoryGetStats(MNT_Memory_GetStats_Args* args) {
  return sdk::Guard("Memory_GetStats", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_GetStats_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_GetStats", args->backend, &b));
    return b->allocator.GetStats(args->category, &args->current_bytes,
                                 &args->peak_bytes);
  });
}

MNT_Error* MemoryResetPeak(MNT_Memory_ResetPeak_Args* args) {
  return sdk::Guard("Memory_ResetPeak", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_ResetPeak_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_ResetPeak", args->backend, &b));
    b->allocator.ResetPeak();
    return Status::Ok();
  });
}

MNT_Error* BackendSynchronize(MNT_Backend_Synchronize_Args* args) {
  return sdk::Guard("Backend_Synchronize", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Synchronize_Args, args);
    CpuBackend* b;
    return GetBackend("Backend_Synchronize", args->backend, &b);  // work is synchronous
  });
}

MNT_Error* BackendGetOpSupport(MNT_Backend_GetOpSupport_Args* args) {
  return sdk::Guard("Backend_GetOpSupport", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_GetOpSupport_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_GetOpSupport", args->backend, &b));
    args->supported = IsSupportedOp(args->op) ? 1 : 0;
    return Status::Ok();
  });
}

MNT_Error* BackendRun(MNT_Backend_Run_Args* args) {
  return sdk::Guard("Backend_Run", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Run_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_Run", args->backend, &b));
    return RunOp(*b, *args);
  });
}

// Events: work is synchronous, so recording takes the steady-clock time.
Status GetEvent(const CpuBackend& b, const char* call, const char* which,
                MNT_Event* handle, CpuEvent** out) {
  CpuEvent* e = FromHandle(handle);
  if (e == nullptr || b.events.count(e) == 0) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s event is %s", call, which,
        e == nullptr ? "NULL" : "not a live event of this backend"));
  }
  *out = e;
  return Status::Ok();
}

MNT_Error* EventCreate(MNT_Event_Create_Args* args) {
  return sdk::Guard("Event_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Event_Create_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_Create", args->backend, &b));
    auto e = std::make_unique<CpuEvent>();
    b->events.insert(e.get());
    args->event = ToHandle(e.release());
    return Status::Ok();
  });
}

MNT_Error* EventRecord(MNT_Event_Record_Args* args) {
  return sdk::Guard("Event_Record", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Event_Record_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_Record", args->backend, &b));
    CpuEvent* e;
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_Record", "the", args->event, &e));
    e->recorded = true;
    e->time = std::chrono::steady_clock::now();
    return Status::Ok();
  });
}

MNT_Error* EventElapsedTime(MNT_Event_ElapsedTime_Args* args) {
  return sdk::Guard("Event_ElapsedTime", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Event_ElapsedTime_Args, args);
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_ElapsedTime", args->backend, &b));
    CpuEvent *start, *end;
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_ElapsedTime", "start", args->start, &start));
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_ElapsedTime", "end", args->end, &end));
    if (!start->recorded || !end->recorded) {
      return sdk::FailedPrecondition(sdk::Format(
          "Event_ElapsedTime: the %s event was never recorded",
          start->recorded ? "end" : "start"));
    }
    args->milliseconds =
        std::chrono::duration<double, std::milli>(end->time - start->time).count();
    return Status::Ok();
  });
}

MNT_Error* EventDestroy(MNT_Event_Destroy_Args* args) {
  return sdk::Guard("Event_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Event_Destroy_Args, args);
    if (args->event == nullptr) return Status::Ok();
    CpuBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_Destroy", args->backend, &b));
    CpuEvent* e;
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_Destroy", "the", args->event, &e));
    b->events.erase(e);
    delete e;
    return Status::Ok();
  });
}

MNT_Backend_Api MakeBackendApi() {
  MNT_Backend_Api api{};
  api.struct_size = MNT_Backend_Api_STRUCT_SIZE;
  api.extension_start = nullptr;
  api.Backend_Create = &BackendCreate;
  api.Backend_Destroy = &BackendDestroy;
  api.Backend_GetInfo = &BackendGetInfo;
  api.Memory_Allocate = &MemoryAllocate;
  api.Memory_Free = &MemoryFree;
  api.Memory_Copy = &MemoryCopy;
  api.Memory_GetStats = &MemoryGetStats;
  api.Memory_ResetPeak = &MemoryResetPeak;
  api.Backend_Synchronize = &BackendSynchronize;
  api.Backend_GetOpSupport = &BackendGetOpSupport;
  api.Backend_Run = &BackendRun;
  api.Event_Create = &EventCreate;
  api.Event_Record = &EventRecord;
  api.Event_ElapsedTime = &EventElapsedTime;
  api.Event_Destroy = &EventDestroy;
  return api;
}

}  // namespace

const MNT_Plugin_Api* CpuBackendPluginApi() {
  static const MNT_Backend_Api backend_api = MakeBackendApi();
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_BACKEND, "cpu",
      "CPU reference backend (OpenBLAS GEMM, fp32 compute, f16/bf16 storage)",
      &backend_api, nullptr, nullptr, nullptr);
  return &api;
}

}  // namespace mnt::cpu
