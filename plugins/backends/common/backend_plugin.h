// The backend plugin written once, in the manner of PJRT's C API wrapper: the
// MNT_Backend_Api entry points (args and struct-size checks, handle checks,
// the exception guard), events, memory statistics and op dispatch, around a
// C++ class B that supplies only what differs from one device to the next.
// A backend's plugin.cc is its class and one line of registration:
//
//   const MNT_Plugin_Api* CpuBackendPluginApi() {
//     return backend::BackendPlugin<CpuBackend>::Api("CPU reference backend");
//   }
//
// What B supplies (plugins/backends/cpu/backend.h is the smallest example):
//   static constexpr const char* kName;        // "cpu": plugin name, messages
//   static constexpr bool Supports(MNT_Op op);  // see op_dispatch.h
//   using Event = ...;                          // what one MNT_Event holds
//   static sdk::Status Create(const char* options, int32_t device_ordinal,
//                             std::unique_ptr<B>* out);
//   sdk::Status Activate(const char* call);     // before every call on it
//   DeviceInfo Info() const;
//   Allocator& allocator();                     // common/allocator.h
//   // After the common checks: kind known, bytes > 0, device ranges inside
//   // allocations. Device-to-host and host-to-device copies have finished
//   // (or read their source) on return.
//   sdk::Status Copy(void* dst, const void* src, size_t bytes, MNT_CopyKind);
//   sdk::Status Synchronize();
//   sdk::Status CreateEvent(Event*);
//   sdk::Status RecordEvent(Event*);
//   sdk::Status ElapsedMilliseconds(const Event& start, const Event& end,
//                                   double* ms);   // both recorded
//   sdk::Status DestroyEvent(Event*);
//   MNT_DECLARE_BACKEND_KERNELS()               // calls.h: one method per op
// and, to capture marked steps (ABI 1.7), the hooks in common/step_session.h;
// without them Backend_StepBegin/StepEnd are accepted and do nothing. A
// backend with slow paths to report (ABI 1.8, Backend_GetInfo's slow_paths)
// also supplies
//   std::string SlowPathReport() const;   // "<calls> x <kind>: <shape>\n"...
// A backend whose instances differ in what they run (an op that needs
// hardware one device has and another lacks) also supplies
//   bool DeviceSupports(MNT_Op op) const;  // for ops Supports() allows
// which Backend_GetOpSupport asks after Supports(); the op's kernel method
// still refuses it in one line when called anyway.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_BACKEND_PLUGIN_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_BACKEND_PLUGIN_H_

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <type_traits>

#include "plugins/abi/mantissa.h"
#include "plugins/backends/common/allocator.h"
#include "plugins/backends/common/backend_capabilities.h"
#include "plugins/backends/common/op_dispatch.h"
#include "plugins/backends/common/step_session.h"
#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"
#include "plugins/sdk/status.h"

namespace mnt::backend {

template <typename B, typename = void>
struct HasSlowPathReport : std::false_type {};
template <typename B>
struct HasSlowPathReport<B, std::void_t<decltype(&B::SlowPathReport)>> : std::true_type {};
template <typename B, typename = void>
struct HasDeviceSupports : std::false_type {};
template <typename B>
struct HasDeviceSupports<B, std::void_t<decltype(&B::DeviceSupports)>> : std::true_type {};

// Backend_GetInfo's answer; `name` lives as long as the backend instance.
struct DeviceInfo {
  const char* name = "";
  int64_t total_memory_bytes = 0;  // 0 if unknown
  bool host_addressable = false;
};

template <typename B>
class BackendPlugin {
 public:
  // The plugin descriptor (static storage); `description` is a literal. Its
  // extension chain is the capabilities extension (kBackendCapabilities,
  // what the common checks and every backend's kernels take), then
  // `more_extensions` (static storage, e.g. a collectives extension; NULL
  // for none). The first call's arguments make the descriptor.
  static const MNT_Plugin_Api* Api(const char* description,
                                   MNT_Extension_Base* more_extensions = nullptr) {
    static const MNT_Backend_Api backend_api = MakeBackendApi();
    static MNT_Capabilities_Extension capabilities =
        sdk::MakeCapabilitiesExtension(kBackendCapabilities, more_extensions);
    static const MNT_Plugin_Api api =
        sdk::MakePluginApi(MNT_PLUGIN_KIND_BACKEND, B::kName, description, &backend_api,
                           nullptr, nullptr, nullptr, &capabilities.header.base);
    return &api;
  }

 private:
  using Status = sdk::Status;

