// The CPU backend's class, run by the common plugin (plugins/backends/common/
// backend_plugin.h): host memory handed out as device memory, synchronous
// work, and one kernel method per op in the file of the op's family
// (gemm.cc, layernorm.cc, ...). Each kernel starts from its op's checked,
// typed call (plugins/backends/common/calls/) and computes in fp32 or wider.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_BACKEND_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_BACKEND_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/backends/common/backend_plugin.h"
#include "plugins/backends/common/calls.h"
#include "plugins/backends/cpu/allocator.h"
#include "plugins/backends/cpu/conv_1x1_backward_filter.h"
#include "plugins/backends/cpu/denormals.h"
#include "plugins/backends/cpu/onednn_conv.h"
#include "plugins/backends/cpu/onednn_gemm.h"
#include "plugins/backends/cpu/thread_governor.h"
#include "plugins/sdk/status.h"

namespace mnt::cpu {

using backend::Operand;

class CpuBackend {
 public:
  static constexpr const char* kName = "cpu";
  // Every op, the FP8 ones (ABI 1.9 SCALED_CAST, SCALED_GEMM; 1.10
  // FP8_SCALE_UPDATE) included: exact emulation in fp8.cc; 1.10
  // TENSOR_STATS in tensor_stats.cc.
  static constexpr bool Supports(MNT_Op) { return true; }
  using Event = std::chrono::steady_clock::time_point;  // when recorded

  // options (docs/performance.md): "threads=N" (the OpenMP pool oneDNN and
  // the kernels share, and OpenBLAS; process wide; default: the cores, each
  // marked step run on as many of them as the step times say pay, see
  // thread_governor.h; given, every step runs on N), "gemm=auto|onednn|
  // reference" (default $MANTISSA_CPU_GEMM, else auto: oneDNN when
  // libdnnl.so.2 loads), "onednn_bf16=auto|native|fp32" (oneDNN's own bf16
  // kernels, or bf16-rounded operands in an fp32 GEMM), "record_steps=on|off"
  // (below; default off), "denormals=flush|keep" (default flush: subnormal
  // fp32 results and inputs of the backend's arithmetic read as 0, see
  // denormals.h; keep: IEEE, at a microcode assist each); one device,
  // ordinal 0.
  static sdk::Status Create(const char* options, int32_t device_ordinal,
                            std::unique_ptr<CpuBackend>* out);
  sdk::Status Activate(const char*) { return sdk::Status::Ok(); }
  backend::DeviceInfo Info() const;
  backend::Allocator& allocator() { return allocator_; }
  sdk::Status Copy(void* dst, const void* src, size_t bytes, MNT_CopyKind kind);
  sdk::Status Synchronize() { return sdk::Status::Ok(); }  // nothing is queued
  sdk::Status CreateEvent(Event*) { return sdk::Status::Ok(); }
  sdk::Status RecordEvent(Event* event);
  sdk::Status ElapsedMilliseconds(const Event& start, const Event& end, double* ms);
  sdk::Status DestroyEvent(Event*) { return sdk::Status::Ok(); }

  MNT_DECLARE_BACKEND_KERNELS()

  // ABI 1.7 step markers (common/step_session.h). With record_steps=on a
  // marked step is deferred, recorded and matched as on the cuda backend; a
  // CPU has no graph, so its "capture" and "replay" issue the recorded ops.
  // That lets CI run the deferral and matching CUDA graphs rely on (a bug
  // there changes the trained bits); off, the markers do nothing.
  bool StepGraphsEnabled() const { return record_steps_; }
  sdk::Status CaptureStep(const std::function<sdk::Status()>& issue, std::string*) {
    return issue();
  }
  sdk::Status ReplayStep(const std::function<sdk::Status()>& issue) { return issue(); }
  // Each marked step runs on the team size the governor picks; its end
  // samples the other processes' runnable threads.
  void OnStepBegin();
  void OnStepEnd();
  // Around every op (common/op_dispatch.h): the denormals mode of the
  // calling thread and the workers (denormals.h), flushing in the ops that
  // FlushesDenormals names.
  ScopedDenormalsMode OpScope(int32_t raw_op) const {
    return ScopedDenormalsMode(flush_denormals_ && FlushesDenormals(raw_op), pool_);
  }
  // ABI 1.8 slow paths (Backend_GetInfo): 16-bit convolutions run in fp32
  // (onednn_conv.h) and steps run below the pool.
  std::string SlowPathReport() const;

 private:
  // The reference GEMM: operands rounded to the compute format into fresh
  // fp32 copies, OpenBLAS sgemm (the numerical reference of the GPU tests).
  sdk::Status ReferenceGemm(const backend::GemmCall& call);
  // A fused-epilogue GEMM's product alpha * op(A) op(B) (+ bias when
  // present) + beta * c, through Gemm (oneDNN or the reference), into `c`
  // (any float tensor in this backend's memory or on the host).
  sdk::Status Product(const backend::OpCall* op, const backend::GemmProduct& g,
                      const backend::Operand& bias, float beta,
                      const MNT_Tensor& c);
  // Row-major fp32 C[m,n] = op(A) op(B) + beta C for the convolutions: on
  // oneDNN's sgemm when it is the engine (its threads are the kernels'), else
  // OpenBLAS's.
  void Sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
             int64_t lda, const float* b, int64_t ldb, float beta, float* c,
             int64_t ldc) const;

  HostAllocator allocator_;
  bool record_steps_ = false;
  bool flush_denormals_ = true;
  int pool_ = 1;  // the most threads a kernel uses
  std::unique_ptr<ThreadGovernor> governor_;
  std::string device_name_;
  std::unique_ptr<OneDnnGemm> onednn_gemm_;  // null: the reference GEMM
  // oneDNN's convolutions, with onednn_gemm_ (null: im2col + Sgemm).
  std::unique_ptr<OneDnnConv> onednn_conv_;
  // bf16 1x1 weight gradients as one GEMM on onednn_gemm_.
  Conv1x1BackwardFilter conv_1x1_backward_filter_;
  // The fused GELU epilogues' fp32 product when their output is 16-bit.
  std::mutex epilogue_mu_;
  std::vector<float> epilogue_product_;
};

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_BACKEND_H_
