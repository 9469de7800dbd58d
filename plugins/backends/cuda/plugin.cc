// The MNT_Backend_Api table of the cuda backend and its plugin descriptor.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "plugins/backends/cuda/backend_state.h"
#include "plugins/backends/cuda/cuda_backend.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/kernels.h"
#include "plugins/backends/cuda/run.h"
#include "plugins/sdk/args.h"
#include "plugins/sdk/export.h"

namespace mnt::cuda {

using sdk::Status;

CudaBackend::~CudaBackend() {
  if (stream != nullptr) cudaStreamSynchronize(stream);
  for (CudaEvent* e : events) {
    if (e->event != nullptr) cudaEventDestroy(e->event);
    delete e;
  }
  allocator.ReleaseAll();
  sdpa_plans.clear();  // before the cuDNN handle they were built with
  if (error_word != nullptr) cudaFree(error_word);
  if (cudnn != nullptr) cudnnDestroy(cudnn);
  if (lt != nullptr) cublasLtDestroy(lt);
  if (stream != nullptr) cudaStreamDestroy(stream);
  magic = 0;
}

Status CheckDeviceErrors(CudaBackend& b) {
  unsigned word = 0;
  MNT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&word, b.error_word, sizeof(word), cudaMemcpyDeviceToHost, b.stream),
      "cudaMemcpyAsync(error word)");
  MNT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(b.stream), "cudaStreamSynchronize");
  if (word == 0) return Status::Ok();
  MNT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(b.error_word, 0, sizeof(unsigned), b.stream),
                           "cudaMemsetAsync(error word)");
  if (word & kErrorEmbeddingId) {
    return sdk::InvalidArgument(
        "EMBEDDING_FORWARD/BACKWARD: an id was outside [0, V) (detected on the "
        "device; the output rows of bad ids were written as 0 / not accumulated)");
  }
  return sdk::InvalidArgument(
      "CROSS_ENTROPY: a target was >= num_classes (detected on the device; its "
      "loss was written as NaN)");
}

namespace {

Status GetBackend(const char* call, MNT_Backend* handle, CudaBackend** out) {
  CudaBackend* b = FromHandle(handle);
  if (b == nullptr) return sdk::InvalidArgument(std::string(call) + ": backend is NULL");
  if (b->magic != CudaBackend::kMagic) {
    return sdk::InvalidArgument(std::string(call) +
                                ": backend is not a live cuda backend instance");
  }
  // The calling thread may have another device current.
  MNT_CUDA_RETURN_IF_ERROR(cudaSetDevice(b->device),
                           std::string(call) + ": cudaSetDevice");
  *out = b;
  return Status::Ok();
}

MNT_Error* BackendCreate(MNT_Backend_Create_Args* args) {
  return sdk::Guard("Backend_Create", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Create_Args, args);
    CudaBackendOptions options;
    MNT_RETURN_IF_ERROR(ParseCudaBackendOptions(args->options, &options));
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      (void)cudaGetLastError();
      return Status(MNT_ERROR_UNAVAILABLE,
                    sdk::Format("cuda backend: no CUDA device available "
                                "(cudaGetDeviceCount: %s)",
                                err != cudaSuccess ? cudaGetErrorString(err)
                                                   : "0 devices"));
    }
    if (args->device_ordinal < 0 || args->device_ordinal >= count) {
      return sdk::InvalidArgument(sdk::Format(
          "Backend_Create: device_ordinal %d is outside [0, %d) (CUDA devices)",
          args->device_ordinal, count));
    }
    auto b = std::make_unique<CudaBackend>();
    b->device = args->device_ordinal;
    b->options = options;
    MNT_CUDA_RETURN_IF_ERROR(cudaSetDevice(b->device), "Backend_Create: cudaSetDevice");
    cudaDeviceProp prop{};
    MNT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, b->device),
                             "Backend_Create: cudaGetDeviceProperties");
    b->total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    b->device_name = sdk::Format("cuda:%d (%s, sm_%d%d, %.0f GiB)", b->device, prop.name,
                                 prop.major, prop.minor,
                                 prop.totalGlobalMem / (1024.0 * 1024 * 1024));
    MNT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking),
                             "Backend_Create: cudaStreamCreateWithFlags");
    MNT_CUBLAS_RETURN_IF_ERROR(cublasLtCreate(&b->lt), "Backend_Create: cublasLtCreate");
    void* word = nullptr;
    MNT_CUDA_RETURN_IF_ERROR(cudaMalloc(&word, sizeof(unsigned)),
                             "Backend_Create: cudaMalloc(error word)");
    b->error_word = static_cast<unsigned*>(word);
    MNT_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(word, 0, sizeof(unsigned), b->stream),
                             "Backend_Create: cudaMemsetAsync");
    MNT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(b->stream),
                             "Backend_Create: cudaStreamSynchronize");
    args->backend = ToHandle(b.release());
    return Status::Ok();
  });
}

