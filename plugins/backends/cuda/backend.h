// The CUDA backend's class, run by the common plugin (plugins/backends/
// common/backend_plugin.h): one device and one non-blocking stream per
// instance, a caching allocator, cuBLASLt and cuDNN handles, and one kernel
// method per op in the file of the op's family (gemm.cu, layernorm.cu, ...),
// where the kernels and their launch code sit together. Each kernel method
// starts from its op's checked, typed call (plugins/backends/common/calls/).
// Work is asynchronous (device_errors.h: what is reported late, and when).
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_H_

#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/backend_plugin.h"
#include "plugins/backends/common/calls.h"
#include "plugins/backends/cuda/allocator.h"
#include "plugins/backends/cuda/attention_plan_key.h"
#include "plugins/backends/cuda/backend_options.h"
#include "plugins/backends/cuda/conv_plan_key.h"
#include "plugins/backends/cuda/cudnn_graph.h"
#include "plugins/backends/cuda/device_errors.h"
#include "plugins/backends/cuda/launch.h"
#include "plugins/backends/cuda/pinned_staging.h"
#include "plugins/backends/cuda/slow_paths.h"
#include "plugins/backends/cuda/step_graph.h"
#include "plugins/sdk/status.h"

namespace mnt::cuda {

struct GemmState;  // gemm.h

// A cached cuDNN algorithm choice for one convolution configuration.
struct ConvAlgoChoice {
  int algo = 0;  // cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t workspace_bytes = 0;
};

// One convolution configuration's cuDNN descriptors (the math type of the
// chosen algorithm set on `conv`) and algorithm, made on first use and
// reused by every call with the same ConvPlanKey (conv_cudnn.cc).
struct ConvPlan {
  ConvPlan() = default;
  ConvPlan(const ConvPlan&) = delete;
  ConvPlan& operator=(const ConvPlan&) = delete;
  ~ConvPlan();  // conv_cudnn.cc: destroys the descriptors
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvAlgoChoice algo;
};

// State is public: the kernel methods of every family file read it.
struct CudaBackend {
  static constexpr const char* kName = "cuda";
  // Every op (the FP8 ones, ABI 1.9 SCALED_CAST and SCALED_GEMM and 1.10
  // FP8_SCALE_UPDATE, in fp8.cu). SCALED_GEMM also needs FP8 tensor cores:
  // DeviceSupports says which ops this instance's GPU runs
  // (Backend_GetOpSupport asks it), and ScaledGemm refuses in one line below
  // sm_89. SCALED_CAST and FP8_SCALE_UPDATE run on every GPU, as does
  // 1.10 TENSOR_STATS (tensor_stats.cu), 1.12's ADAMW8BIT_STEP and
  // ADAFACTOR_STEP (adamw8bit.cu, adafactor.cu), and 1.14's
  // MULTI_ADAMW8BIT_STEP and MULTI_ADAFACTOR_STEP (adamw8bit.cu,
  // adafactor.cu).
  static constexpr bool Supports(MNT_Op) { return true; }
  bool DeviceSupports(MNT_Op op) const {
    return op != MNT_OP_SCALED_GEMM || sm >= kMinFp8GemmSm;
  }
  static constexpr int kMinFp8GemmSm = 89;  // Ada; Hopper is 90
  using Event = cudaEvent_t;

  // options: backend_options.h; device_ordinal picks the GPU.
  static sdk::Status Create(const char* options, int32_t device_ordinal,
                            std::unique_ptr<CudaBackend>* out);
  ~CudaBackend();
  sdk::Status Activate(const char* call);  // the caller's thread may have
                                           // another device current
  backend::DeviceInfo Info() const;
  backend::Allocator& allocator() { return memory; }
  sdk::Status Copy(void* dst, const void* src, size_t bytes, MNT_CopyKind kind);
  sdk::Status Synchronize();
  sdk::Status CreateEvent(Event* event);
  sdk::Status RecordEvent(Event* event);
  sdk::Status ElapsedMilliseconds(const Event& start, const Event& end, double* ms);
  sdk::Status DestroyEvent(Event* event);

