// The CUDA backend's device side (creation and teardown, copies, sync,
// events, the device error word) and its registration as the "cuda" plugin;
// the C entry points are the common plugin's (common/backend_plugin.h).
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "plugins/backends/cuda/backend.h"
#include "plugins/backends/cuda/block_cache.h"
#include "plugins/backends/cuda/collectives.h"
#include "plugins/backends/cuda/cuda_backend.h"
#include "plugins/backends/cuda/cuda_status.h"
#include "plugins/backends/cuda/gemm.h"

namespace mnt::cuda {

using sdk::Status;

Status CudaBackend::Create(const char* options_text, int32_t ordinal,
                           std::unique_ptr<CudaBackend>* out) {
  CudaBackendOptions options;
  MNT_RETURN_IF_ERROR(ParseCudaBackendOptions(options_text, &options));
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    (void)cudaGetLastError();
    return Status(MNT_ERROR_UNAVAILABLE,
                  sdk::Format("cuda backend: no CUDA device available (cudaGetDeviceCount: %s)",
                              err != cudaSuccess ? cudaGetErrorString(err) : "0 devices"));
  }
  if (ordinal < 0 || ordinal >= count) {
    return sdk::InvalidArgument(sdk::Format(
        "Backend_Create: device_ordinal %d is outside [0, %d) (CUDA devices)", ordinal, count));
  }
  auto b = std::make_unique<CudaBackend>();
  b->device = ordinal;
  b->options = options;
  MNT_CUDA_RETURN_IF_ERROR(cudaSetDevice(b->device), "Backend_Create: cudaSetDevice");
  cudaDeviceProp prop{};
  MNT_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, b->device),
                           "Backend_Create: cudaGetDeviceProperties");
  b->total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  b->sm = prop.major * 10 + prop.minor;
  b->device_name = sdk::Format("cuda:%d (%s, sm_%d%d, %.0f GiB)", b->device, prop.name,
                               prop.major, prop.minor,
                               prop.totalGlobalMem / (1024.0 * 1024 * 1024));
  MNT_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking),
                           "Backend_Create: cudaStreamCreateWithFlags");
  MNT_RETURN_IF_ERROR(CreateGemmState(&b->gemm));
  MNT_RETURN_IF_ERROR(b->errors.Init(b->stream));
  *out = std::move(b);
  return Status::Ok();
}

CudaBackend::~CudaBackend() {
  const std::string slow = slow_paths.Report();
  if (!slow.empty()) {
    std::fprintf(stderr, "mantissa: cuda backend: slow paths taken (calls x kind: shape):\n%s",
                 slow.c_str());
  }
  if (stream != nullptr) cudaStreamSynchronize(stream);
  if (stream != nullptr) (void)step_graph.Release(stream, memory);
  memory.ReleaseEverything();
  sdpa_plans.clear();  // before the cuDNN handle they were built with
  conv_plans.clear();
  if (cudnn != nullptr) cudnnDestroy(cudnn);
  gemm.reset();
  if (stream != nullptr) cudaStreamDestroy(stream);
}

Status CudaBackend::Activate(const char* call) {
  return CudaStatus(cudaSetDevice(device), std::string(call) + ": cudaSetDevice");
}

backend::DeviceInfo CudaBackend::Info() const {
  return backend::DeviceInfo{device_name.c_str(), total_memory_bytes, false};
}

Status CudaBackend::Copy(void* dst, const void* src, size_t bytes, MNT_CopyKind kind) {
  // H2D: staged through pinned slots, so it returns once src has been read
  // without waiting for the stream (pinned_staging.h).
  if (kind == MNT_COPY_HOST_TO_DEVICE) return staging.Upload(dst, src, bytes, stream);
  const cudaMemcpyKind k = kind == MNT_COPY_HOST_TO_DEVICE   ? cudaMemcpyHostToDevice
                           : kind == MNT_COPY_DEVICE_TO_HOST ? cudaMemcpyDeviceToHost
                                                             : cudaMemcpyDeviceToDevice;
  MNT_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(dst, src, bytes, k, stream),
                           sdk::Format("Memory_Copy: cudaMemcpyAsync(%zu bytes)", bytes));
  if (k == cudaMemcpyDeviceToDevice) return Status::Ok();
  return errors.Check(stream);  // D2H: the data must be there on return
}

Status CudaBackend::Synchronize() {
  MNT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream),
                           "Backend_Synchronize: cudaStreamSynchronize");
  return errors.Check(stream);
}

