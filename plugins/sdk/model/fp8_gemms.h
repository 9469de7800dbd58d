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
#ifndef MANTISSA_PLUGINS_SDK_MODEL_FP8_GEMMS_H_
#define MANTISSA_PLUGINS_SDK_MODEL_FP8_GEMMS_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/fp8_slots.h"
#include "plugins/sdk/model/views.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

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

// Implementation (header-only: the SDK ships no library).

inline sdk::Status ReadFp8GemmConfig(const std::string& model, const MNT_Model_Create_Args& args,
                                     Fp8GemmConfig* out) {
  *out = Fp8GemmConfig{};
  if (!MNT_HAS_FIELD(&args, MNT_Model_Create_Args, fp8_margin)) return sdk::Status::Ok();
  if (args.fp8_forward_dtype == MNT_DTYPE_INVALID &&
      args.fp8_backward_dtype == MNT_DTYPE_INVALID) {
    return sdk::Status::Ok();
  }
  if (!sdk::IsFp8(args.fp8_forward_dtype) || !sdk::IsFp8(args.fp8_backward_dtype)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: fp8_forward_dtype and fp8_backward_dtype must both be F8_E4M3 or F8_E5M2 "
        "(or both INVALID), got %s and %s",
        model.c_str(), sdk::DTypeName(args.fp8_forward_dtype),
        sdk::DTypeName(args.fp8_backward_dtype)));
  }
  if (args.fp8_forward_dtype == MNT_DTYPE_F8_E5M2) {
    // The backward multiplies output gradients with inputs and weights:
    // E5M2 on both sides is no FP8 GEMM (SCALED_GEMM refuses it).
    return sdk::InvalidArgument(sdk::Format(
        "%s: fp8_forward_dtype must be F8_E4M3 (E5M2 inputs and weights would meet E5M2 "
        "gradients in the backward GEMMs)",
        model.c_str()));
  }
  if (args.fp8_margin < 0 || args.fp8_margin > 64) {
    return sdk::InvalidArgument(sdk::Format("%s: fp8_margin is %d, expected 0 to 64",
                                            model.c_str(), args.fp8_margin));
  }
  out->forward = args.fp8_forward_dtype;
  out->backward = args.fp8_backward_dtype;
  out->fast_accumulation_forward = args.fp8_fast_accumulation_forward != 0;
  out->current_scaling = args.fp8_current_scaling != 0;
  out->margin = args.fp8_margin;
  return sdk::Status::Ok();
}

inline sdk::Status Fp8Gemms::BeginPass(const std::string& call, Pass pass, const MNT_Tensor* params,
                                       size_t num_params, const MNT_Tensor* scales,
                                       const MNT_Tensor* scale_invs, const MNT_Tensor* amax) {
  pass_active_ = false;
  if (scales == nullptr || scale_invs == nullptr || amax == nullptr) {
    return sdk::InvalidArgument(call +
                                ": the model runs its GEMMs in FP8 and needs fp8_scales, "
                                "fp8_scale_invs and fp8_amax");
  }
  // Where each parameter's matrices are, found once per pass.
  matrices_.clear();
  int64_t slots = 0;
  for (size_t i = 0; i < num_params; ++i) {
    const int64_t n = sdk::Fp8SlotsOfParam(
        std::vector<int64_t>(params[i].dims, params[i].dims + params[i].rank));
    if (n > 0) {
      matrices_.push_back({static_cast<const char*>(params[i].data), sdk::SizeBytes(params[i]),
                           n, slots});
    }
    slots += n;
  }
  for (const auto& [name, t] : {std::pair<const char*, const MNT_Tensor*>{"fp8_scales", scales},
                                {"fp8_scale_invs", scale_invs},
                                {"fp8_amax", amax}}) {
    if (t->dtype != MNT_DTYPE_F32 || t->rank != 2 || t->dims[0] != sdk::kFp8Roles ||
        t->dims[1] != slots || t->data == nullptr) {
      return sdk::InvalidArgument(sdk::Format(
          "%s: %s is %s, expected f32[3, %lld] (3 roles x the scaling slots of these "
          "parameters)",
          call.c_str(), name, sdk::Describe(*t).c_str(), static_cast<long long>(slots)));
    }
  }
  if (static_cast<int64_t>(kept_inputs_.size()) != slots) {
    kept_inputs_.clear();
    kept_inputs_.resize(static_cast<size_t>(slots));
    kept_elements_.assign(static_cast<size_t>(slots), 0);
  }
  pass_ = pass;
  scales_ = *scales;
  scale_invs_ = *scale_invs;
  amax_ = *amax;
  num_slots_ = slots;
  pass_active_ = true;
  return sdk::Status::Ok();
}

inline std::optional<int64_t> Fp8Gemms::SlotOf(const MNT_Tensor& w) const {
  if (!pass_active_ || w.rank != 2) return std::nullopt;
  const auto* data = static_cast<const char*>(w.data);
  for (const Matrices& m : matrices_) {
    if (data < m.begin || data >= m.begin + m.bytes) continue;
    const size_t matrix_bytes = m.bytes / static_cast<size_t>(m.count);
    const size_t offset = static_cast<size_t>(data - m.begin);
    // Only a whole matrix of the parameter is a scaled GEMM operand.
    if (offset % matrix_bytes != 0 || sdk::SizeBytes(w) != matrix_bytes) return std::nullopt;
    return m.first_slot + static_cast<int64_t>(offset / matrix_bytes);
  }
  return std::nullopt;
}

inline MNT_Tensor Fp8Gemms::Entry(const MNT_Tensor& t, int role, int64_t slot) const {
  char* base = static_cast<char*>(t.data);
  return View(base + sizeof(float) * static_cast<size_t>(role * num_slots_ + slot),
              MNT_DTYPE_F32, {1});
}