  struct Event {
    typename B::Event native{};
    bool recorded = false;
  };

  // What an MNT_Backend handle points to. The magic catches handles of other
  // plugin kinds and destroyed instances; `type` tells apart backends built
  // from this template and linked into one binary.
  struct Instance {
    static constexpr uint64_t kMagic = 0x6d6e745f626b6e64ull;  // "mnt_bknd"
    uint64_t magic = kMagic;
    const void* type = &kType;
    std::unique_ptr<B> device;
    std::set<Event*> events;
    StepSession<B> step;  // the open step's deferred ops, the captured one
    std::string slow_path_report;  // what Backend_GetInfo's slow_paths points at

    ~Instance() {
      for (Event* e : events) {
        (void)device->DestroyEvent(&e->native);  // nobody left to tell
        delete e;
      }
      device.reset();  // frees what is still allocated
      magic = 0;
      type = nullptr;
    }
  };
  static inline const char kType = 0;

  static MNT_Backend* ToHandle(Instance* in) { return reinterpret_cast<MNT_Backend*>(in); }
  static MNT_Event* ToHandle(Event* e) { return reinterpret_cast<MNT_Event*>(e); }

  // The live instance behind `handle`, made current for this call.
  static Status Resolve(const char* call, MNT_Backend* handle, Instance** out) {
    Instance* in = reinterpret_cast<Instance*>(handle);
    if (in == nullptr) return sdk::InvalidArgument(std::string(call) + ": backend is NULL");
    if (in->magic != Instance::kMagic || in->type != &kType) {
      return sdk::InvalidArgument(sdk::Format(
          "%s: backend is not a live %s backend instance", call, B::kName));
    }
    MNT_RETURN_IF_ERROR(in->device->Activate(call));
    *out = in;
    return Status::Ok();
  }

  static Status GetEvent(const Instance& in, const char* call, const char* which,
                         MNT_Event* handle, Event** out) {
    Event* e = reinterpret_cast<Event*>(handle);
    if (e == nullptr || in.events.count(e) == 0) {
      return sdk::InvalidArgument(sdk::Format(
          "%s: %s event is %s", call, which,
          e == nullptr ? "NULL" : "not a live event of this backend"));
    }
    *out = e;
    return Status::Ok();
  }