  MNT_DECLARE_BACKEND_KERNELS()

  // ABI 1.7 step markers (common/step_session.h decides; step_graph.h
  // captures): cuda_graphs=on defers and records marked steps.
  bool StepGraphsEnabled() const { return options.cuda_graphs; }
  sdk::Status CaptureStep(const std::function<sdk::Status()>& issue, std::string* why_not);
  sdk::Status ReplayStep(const std::function<sdk::Status()>& issue);
  // dst (device) <- `bytes` of host memory at src, ordered on the stream, for
  // a kernel method's own host data (a table of pointers): through the
  // pinned staging slots, or, while a step is being captured, from a pinned
  // copy the graph owns (a replay copies it again).
  sdk::Status UploadForKernel(void* dst, const void* src, size_t bytes);
  // A deferred step is about to be issued (step_session.h): what the ops
  // issued since the last one asked for (the step before, when it ran
  // eagerly) becomes what the next capture reserves beforehand.
  void BeforeStepIssue();
  // Backend_GetInfo's slow_paths (ABI 1.8): slow_paths.h's counts.
  std::string SlowPathReport() const { return slow_paths.Report(); }

  int device = 0;
  int sm = 0;  // compute capability, major * 10 + minor (90 for sm_90)
  std::string device_name;
  int64_t total_memory_bytes = 0;
  CudaBackendOptions options;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;   // bound to `stream`; created on first use
  DeviceAllocator memory;
  std::unique_ptr<GemmState> gemm;  // cuBLASLt handle, algorithms, workspace
  DeviceErrors errors;  // bits set by kernels, reported at sync points
  PinnedStaging staging;  // host-to-device uploads (pinned_staging.h)
  StepGraph step_graph;   // the captured step, if any (step_graph.h)
  // Scratch and pinned-upload requests (bytes) of the ops issued since the
  // last BeforeStepIssue, and of the span before it: a capture reserves the
  // latter first, so that nothing is allocated inside it (block_cache.h).
  std::vector<size_t> scratch_requests, upload_requests;
  std::vector<size_t> previous_scratch_requests, previous_upload_requests;
  static constexpr size_t kMaxRecordedRequests = 1 << 16;
  // Adds a request to what the next capture reserves (only where steps may
  // be captured at all, and bounded).
  void RecordRequest(std::vector<size_t>* requests, size_t bytes) {
    if (options.cuda_graphs && bytes > 0 && requests->size() < kMaxRecordedRequests) {
      requests->push_back(bytes);
    }
  }
  bool graph_capture_said = false;  // the first capture's kept bytes, said once
  std::unordered_map<ConvPlanKey, std::unique_ptr<ConvPlan>, ConvPlanKeyHash> conv_plans;
  // cuDNN SDPA plans (or why none builds) per attention shape/dtype.
  std::unordered_map<AttentionPlanKey, std::unique_ptr<CudnnPlan>, AttentionPlanKeyHash>
      sdpa_plans;
  // Fallbacks and refused fusions, said once per shape and counted.
  SlowPaths slow_paths;
};

// Scratch memory (WORKSPACE category) released when the holder goes out of
// scope; reuse by later work is ordered by the single stream.
class Scratch {
 public:
  explicit Scratch(CudaBackend& b) : backend_(b) {}
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  // Under capture the block belongs to the graph (step_graph.h): its
  // kernels write it again at every replay.
  ~Scratch() {
    if (data_ == nullptr) return;
    if (backend_.step_graph.capturing()) {
      backend_.step_graph.Keep(data_, bytes_);
    } else {
      (void)backend_.memory.Free(data_);
    }
  }
  sdk::Status Allocate(size_t bytes) {
    backend_.RecordRequest(&backend_.scratch_requests, bytes);
    bytes_ = bytes;
    return backend_.memory.Allocate(bytes, MNT_MEMORY_WORKSPACE, &data_);
  }
  void* data() const { return data_; }

 private:
  CudaBackend& backend_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_BACKEND_H_