inline sdk::Status Fp8Gemms::Ensure(sdk::DeviceBuffer* buffer, size_t bytes, MNT_MemoryCategory category) {
  if (buffer->size() >= bytes) return sdk::Status::Ok();
  // Grows during the first passes only. Kernels queued on the old buffer
  // finish before it is freed.
  MNT_RETURN_IF_ERROR(client_.Synchronize());
  *buffer = sdk::DeviceBuffer();
  return client_.Allocate(bytes, category, buffer);
}

inline sdk::Status Fp8Gemms::EnsureConstants() {
  if (constants_.data() != nullptr) return sdk::Status::Ok();
  MNT_RETURN_IF_ERROR(client_.Allocate(2 * sizeof(float), MNT_MEMORY_WORKSPACE, &constants_));
  const float values[2] = {1.0f, 0.0f};
  return client_.ToDevice(constants_.data(), values, sizeof(values));
}

inline sdk::Status Fp8Gemms::Operand(const Fp8Operand& op, int64_t slot, int which, MNT_Tensor* q) {
  const MNT_DType format = FormatOf(op.role);
  const std::vector<int64_t> dims(op.x.dims, op.x.dims + op.x.rank);
  const int64_t elements = sdk::NumElements(op.x);
  const size_t s = static_cast<size_t>(slot);
  if (op.role == sdk::kFp8Input && pass_ == Pass::kBackward && kept_elements_[s] == elements) {
    // The forward's own FP8 input (a network may have reused x's buffer).
    *q = View(kept_inputs_[s].data(), format, dims);
    return sdk::Status::Ok();
  }
  if (op.role == sdk::kFp8Input && pass_ == Pass::kTrainingForward) {
    MNT_RETURN_IF_ERROR(
        Ensure(&kept_inputs_[s], static_cast<size_t>(elements), MNT_MEMORY_ACTIVATIONS));
    *q = View(kept_inputs_[s].data(), format, dims);
    kept_elements_[s] = elements;
    return Quantize(op, slot, *q);
  }
  MNT_RETURN_IF_ERROR(
      Ensure(&scratch_[which], static_cast<size_t>(elements), MNT_MEMORY_WORKSPACE));
  *q = View(scratch_[which].data(), format, dims);
  return Quantize(op, slot, *q);
}

inline sdk::Status Fp8Gemms::Quantize(const Fp8Operand& op, int64_t slot, const MNT_Tensor& q) {
  const MNT_DType format = FormatOf(op.role);
  const MNT_Tensor scale = Entry(scales_, op.role, slot);
  const MNT_Tensor amax = Entry(amax_, op.role, slot);
  if (op.record_amax && config_.current_scaling) {
    // Measure (the cast's output is overwritten below), derive this pass's
    // scale on the device, then quantize with it.
    MNT_RETURN_IF_ERROR(EnsureConstants());
    char* constants = static_cast<char*>(constants_.data());
    const MNT_Tensor one = View(constants, MNT_DTYPE_F32, {1});
    const MNT_Tensor history = View(constants + sizeof(float), MNT_DTYPE_F32, {1, 1});
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_SCALED_CAST, {op.x, one}, {q, amax}));
    MNT_Fp8ScaleUpdateParams p{};
    p.struct_size = MNT_Fp8ScaleUpdateParams_STRUCT_SIZE;
    p.fp8_max = format == MNT_DTYPE_F8_E4M3 ? sdk::kE4M3Max : sdk::kE5M2Max;
    p.margin = config_.margin;
    p.amax_algo = MNT_AMAX_ALGO_MOST_RECENT;
    p.history_length = 1;
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_FP8_SCALE_UPDATE, {amax},
                                    {history, scale, Entry(scale_invs_, op.role, slot)}, &p));
    return client_.Run(MNT_OP_SCALED_CAST, {op.x, scale}, {q});
  }
  if (op.record_amax) return client_.Run(MNT_OP_SCALED_CAST, {op.x, scale}, {q, amax});
  return client_.Run(MNT_OP_SCALED_CAST, {op.x, scale}, {q});
}

inline sdk::Status Fp8Gemms::Gemm(const Fp8Operand& a, const Fp8Operand& b,
                                  const std::optional<MNT_Tensor>& bias, const MNT_Tensor& c,
                                  bool trans_a, bool trans_b, bool accumulate, int64_t slot) {
  MNT_Tensor qa{}, qb{};
  MNT_RETURN_IF_ERROR(Operand(a, slot, 0, &qa));
  MNT_RETURN_IF_ERROR(Operand(b, slot, 1, &qb));
  const bool forward = a.role != sdk::kFp8GradOutput && b.role != sdk::kFp8GradOutput;
  MNT_ScaledGemmParams p{};
  p.struct_size = MNT_ScaledGemmParams_STRUCT_SIZE;
  p.trans_a = trans_a ? 1 : 0;
  p.trans_b = trans_b ? 1 : 0;
  p.alpha = 1.0f;
  p.beta = accumulate ? 1.0f : 0.0f;
  // Transformer Engine's split: fast accumulation forward only, the
  // gradients' long sums in fp32.
  p.fast_accumulation = forward && config_.fast_accumulation_forward ? 1 : 0;
  std::vector<MNT_Tensor> inputs = {qa, qb, Entry(scale_invs_, a.role, slot),
                                    Entry(scale_invs_, b.role, slot)};
  if (bias) inputs.push_back(*bias);
  return client_.Run(MNT_OP_SCALED_GEMM, inputs, {c}, &p);
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_FP8_GEMMS_H_
