// Mantissa models: a Linear layer's GEMMs in FP8 (ABI 1.10), for every
// model at once. The facade (ops.h) hands a Linear layer's GEMMs here when
// the model was created with FP8 GEMMs and the weight is one of the
// parameter matrices that own a scaling slot (plugins/sdk/fp8_slots.h), so
// no network has FP8 code of its own.
//
// Each operand is quantized into a scratch buffer with the scale of its
// (role, slot) — SCALED_CAST, which also records the tensor's amax where
// the pass should (a Forward's inputs and weights, a Backward's output
// gradients) — then one SCALED_GEMM multiplies them with the inverse scales.
// A training forward quantizes a layer's input into a buffer of its slot
// (MNT_MEMORY_ACTIVATIONS) that the backward multiplies again, so a network
// need not keep the input itself (Ops::KeepsGemmInputs); the backward
// quantizes the weight again with the forward's scale (the same bits: the
// weights do not change in between). With current scaling each recorded
// quantization first measures its amax and derives its scale in the same
// pass (SCALED_CAST, FP8_SCALE_UPDATE on a one-row history, SCALED_CAST).
#ifndef MANTISSA_MODELS_COMMON_FP8_GEMMS_H_
#define MANTISSA_MODELS_COMMON_FP8_GEMMS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/fp8_slots.h"
#include "plugins/sdk/status.h"

namespace mnt::models {

// The FP8 fields of MNT_Model_Create_Args.
struct Fp8GemmConfig {
  MNT_DType forward = MNT_DTYPE_INVALID;   // inputs and weights
  MNT_DType backward = MNT_DTYPE_INVALID;  // output gradients
  bool fast_accumulation_forward = false;
  bool current_scaling = false;
  int32_t margin = 0;

  bool enabled() const { return forward != MNT_DTYPE_INVALID; }
};

// Reads and checks the FP8 fields of a create call (a host older than 1.10
// sends none: FP8 off). `model` starts the messages.
sdk::Status ReadFp8GemmConfig(const std::string& model, const MNT_Model_Create_Args& args,
                              Fp8GemmConfig* out);

// One operand of a Linear layer's GEMM and what it is.
struct Fp8Operand {
  MNT_Tensor x;
  sdk::Fp8Role role;
  bool record_amax;  // this pass measures the tensor (see the file comment)
};

class Fp8Gemms {
 public:
  Fp8Gemms(const sdk::BackendClient& client, const Fp8GemmConfig& config)
      : client_(client), config_(config) {}
  Fp8Gemms(const Fp8Gemms&) = delete;
  Fp8Gemms& operator=(const Fp8Gemms&) = delete;

  const Fp8GemmConfig& config() const { return config_; }

  // What a pass does with GEMM inputs: a training forward keeps their FP8
  // copies for the backward, which multiplies those; an evaluation keeps
  // nothing.
  enum class Pass { kTrainingForward, kEvalForward, kBackward };

  // Holds a Forward's or Backward's parameters and FP8 tensors (F32 [3, S],
  // S from the parameters' shapes) until EndPass; `call` names the call in
  // messages ("gpt2 Forward").
  sdk::Status BeginPass(const std::string& call, Pass pass, const MNT_Tensor* params,
                        size_t num_params, const MNT_Tensor* scales,
                        const MNT_Tensor* scale_invs, const MNT_Tensor* amax);
  void EndPass() { pass_active_ = false; }

  // The slot of the matrix `w` views (inside a parameter of the pass with
  // slots), or nullopt: that GEMM stays in the activation dtype.
  std::optional<int64_t> SlotOf(const MNT_Tensor& w) const;

  // c = op(a)·op(b) (+ bias), or c += with `accumulate`, with both operands
  // quantized with the scales of `slot`.
  sdk::Status Gemm(const Fp8Operand& a, const Fp8Operand& b,
                   const std::optional<MNT_Tensor>& bias, const MNT_Tensor& c, bool trans_a,
                   bool trans_b, bool accumulate, int64_t slot);

 private:
  // The F32 [1] entry of `t` ([3, S]) for (role, slot).
  MNT_Tensor Entry(const MNT_Tensor& t, int role, int64_t slot) const;
  MNT_DType FormatOf(sdk::Fp8Role role) const {
    return role == sdk::kFp8GradOutput ? config_.backward : config_.forward;
  }
  // The FP8 form of op.x in *q: a training forward's input into its slot's
  // kept buffer, a backward's input from there, anything else quantized into
  // scratch buffer `which` (0: A, 1: B).
  sdk::Status Operand(const Fp8Operand& op, int64_t slot, int which, MNT_Tensor* q);
  // Quantizes op.x into `q` (op.x's shape, the role's format).
  sdk::Status Quantize(const Fp8Operand& op, int64_t slot, const MNT_Tensor& q);
  // `buffer` holds at least `bytes`, reallocated in `category` if not.
  sdk::Status Ensure(sdk::DeviceBuffer* buffer, size_t bytes, MNT_MemoryCategory category);
  sdk::Status EnsureConstants();

  sdk::BackendClient client_;
  Fp8GemmConfig config_;
  bool pass_active_ = false;
  // The pass's parameters that hold matrices: their bytes and first slot.
  struct Matrices {
    const char* begin;
    size_t bytes;
    int64_t count;
    int64_t first_slot;
  };
  std::vector<Matrices> matrices_;
  MNT_Tensor scales_{}, scale_invs_{}, amax_{};
  int64_t num_slots_ = 0;
  Pass pass_ = Pass::kEvalForward;
  sdk::DeviceBuffer scratch_[2];
  // Per slot: the FP8 input the last training forward multiplied, and its
  // element count (0: none kept).
  std::vector<sdk::DeviceBuffer> kept_inputs_;
  std::vector<int64_t> kept_elements_;
  // F32 [2]: 1.0 (the unit scale current scaling measures with) and the
  // one-row history FP8_SCALE_UPDATE needs.
  sdk::DeviceBuffer constants_;
};

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_FP8_GEMMS_H_