MNT_Error* BackendDestroy(MNT_Backend_Destroy_Args* args) {
  return sdk::Guard("Backend_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Destroy_Args, args);
    if (args->backend == nullptr) return Status::Ok();
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_Destroy", args->backend, &b));
    delete b;
    return Status::Ok();
  });
}

MNT_Error* BackendGetInfo(MNT_Backend_GetInfo_Args* args) {
  return sdk::Guard("Backend_GetInfo", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_GetInfo_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_GetInfo", args->backend, &b));
    args->device_name = b->device_name.c_str();
    args->total_memory_bytes = b->total_memory_bytes;
    args->host_addressable = 0;
    return Status::Ok();
  });
}

MNT_Error* MemoryAllocate(MNT_Memory_Allocate_Args* args) {
  return sdk::Guard("Memory_Allocate", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_Allocate_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_Allocate", args->backend, &b));
    return b->allocator.Allocate(args->size_bytes, args->category, &args->data);
  });
}

MNT_Error* MemoryFree(MNT_Memory_Free_Args* args) {
  return sdk::Guard("Memory_Free", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_Free_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_Free", args->backend, &b));
    return b->allocator.Free(args->data);
  });
}

MNT_Error* MemoryCopy(MNT_Memory_Copy_Args* args) {
  return sdk::Guard("Memory_Copy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_Copy_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_Copy", args->backend, &b));
    bool dst_device, src_device;
    cudaMemcpyKind kind;
    switch (args->kind) {
      case MNT_COPY_HOST_TO_DEVICE:
        dst_device = true; src_device = false; kind = cudaMemcpyHostToDevice; break;
      case MNT_COPY_DEVICE_TO_HOST:
        dst_device = false; src_device = true; kind = cudaMemcpyDeviceToHost; break;
      case MNT_COPY_DEVICE_TO_DEVICE:
        dst_device = true; src_device = true; kind = cudaMemcpyDeviceToDevice; break;
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
    MNT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(args->dst, args->src, n, kind, b->stream),
                             sdk::Format("Memory_Copy: cudaMemcpyAsync(%zu bytes)", n));
    if (kind == cudaMemcpyDeviceToDevice) return Status::Ok();
    // D2H: the data must be there on return; H2D: the host buffer must be
    // reusable on return (pinned sources would otherwise still be read).
    return CheckDeviceErrors(*b);
  });
}

MNT_Error* MemoryGetStats(MNT_Memory_GetStats_Args* args) {
  return sdk::Guard("Memory_GetStats", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_GetStats_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_GetStats", args->backend, &b));
    return b->allocator.GetStats(args->category, &args->current_bytes,
                                 &args->peak_bytes);
  });
}

MNT_Error* MemoryResetPeak(MNT_Memory_ResetPeak_Args* args) {
  return sdk::Guard("Memory_ResetPeak", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Memory_ResetPeak_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Memory_ResetPeak", args->backend, &b));
    b->allocator.ResetPeak();
    return Status::Ok();
  });
}