Status CudaBackend::CreateEvent(Event* e) {
  return CudaStatus(cudaEventCreate(e), "Event_Create: cudaEventCreate");
}

Status CudaBackend::RecordEvent(Event* e) {
  return CudaStatus(cudaEventRecord(*e, stream), "Event_Record: cudaEventRecord");
}

Status CudaBackend::ElapsedMilliseconds(const Event& start, const Event& end, double* ms) {
  MNT_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(end), "Event_ElapsedTime: cudaEventSynchronize");
  float elapsed = 0.0f;
  MNT_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&elapsed, start, end),
                           "Event_ElapsedTime: cudaEventElapsedTime");
  *ms = elapsed;
  return Status::Ok();
}

Status CudaBackend::DestroyEvent(Event* e) {
  return CudaStatus(cudaEventDestroy(*e), "Event_Destroy: cudaEventDestroy");
}

void CudaBackend::BeforeStepIssue() {
  previous_scratch_requests = std::move(scratch_requests);
  previous_upload_requests = std::move(upload_requests);
  scratch_requests.clear();
  upload_requests.clear();
}

Status CudaBackend::CaptureStep(const std::function<Status()>& issue, std::string* why_not) {
  why_not->clear();
  // A capture refused runs the step eagerly (step_session.h says why, once).
  const auto refuse = [&](std::string why) {
    slow_paths.Count("CUDA graph capture off", "step");
    *why_not = std::move(why);
    return Status::Ok();
  };
  // The last graph's blocks and buffers back first (Release waits for a
  // replay still running), then what this step will ask for reserved: the
  // step before was equal to it and ran eagerly (step_session.h), so its
  // requests are this step's, one block each under capture.
  MNT_RETURN_IF_ERROR(step_graph.Release(stream, memory));
  const size_t keep = BlockCache::ClassBytes(previous_scratch_requests);
  const size_t bound = static_cast<size_t>(options.graph_workspace_mb) << 20;
  if (keep > bound) {
    return refuse(sdk::Format(
        "the graph would keep %.1f MiB of scratch memory for its life, over "
        "graph_workspace_mb=%lld (raise it with --backend_options=graph_workspace_mb=N)",
        keep / 1048576.0, static_cast<long long>(options.graph_workspace_mb)));
  }
  size_t added = 0;
  const Status reserved = memory.Reserve(previous_scratch_requests, &added);
  if (!reserved.ok()) {
    return refuse("reserving the graph's scratch memory before capture: " + reserved.message());
  }
  const Status pinned = step_graph.ReservePinned(previous_upload_requests);
  if (!pinned.ok()) return refuse("reserving pinned buffers before capture: " + pinned.message());
  memory.set_capturing(true);
  const Status captured = step_graph.Capture(stream, memory, issue, why_not);
  memory.set_capturing(false);
  MNT_RETURN_IF_ERROR(captured);
  if (!why_not->empty()) return refuse(*why_not);
  if (!graph_capture_said) {
    graph_capture_said = true;
    std::fprintf(stderr,
                 "mantissa: cuda backend: CUDA graph captured; it keeps %.1f MiB of scratch "
                 "memory (WORKSPACE) for its life (bound: graph_workspace_mb=%lld)\n",
                 step_graph.kept_bytes() / 1048576.0,
                 static_cast<long long>(options.graph_workspace_mb));
  }
  return Status::Ok();
}

Status CudaBackend::ReplayStep(const std::function<Status()>&) {
  return step_graph.Replay(stream);
}

Status CudaBackend::UploadForKernel(void* dst, const void* src, size_t bytes) {
  if (!step_graph.capturing()) {
    RecordRequest(&upload_requests, bytes);
    return staging.Upload(dst, src, bytes, stream);
  }
  void* pinned = nullptr;
  MNT_RETURN_IF_ERROR(step_graph.PinnedCopy(src, bytes, &pinned));
  MNT_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, stream),
      sdk::Format("CUDA graph capture: cudaMemcpyAsync(%zu bytes)", bytes));
  return Status::Ok();
}

const MNT_Plugin_Api* CudaBackendPluginApi() {
  // The common plugin's descriptor; its chain is the capabilities extension
  // followed by the collectives extension (NCCL, collectives.h).
  return backend::BackendPlugin<CudaBackend>::Api(
      "CUDA backend (cuBLASLt GEMM in fp32/tf32/bf16/fp16, fused kernels; collectives over "
      "NCCL, in NCCL's own order and 16-bit accumulation)",
      &CudaCollectivesExtension()->header.base);
}

}  // namespace mnt::cuda