  static MNT_Error* BackendCreate(MNT_Backend_Create_Args* args) {
    return sdk::Guard("Backend_Create", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Backend_Create_Args, args);
      auto in = std::make_unique<Instance>();
      MNT_RETURN_IF_ERROR(B::Create(args->options, args->device_ordinal, &in->device));
      args->backend = ToHandle(in.release());
      return Status::Ok();
    });
  }

  static MNT_Error* BackendDestroy(MNT_Backend_Destroy_Args* args) {
    return sdk::Guard("Backend_Destroy", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Backend_Destroy_Args, args);
      if (args->backend == nullptr) return Status::Ok();
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Backend_Destroy", args->backend, &in));
      delete in;
      return Status::Ok();
    });
  }

  static MNT_Error* BackendGetInfo(MNT_Backend_GetInfo_Args* args) {
    return sdk::Guard("Backend_GetInfo", [&]() -> Status {
      // 1.8 appended slow_paths: a 1.0-1.7 caller's shorter struct is fine.
      if (args == nullptr) return sdk::InvalidArgument("MNT_Backend_GetInfo_Args: args is NULL");
      MNT_RETURN_IF_ERROR(sdk::CheckStructSize("MNT_Backend_GetInfo_Args",
                                               MNT_Backend_GetInfo_Args_STRUCT_SIZE_1_7,
                                               args->struct_size));
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Backend_GetInfo", args->backend, &in));
      const DeviceInfo info = in->device->Info();
      args->device_name = info.name;
      args->total_memory_bytes = info.total_memory_bytes;
      args->host_addressable = info.host_addressable ? 1 : 0;
      if (MNT_HAS_FIELD(args, MNT_Backend_GetInfo_Args, slow_paths)) {
        // Kept in the instance: valid until its next call.
        if constexpr (HasSlowPathReport<B>::value) {
          in->slow_path_report = in->device->SlowPathReport();
        }
        args->slow_paths = in->slow_path_report.c_str();
      }
      return Status::Ok();
    });
  }

  static MNT_Error* MemoryAllocate(MNT_Memory_Allocate_Args* args) {
    return sdk::Guard("Memory_Allocate", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Memory_Allocate_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Memory_Allocate", args->backend, &in));
      return in->device->allocator().Allocate(args->size_bytes,
                                              sdk::RawEnum(args->category), &args->data);
    });
  }

  static MNT_Error* MemoryFree(MNT_Memory_Free_Args* args) {
    return sdk::Guard("Memory_Free", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Memory_Free_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Memory_Free", args->backend, &in));
      MNT_RETURN_IF_ERROR(in->step.Flush(*in->device, "Memory_Free"));
      return in->device->allocator().Free(args->data);
    });
  }

  static Status Outside(const char* which, const void* p, size_t n) {
    return sdk::InvalidArgument(sdk::Format(
        "Memory_Copy: %s %p + %zu bytes is not inside memory allocated by this "
        "backend", which, p, n));
  }

  static MNT_Error* MemoryCopy(MNT_Memory_Copy_Args* args) {
    return sdk::Guard("Memory_Copy", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Memory_Copy_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Memory_Copy", args->backend, &in));
      bool dst_device, src_device;
      // The caller's int32, not yet an MNT_CopyKind (abi_enum.h).
      switch (sdk::RawEnum(args->kind)) {
        case MNT_COPY_HOST_TO_DEVICE: dst_device = true; src_device = false; break;
        case MNT_COPY_DEVICE_TO_HOST: dst_device = false; src_device = true; break;
        case MNT_COPY_DEVICE_TO_DEVICE: dst_device = true; src_device = true; break;
        default:
          return sdk::InvalidArgument(sdk::Format("Memory_Copy: unknown copy kind %d",
                                                  sdk::RawEnum(args->kind)));
      }
      const size_t n = args->size_bytes;
      if (n == 0) return Status::Ok();
      if (args->dst == nullptr || args->src == nullptr) {
        return sdk::InvalidArgument("Memory_Copy: dst or src is NULL");
      }
      const Allocator& memory = in->device->allocator();
      if (dst_device && !memory.Contains(args->dst, n)) return Outside("dst", args->dst, n);
      if (src_device && !memory.Contains(args->src, n)) return Outside("src", args->src, n);
      // Device to device is stream work a step may hold; a copy to or from
      // the host first issues what the open step deferred.
      if (dst_device && src_device) {
        return in->step.DeviceCopy(*in->device, args->dst, args->src, n);
      }
      MNT_RETURN_IF_ERROR(in->step.Flush(
          *in->device, dst_device ? "Memory_Copy host to device" : "Memory_Copy device to host"));
      return in->device->Copy(args->dst, args->src, n, args->kind);
    });
  }

  static MNT_Error* MemoryGetStats(MNT_Memory_GetStats_Args* args) {
    return sdk::Guard("Memory_GetStats", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Memory_GetStats_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Memory_GetStats", args->backend, &in));
      return in->device->allocator().GetStats(sdk::RawEnum(args->category),
                                              &args->current_bytes, &args->peak_bytes);
    });
  }

  static MNT_Error* MemoryResetPeak(MNT_Memory_ResetPeak_Args* args) {
    return sdk::Guard("Memory_ResetPeak", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Memory_ResetPeak_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Memory_ResetPeak", args->backend, &in));
      in->device->allocator().ResetPeak();
      return Status::Ok();
    });
  }

  static MNT_Error* BackendSynchronize(MNT_Backend_Synchronize_Args* args) {
    return sdk::Guard("Backend_Synchronize", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Backend_Synchronize_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Backend_Synchronize", args->backend, &in));
      MNT_RETURN_IF_ERROR(in->step.Flush(*in->device, "Backend_Synchronize"));
      return in->device->Synchronize();
    });
  }

  static MNT_Error* BackendGetOpSupport(MNT_Backend_GetOpSupport_Args* args) {
    return sdk::Guard("Backend_GetOpSupport", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Backend_GetOpSupport_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Backend_GetOpSupport", args->backend, &in));
      const int32_t raw_op = sdk::RawEnum(args->op);
      bool supported = SupportsOp<B>(raw_op);
      if constexpr (HasDeviceSupports<B>::value) {
        // SupportsOp only says yes to known ops, so the cast is safe.
        if (supported) supported = in->device->DeviceSupports(static_cast<MNT_Op>(raw_op));
      }
      args->supported = supported ? 1 : 0;
      return Status::Ok();
    });
  }

  static MNT_Error* BackendRun(MNT_Backend_Run_Args* args) {
    return sdk::Guard("Backend_Run", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Backend_Run_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Backend_Run", args->backend, &in));
      return in->step.Run(*in->device, *args);
    });
  }

  static MNT_Error* EventCreate(MNT_Event_Create_Args* args) {
    return sdk::Guard("Event_Create", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Event_Create_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Event_Create", args->backend, &in));
      auto e = std::make_unique<Event>();
      MNT_RETURN_IF_ERROR(in->device->CreateEvent(&e->native));
      in->events.insert(e.get());
      args->event = ToHandle(e.release());
      return Status::Ok();
    });
  }

  static MNT_Error* EventRecord(MNT_Event_Record_Args* args) {
    return sdk::Guard("Event_Record", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Event_Record_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Event_Record", args->backend, &in));
      MNT_RETURN_IF_ERROR(in->step.Flush(*in->device, "Event_Record"));
      Event* e = nullptr;
      MNT_RETURN_IF_ERROR(GetEvent(*in, "Event_Record", "the", args->event, &e));
      MNT_RETURN_IF_ERROR(in->device->RecordEvent(&e->native));
      e->recorded = true;
      return Status::Ok();
    });
  }

  static MNT_Error* EventElapsedTime(MNT_Event_ElapsedTime_Args* args) {
    return sdk::Guard("Event_ElapsedTime", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Event_ElapsedTime_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Event_ElapsedTime", args->backend, &in));
      MNT_RETURN_IF_ERROR(in->step.Flush(*in->device, "Event_ElapsedTime"));
      Event *start = nullptr, *end = nullptr;
      MNT_RETURN_IF_ERROR(GetEvent(*in, "Event_ElapsedTime", "start", args->start, &start));
      MNT_RETURN_IF_ERROR(GetEvent(*in, "Event_ElapsedTime", "end", args->end, &end));
      if (!start->recorded || !end->recorded) {
        return sdk::FailedPrecondition(
            sdk::Format("Event_ElapsedTime: the %s event was never recorded",
                        start->recorded ? "end" : "start"));
      }
      return in->device->ElapsedMilliseconds(start->native, end->native,
                                             &args->milliseconds);
    });
  }

  static MNT_Error* EventDestroy(MNT_Event_Destroy_Args* args) {
    return sdk::Guard("Event_Destroy", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Event_Destroy_Args, args);
      if (args->event == nullptr) return Status::Ok();
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Event_Destroy", args->backend, &in));
      Event* e = nullptr;
      MNT_RETURN_IF_ERROR(GetEvent(*in, "Event_Destroy", "the", args->event, &e));
      in->events.erase(e);
      const Status destroyed = in->device->DestroyEvent(&e->native);
      delete e;
      return destroyed;
    });
  }

  static MNT_Error* StepBegin(MNT_Backend_StepBegin_Args* args) {
    return sdk::Guard("Backend_StepBegin", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Backend_StepBegin_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Backend_StepBegin", args->backend, &in));
      return in->step.Begin(*in->device);
    });
  }

  static MNT_Error* StepEnd(MNT_Backend_StepEnd_Args* args) {
    return sdk::Guard("Backend_StepEnd", [&]() -> Status {
      MNT_CHECK_ARGS(MNT_Backend_StepEnd_Args, args);
      Instance* in;
      MNT_RETURN_IF_ERROR(Resolve("Backend_StepEnd", args->backend, &in));
      int32_t replayed = 0;
      const Status s = in->step.End(*in->device, &replayed);
      args->replayed = replayed;
      return s;
    });
  }

 public:
  // The step counts of a live instance of this backend (tests), or NULL.
  static const StepCounts* StepCountsOf(MNT_Backend* handle) {
    Instance* in = reinterpret_cast<Instance*>(handle);
    if (in == nullptr || in->magic != Instance::kMagic || in->type != &kType) return nullptr;
    return &in->step.counts();
  }

  // For the backend's own extensions (its collectives, on its stream): the
  // live instance behind `handle`, made current (B::Activate), after the ops
  // an open step deferred were issued, so that work the extension puts on
  // the stream follows them (the rest of such a step runs as issued, not
  // captured). Errors name `call`.
  static Status ResolveForExtension(const char* call, MNT_Backend* handle, B** out) {
    Instance* in = nullptr;
    MNT_RETURN_IF_ERROR(Resolve(call, handle, &in));
    MNT_RETURN_IF_ERROR(in->step.Flush(
        *in->device,
        sdk::Format("%s (the extension's work is no op a step records)", call).c_str()));
    *out = in->device.get();
    return Status::Ok();
  }

 private:
  static MNT_Backend_Api MakeBackendApi() {
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
    api.Backend_StepBegin = &StepBegin;
    api.Backend_StepEnd = &StepEnd;
    return api;
  }
};

}  // namespace mnt::backend

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_BACKEND_PLUGIN_H_
