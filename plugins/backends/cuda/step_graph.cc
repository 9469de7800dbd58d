#include "plugins/backends/cuda/step_graph.h"

#include <cstring>
#include <utility>

#include "plugins/backends/cuda/cuda_status.h"

namespace mnt::cuda {

using sdk::Status;

StepGraph::~StepGraph() {
  if (exec_ != nullptr) (void)cudaGraphExecDestroy(exec_);
  for (Owned* o : {&owned_, &pending_}) {
    for (void* p : o->pinned) (void)cudaFreeHost(p);
  }
}

void StepGraph::Free(Owned* owned, backend::Allocator& memory) {
  for (void* b : owned->blocks) (void)memory.Free(b);  // ours: cannot be foreign
  for (void* p : owned->pinned) (void)cudaFreeHost(p);
  *owned = Owned{};
}

Status StepGraph::PinnedCopy(const void* src, size_t bytes, void** pinned) {
  void* p = nullptr;
  MNT_CUDA_RETURN_IF_ERROR(cudaMallocHost(&p, bytes),
                           sdk::Format("CUDA graph capture: cudaMallocHost(%zu bytes)", bytes));
  pending_.pinned.push_back(p);
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
  const Status issued = issue();
  cudaGraph_t graph = nullptr;
  err = cudaStreamEndCapture(stream, &graph);  // always: leaves capture mode
  capturing_ = false;
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
