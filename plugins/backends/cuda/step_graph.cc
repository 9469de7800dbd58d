#include "plugins/backends/cuda/step_graph.h"

#include <cstring>
#include <utility>

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

using sdk::Status;

StepGraph::StepGraph()
    : pinned_pool_(
          [](size_t bytes, void** data, bool* out_of_memory) {
            const cudaError_t err = cudaMallocHost(data, bytes);
            *out_of_memory = err == cudaErrorMemoryAllocation;
            if (err != cudaSuccess) (void)cudaGetLastError();  // not the next call's error
            return CudaStatus(
                err, sdk::Format("CUDA graph: cudaMallocHost(%zu bytes) before capture", bytes));
          },
          [](void* data) { (void)cudaFreeHost(data); }) {}

StepGraph::~StepGraph() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  for (Owned* o : {&owned_, &pending_}) {
    for (auto& [size, p] : o->pinned) (void)cudaFreeHost(p);
  }
  // pinned_pool_ frees what it holds.
}

void StepGraph::Free(Owned* owned, backend::Allocator& memory) {
  for (void* b : owned->blocks) (void)memory.Free(b);  // ours: cannot be foreign
  for (auto& [size, p] : owned->pinned) pinned_pool_.Release(p, size);
  *owned = Owned{};
}

Status StepGraph::ReservePinned(const std::vector<size_t>& sizes) {
  size_t added = 0;
  return pinned_pool_.Reserve(sizes, &added);
}

Status StepGraph::PinnedCopy(const void* src, size_t bytes, void** pinned) {
  void* p = nullptr;
  size_t size = 0;
  const Status got = pinned_pool_.Obtain(bytes, &p, &size);
  if (!got.ok()) return Status(got.code(), "pinned upload buffer: " + got.message());
  pending_.pinned.emplace_back(size, p);
  std::memcpy(p, src, bytes);
  *pinned = p;
  return Status::Ok();
}

Status StepGraph::Release(cudaStream_t stream, backend::Allocator& memory) {
  if (exec_ == nullptr && owned_.blocks.empty() && owned_.pinned.empty()) return Status::Ok();
  // A replay may still run: its blocks must not be handed out before it ends.
  MNT_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream),
                           "CUDA graph release: cudaStreamSynchronize");
  if (exec_ != nullptr) {
    const cudaError_t err = cudaGraphExecDestroy(exec_);
    exec_ = nullptr;
    MNT_CUDA_RETURN_IF_ERROR(err, "CUDA graph release: cudaGraphExecDestroy");
  }
  Free(&owned_, memory);
  return Status::Ok();
}

Status StepGraph::Capture(cudaStream_t stream, backend::Allocator& memory,
                          const std::function<Status()>& issue, std::string* why_not) {
  why_not->clear();
  MNT_RETURN_IF_ERROR(Release(stream, memory));
  const auto refuse = [&](const std::string& why) {
    Free(&pending_, memory);  // nothing captured ran: no kernel holds them
    (void)cudaGetLastError();  // a failed capture's error is not the next op's
    *why_not = why;
    return Status::Ok();
  };
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed);
  if (err != cudaSuccess) {
    return refuse(CudaStatus(err, "cudaStreamBeginCapture").message());
  }
  capturing_ = true;
  pinned_pool_.set_capturing(true);  // served from what ReservePinned put there
  const Status issued = issue();
  cudaGraph_t graph = nullptr;
  err = cudaStreamEndCapture(stream, &graph);  // always: leaves capture mode
  capturing_ = false;
  pinned_pool_.set_capturing(false);
  if (!issued.ok() || err != cudaSuccess) {
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    return refuse(!issued.ok() ? "an op under capture: " + issued.message()
                               : CudaStatus(err, "cudaStreamEndCapture").message());
  }
  cudaGraphExec_t exec = nullptr;
  err = cudaGraphInstantiate(&exec, graph, 0);
  const cudaError_t destroyed = cudaGraphDestroy(graph);  // the exec is its own copy
  if (err != cudaSuccess) return refuse(CudaStatus(err, "cudaGraphInstantiate").message());
  if (destroyed != cudaSuccess) {
    (void)cudaGraphExecDestroy(exec);
    return refuse(CudaStatus(destroyed, "cudaGraphDestroy").message());
  }
  err = cudaGraphLaunch(exec, stream);
  if (err != cudaSuccess) {
    (void)cudaGraphExecDestroy(exec);
    return refuse(CudaStatus(err, "cudaGraphLaunch (first)").message());
  }
  exec_ = exec;
  owned_ = std::move(pending_);
  pending_ = Owned{};
  return Status::Ok();
}

Status StepGraph::Replay(cudaStream_t stream) {
  if (exec_ == nullptr) return sdk::Internal("CUDA graph replay: no captured step");
  return CudaStatus(cudaGraphLaunch(exec_, stream), "Backend_StepEnd: cudaGraphLaunch");
}

}  // namespace mnt::cuda
