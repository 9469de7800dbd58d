#include "models/common/fp8_gemms.h"

#include <cstring>

#include "models/common/views.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

using sdk::Status;

Status ReadFp8GemmConfig(const std::string& model, const MNT_Model_Create_Args& args,
                         Fp8GemmConfig* out) {
  *out = Fp8GemmConfig{};
  if (!MNT_HAS_FIELD(&args, MNT_Model_Create_Args, fp8_margin)) return Status::Ok();
  if (args.fp8_forward_dtype == MNT_DTYPE_INVALID &&
      args.fp8_backward_dtype == MNT_DTYPE_INVALID) {
    return Status::Ok();
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
  return Status::Ok();
}

Status Fp8Gemms::BeginPass(const std::string& call, Pass pass, const MNT_Tensor* params,
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
  return Status::Ok();
}

std::optional<int64_t> Fp8Gemms::SlotOf(const MNT_Tensor& w) const {
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

MNT_Tensor Fp8Gemms::Entry(const MNT_Tensor& t, int role, int64_t slot) const {
  char* base = static_cast<char*>(t.data);
  return View(base + sizeof(float) * static_cast<size_t>(role * num_slots_ + slot),
              MNT_DTYPE_F32, {1});
}

Status Fp8Gemms::Ensure(sdk::DeviceBuffer* buffer, size_t bytes, MNT_MemoryCategory category) {
  if (buffer->size() >= bytes) return Status::Ok();
  // Grows during the first passes only. Kernels queued on the old buffer
  // finish before it is freed.
  MNT_RETURN_IF_ERROR(client_.Synchronize());
  *buffer = sdk::DeviceBuffer();
  return client_.Allocate(bytes, category, buffer);
}

Status Fp8Gemms::EnsureConstants() {
  if (constants_.data() != nullptr) return Status::Ok();
  MNT_RETURN_IF_ERROR(client_.Allocate(2 * sizeof(float), MNT_MEMORY_WORKSPACE, &constants_));
  const float values[2] = {1.0f, 0.0f};
  return client_.ToDevice(constants_.data(), values, sizeof(values));
}

Status Fp8Gemms::Operand(const Fp8Operand& op, int64_t slot, int which, MNT_Tensor* q) {
  const MNT_DType format = FormatOf(op.role);
  const std::vector<int64_t> dims(op.x.dims, op.x.dims + op.x.rank);
  const int64_t elements = sdk::NumElements(op.x);
  const size_t s = static_cast<size_t>(slot);
  if (op.role == sdk::kFp8Input && pass_ == Pass::kBackward && kept_elements_[s] == elements) {
    // The forward's own FP8 input (a network may have reused x's buffer).
    *q = View(kept_inputs_[s].data(), format, dims);
    return Status::Ok();
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

Status Fp8Gemms::Quantize(const Fp8Operand& op, int64_t slot, const MNT_Tensor& q) {
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

Status Fp8Gemms::Gemm(const Fp8Operand& a, const Fp8Operand& b,
                      const std::optional<MNT_Tensor>& bias, const MNT_Tensor& c, bool trans_a,
                      bool trans_b, bool accumulate, int64_t slot) {
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