MNT_Error* BackendSynchronize(MNT_Backend_Synchronize_Args* args) {
  return sdk::Guard("Backend_Synchronize", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Synchronize_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_Synchronize", args->backend, &b));
    MNT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(b->stream),
                             "Backend_Synchronize: cudaStreamSynchronize");
    return CheckDeviceErrors(*b);
  });
}

MNT_Error* BackendGetOpSupport(MNT_Backend_GetOpSupport_Args* args) {
  return sdk::Guard("Backend_GetOpSupport", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_GetOpSupport_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_GetOpSupport", args->backend, &b));
    args->supported = IsSupportedOp(args->op) ? 1 : 0;
    return Status::Ok();
  });
}

MNT_Error* BackendRun(MNT_Backend_Run_Args* args) {
  return sdk::Guard("Backend_Run", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Backend_Run_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Backend_Run", args->backend, &b));
    return RunOp(*b, *args);
  });
}

Status GetEvent(const CudaBackend& b, const char* call, const char* which,
                MNT_Event* handle, CudaEvent** out) {
  CudaEvent* e = FromHandle(handle);
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
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_Create", args->backend, &b));
    auto e = std::make_unique<CudaEvent>();
    MNT_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e->event), "Event_Create: cudaEventCreate");
    b->events.insert(e.get());
    args->event = ToHandle(e.release());
    return Status::Ok();
  });
}

MNT_Error* EventRecord(MNT_Event_Record_Args* args) {
  return sdk::Guard("Event_Record", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Event_Record_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_Record", args->backend, &b));
    CudaEvent* e;
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_Record", "the", args->event, &e));
    MNT_CUDA_RETURN_IF_ERROR(cudaEventRecord(e->event, b->stream),
                             "Event_Record: cudaEventRecord");
    e->recorded = true;
    return Status::Ok();
  });
}

MNT_Error* EventElapsedTime(MNT_Event_ElapsedTime_Args* args) {
  return sdk::Guard("Event_ElapsedTime", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Event_ElapsedTime_Args, args);
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_ElapsedTime", args->backend, &b));
    CudaEvent *start, *end;
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_ElapsedTime", "start", args->start, &start));
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_ElapsedTime", "end", args->end, &end));
    if (!start->recorded || !end->recorded) {
      return sdk::FailedPrecondition(sdk::Format(
          "Event_ElapsedTime: the %s event was never recorded",
          start->recorded ? "end" : "start"));
    }
    MNT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(end->event),
                             "Event_ElapsedTime: cudaEventSynchronize");
    float ms = 0.0f;
    MNT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start->event, end->event),
                             "Event_ElapsedTime: cudaEventElapsedTime");
    args->milliseconds = ms;
    return Status::Ok();
  });
}

MNT_Error* EventDestroy(MNT_Event_Destroy_Args* args) {
  return sdk::Guard("Event_Destroy", [&]() -> Status {
    MNT_CHECK_ARGS(MNT_Event_Destroy_Args, args);
    if (args->event == nullptr) return Status::Ok();
    CudaBackend* b;
    MNT_RETURN_IF_ERROR(GetBackend("Event_Destroy", args->backend, &b));
    CudaEvent* e;
    MNT_RETURN_IF_ERROR(GetEvent(*b, "Event_Destroy", "the", args->event, &e));
    b->events.erase(e);
    const cudaError_t err = cudaEventDestroy(e->event);
    delete e;
    return CudaStatus(err, "Event_Destroy: cudaEventDestroy");
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

const MNT_Plugin_Api* CudaBackendPluginApi() {
  static const MNT_Backend_Api backend_api = MakeBackendApi();
  static const MNT_Plugin_Api api = sdk::MakePluginApi(
      MNT_PLUGIN_KIND_BACKEND, "cuda",
      "CUDA backend (cuBLASLt GEMM in fp32/tf32/bf16/fp16, fused kernels)",
      &backend_api, nullptr, nullptr, nullptr);
  return &api;
}

}  // namespace mnt::cuda
