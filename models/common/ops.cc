#include "models/common/ops.h"

#include "models/common/views.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {
namespace {

using sdk::Status;

// The same bytes seen with other dims (attention's [B, T, width] view of a
// [B*T, width] matrix).
MNT_Tensor Batched(const MNT_Tensor& rows, int64_t batch) {
  return Reshape(rows, {batch, rows.dims[0] / batch, rows.dims[1]});
}

MNT_AccumulateParams AccumulateParams(bool accumulate) {
  return {MNT_AccumulateParams_STRUCT_SIZE, accumulate ? 1 : 0};
}

MNT_ActivationParams ActivationParams(MNT_Activation act) {
  return {MNT_ActivationParams_STRUCT_SIZE, act};
}

MNT_LayerNormParams LayerNormParams(float epsilon, bool accumulate) {
  return {MNT_LayerNormParams_STRUCT_SIZE, epsilon, accumulate ? 1 : 0};
}

// scale 0: the backend's 1/sqrt(head size). The products in TF32 when the
// precision's GEMMs are (ABI 1.8; a 1.2-1.7 backend ignores the field and
// computes them in fp32); 16-bit operands are exact in fp32 products anyway.
MNT_AttentionParams CausalAttentionParams(int64_t num_heads, MNT_ComputeMode matmul_compute) {
  return {MNT_AttentionParams_STRUCT_SIZE, static_cast<int32_t>(num_heads), 1, 0.0f,
          matmul_compute == MNT_COMPUTE_TF32 ? MNT_COMPUTE_TF32 : MNT_COMPUTE_F32};
}

MNT_Pool2dParams PoolParams(const Pool2dSpec& s) {
  return {MNT_Pool2dParams_STRUCT_SIZE, s.kind,      s.window_h,
          s.window_w,                   s.stride_h,  s.stride_w,
          s.pad_h,                      s.pad_w,     s.count_include_pad ? 1 : 0};
}

MNT_BatchNormParams BatchNormParams(const BatchNormSpec& s, bool training,
                                    bool accumulate) {
  return {MNT_BatchNormParams_STRUCT_SIZE, training ? 1 : 0, s.momentum,
          s.epsilon, accumulate ? 1 : 0};
}

MNT_CrossEntropyParams CrossEntropyParams(float grad_scale,
                                          int64_t num_classes) {
  MNT_CrossEntropyParams p{};
  p.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  p.grad_scale = grad_scale;
  p.num_classes = num_classes;
  return p;
}

}  // namespace

Pool2dSpec Pool2dSpec::GlobalAverage(int64_t height, int64_t width) {
  Pool2dSpec s;
  s.kind = MNT_POOL_AVG;
  s.window_h = static_cast<int32_t>(height);
  s.window_w = static_cast<int32_t>(width);
  return s;
}

Status Ops::Ask(MNT_Op op, bool* supported) {
  MNT_Backend_GetOpSupport_Args s{};
  s.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  s.backend = client_.backend();
  s.op = op;
  MNT_RETURN_IF_ERROR(sdk::StatusFromPluginError(
      client_.plugin(), client_.api()->Backend_GetOpSupport(&s)));
  *supported = s.supported != 0;
  if (*supported) {
    const size_t index = static_cast<size_t>(op);
    if (supported_.size() <= index) supported_.resize(index + 1);
    supported_[index] = true;
  }
  return Status::Ok();
}

Status Ops::Create(const sdk::BackendClient& client,
                   MNT_ComputeMode matmul_compute,
                   const std::vector<MNT_Op>& required, const std::string& model,
                   const std::string& note, Ops* out) {
  Ops ops;
  ops.client_ = client;
  ops.matmul_compute_ = matmul_compute;
  for (MNT_Op op : required) {
    bool supported = false;
    MNT_RETURN_IF_ERROR(ops.Ask(op, &supported));
    if (!supported) {
      return sdk::Unimplemented(sdk::Format(
          "%s: backend '%s' does not support %s%s", model.c_str(),
          client.plugin()->name, sdk::OpName(op), note.c_str()));
    }
  }
  *out = std::move(ops);
  return Status::Ok();
}

Status Ops::AskOptional(const std::vector<MNT_Op>& ops) {
  // Backend_GetOpSupport answers for every op, whatever the backend's minor:
  // one that never heard of an op reports it unsupported. A failing query
  // of an op the model can do without is a "no" too (an older backend may
  // refuse a value it does not know), as sdk::BackendInstance::Supports.
  for (MNT_Op op : ops) {
    bool supported = false;
    (void)Ask(op, &supported);
  }
  return Status::Ok();
}

Status Ops::EnableFp8(const Fp8GemmConfig& config, const std::string& model) {
  std::vector<MNT_Op> needed = {MNT_OP_SCALED_CAST, MNT_OP_SCALED_GEMM};
  if (config.current_scaling) needed.push_back(MNT_OP_FP8_SCALE_UPDATE);
  for (MNT_Op op : needed) {
    bool supported = false;
    MNT_RETURN_IF_ERROR(Ask(op, &supported));
    if (!supported) {
      return sdk::Unimplemented(sdk::Format("%s: backend '%s' does not support %s (FP8 GEMMs)",
                                            model.c_str(), client_.plugin()->name,
                                            sdk::OpName(op)));
    }
  }
  fp8_ = std::make_shared<Fp8Gemms>(client_, config);
  return Status::Ok();
}

bool Ops::Supports(MNT_Op op) const {
  if (fp8_ != nullptr && (op == MNT_OP_GEMM_BIAS_GELU || op == MNT_OP_GEMM_DGELU ||
                          op == MNT_OP_GEMM_BIAS_GRAD)) {
    return false;
  }
  const size_t index = static_cast<size_t>(op);
  return index < supported_.size() && supported_[index];
}

Status Ops::Run(MNT_Op op, const std::vector<MNT_Tensor>& inputs,
                const std::vector<MNT_Tensor>& outputs,
                const void* params) const {
  return client_.Run(op, inputs, outputs, params);
}

Status Ops::Fill(const MNT_Tensor& out, double value) const {
  const MNT_FillParams p{MNT_FillParams_STRUCT_SIZE, value};
  return Run(MNT_OP_FILL, {}, {out}, &p);
}

Status Ops::Cast(const MNT_Tensor& x, const MNT_Tensor& y) const {
  return Run(MNT_OP_CAST, {x}, {y});
}

Status Ops::Copy(const MNT_Tensor& from, const MNT_Tensor& to) const {
  const size_t bytes = sdk::SizeBytes(to);
  if (sdk::SizeBytes(from) != bytes) {
    return sdk::Internal("copy of " + sdk::Describe(from) + " into " +
                         sdk::Describe(to) + ": sizes differ");
  }
  return client_.Copy(to.data, from.data, bytes, MNT_COPY_DEVICE_TO_DEVICE);
}

Status Ops::Gemm(const MNT_Tensor& a, const MNT_Tensor& b,
                 const OptionalTensor& bias, const MNT_Tensor& c, bool trans_a,
                 bool trans_b, bool accumulate) const {
  MNT_GemmParams p{};
  p.struct_size = MNT_GemmParams_STRUCT_SIZE;
  p.trans_a = trans_a ? 1 : 0;
  p.trans_b = trans_b ? 1 : 0;
  p.alpha = 1.0f;
  p.beta = accumulate ? 1.0f : 0.0f;
  p.compute = matmul_compute_;
  if (bias) return Run(MNT_OP_GEMM, {a, b, *bias}, {c}, &p);
  return Run(MNT_OP_GEMM, {a, b}, {c}, &p);
}

Status Ops::LayerGemm(const MNT_Tensor& w, const Fp8Operand& a, const Fp8Operand& b,
                      const OptionalTensor& bias, const MNT_Tensor& c, bool trans_a,
                      bool trans_b, bool accumulate) const {
  if (fp8_ != nullptr) {
    if (const std::optional<int64_t> slot = fp8_->SlotOf(w)) {
      return fp8_->Gemm(a, b, bias, c, trans_a, trans_b, accumulate, *slot);
    }
  }
  return Gemm(a.x, b.x, bias, c, trans_a, trans_b, accumulate);
}

Status Ops::Linear(const MNT_Tensor& x, const MNT_Tensor& w,
                   const OptionalTensor& b, const MNT_Tensor& y,
                   WeightLayout layout) const {
  return LayerGemm(w, {x, sdk::kFp8Input, true}, {w, sdk::kFp8Weight, true}, b, y, false,
                   layout == WeightLayout::kOutIn, false);
}

MNT_GemmEpilogueParams Ops::EpilogueParams(bool trans_a, bool trans_b,
                                           float beta,
                                           bool accumulate_bias_grad) const {
  MNT_GemmEpilogueParams p{};
  p.struct_size = MNT_GemmEpilogueParams_STRUCT_SIZE;
  p.trans_a = trans_a ? 1 : 0;
  p.trans_b = trans_b ? 1 : 0;
  p.alpha = 1.0f;
  p.beta = beta;
  p.compute = matmul_compute_;
  p.accumulate_bias_grad = accumulate_bias_grad ? 1 : 0;
  return p;
}

Status Ops::LinearGelu(const MNT_Tensor& x, const MNT_Tensor& w,
                       const MNT_Tensor& b, const MNT_Tensor& pre,
                       const MNT_Tensor& y, WeightLayout layout) const {
  if (!Supports(MNT_OP_GEMM_BIAS_GELU)) {
    MNT_RETURN_IF_ERROR(Linear(x, w, b, pre, layout));
    return Activation(MNT_ACTIVATION_GELU_TANH, pre, y);
  }
  MNT_GemmParams p{};
  p.struct_size = MNT_GemmParams_STRUCT_SIZE;
  p.trans_b = layout == WeightLayout::kOutIn ? 1 : 0;
  p.alpha = 1.0f;
  p.compute = matmul_compute_;
  return Run(MNT_OP_GEMM_BIAS_GELU, {x, w, b}, {y, pre}, &p);
}

Status Ops::LinearBackwardThroughGelu(const MNT_Tensor& dy, const MNT_Tensor& w,
                                      const MNT_Tensor& pre,
                                      const MNT_Tensor& dpre,
                                      const MNT_Tensor& db, bool accumulate,
                                      WeightLayout layout) const {
  // dx = dy·W for [out, in] weights, dy·Wᵀ for [in, out].
  const bool trans_w = layout == WeightLayout::kInOut;
  if (!Supports(MNT_OP_GEMM_DGELU)) {
    MNT_RETURN_IF_ERROR(LayerGemm(w, {dy, sdk::kFp8GradOutput, true},
                                  {w, sdk::kFp8Weight, false}, std::nullopt, dpre, false,
                                  trans_w, false));
    MNT_RETURN_IF_ERROR(
        ActivationBackward(MNT_ACTIVATION_GELU_TANH, pre, dpre, dpre));
    const MNT_AccumulateParams p = AccumulateParams(accumulate);
    return Run(MNT_OP_BIAS_GRAD, {dpre}, {db}, &p);
  }
  const MNT_GemmEpilogueParams p = EpilogueParams(false, trans_w, 0.0f, accumulate);
  return Run(MNT_OP_GEMM_DGELU, {dy, w, pre}, {dpre, db}, &p);
}

Status Ops::LinearBackward(const MNT_Tensor& x, const MNT_Tensor& w,
                           const MNT_Tensor& dy, const MNT_Tensor& dw,
                           const OptionalTensor& db, const OptionalTensor& dx,
                           bool accumulate, WeightLayout layout) const {
  const bool out_in = layout == WeightLayout::kOutIn;
  // dW [out, in] = dyᵀ·x, or [in, out] = xᵀ·dy.
  if (out_in && db && Supports(MNT_OP_GEMM_BIAS_GRAD)) {
    // db = the rows of dy summed = the bias gradient of GEMM's A (dy).
    const MNT_GemmEpilogueParams p =
        EpilogueParams(true, false, accumulate ? 1.0f : 0.0f, accumulate);
    MNT_RETURN_IF_ERROR(Run(MNT_OP_GEMM_BIAS_GRAD, {dy, x}, {dw, *db}, &p));
    if (!dx) return Status::Ok();
    return Gemm(dy, w, std::nullopt, *dx, false, false, false);
  }
  // In FP8 the backward measures dy and quantizes x and W again with the
  // scales their forward used (fp8_gemms.h).
  const Fp8Operand fx{x, sdk::kFp8Input, false}, fw{w, sdk::kFp8Weight, false},
      fdy{dy, sdk::kFp8GradOutput, true};
  if (out_in) {
    MNT_RETURN_IF_ERROR(LayerGemm(w, fdy, fx, std::nullopt, dw, true, false, accumulate));
  } else {
    MNT_RETURN_IF_ERROR(LayerGemm(w, fx, fdy, std::nullopt, dw, true, false, accumulate));
  }
  if (db) {
    const MNT_AccumulateParams p = AccumulateParams(accumulate);
    MNT_RETURN_IF_ERROR(Run(MNT_OP_BIAS_GRAD, {dy}, {*db}, &p));
  }
  if (!dx) return Status::Ok();
  // dx = dy·W, or dy·Wᵀ.
  return LayerGemm(w, fdy, fw, std::nullopt, *dx, false, !out_in, false);
}

Status Ops::Activation(MNT_Activation act, const MNT_Tensor& x,
                       const MNT_Tensor& y) const {
  const MNT_ActivationParams p = ActivationParams(act);
  return Run(MNT_OP_ACTIVATION_FORWARD, {x}, {y}, &p);
}

Status Ops::ActivationBackward(MNT_Activation act, const MNT_Tensor& x,
                               const MNT_Tensor& dy,
                               const MNT_Tensor& dx) const {
  const MNT_ActivationParams p = ActivationParams(act);
  return Run(MNT_OP_ACTIVATION_BACKWARD, {x, dy}, {dx}, &p);
}

Status Ops::Add(const MNT_Tensor& a, const MNT_Tensor& b,
                const MNT_Tensor& out) const {
  const MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  return Run(MNT_OP_ADD, {a, b}, {out}, &p);
}

Status Ops::Embedding(const MNT_Tensor& table, const MNT_Tensor& ids,
                      const MNT_Tensor& out) const {
  return Run(MNT_OP_EMBEDDING_FORWARD, {table, ids}, {out});
}

Status Ops::EmbeddingBackward(const MNT_Tensor& dout, const MNT_Tensor& ids,
                              const MNT_Tensor& dtable, bool accumulate) const {
  const MNT_AccumulateParams p = AccumulateParams(accumulate);
  return Run(MNT_OP_EMBEDDING_BACKWARD, {dout, ids}, {dtable}, &p);
}

Status Ops::LayerNorm(const MNT_Tensor& x, const MNT_Tensor& weight,
                      const MNT_Tensor& bias, const LayerNormOutput& out,
                      float epsilon) const {
  const MNT_LayerNormParams p = LayerNormParams(epsilon, false);
  return Run(MNT_OP_LAYERNORM_FORWARD, {x, weight, bias},
             {out.y, out.mean, out.rstd}, &p);
}

Status Ops::LayerNormBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                              const MNT_Tensor& weight,
                              const LayerNormOutput& saved,
                              const MNT_Tensor& dx, const MNT_Tensor& dweight,
                              const MNT_Tensor& dbias, bool accumulate,
                              float epsilon) const {
  const MNT_LayerNormParams p = LayerNormParams(epsilon, accumulate);
  return Run(MNT_OP_LAYERNORM_BACKWARD,
             {dy, x, weight, saved.mean, saved.rstd}, {dx, dweight, dbias}, &p);
}

Status Ops::ResidualLayerNorm(const MNT_Tensor& a, const MNT_Tensor& b,
                              const MNT_Tensor& weight, const MNT_Tensor& bias,
                              const MNT_Tensor& sum, const LayerNormOutput& out,
                              float epsilon) const {
  const MNT_LayerNormParams p = LayerNormParams(epsilon, false);
  if (Supports(MNT_OP_RESIDUAL_LAYERNORM_FORWARD)) {
    return Run(MNT_OP_RESIDUAL_LAYERNORM_FORWARD, {a, b, weight, bias},
               {sum, out.y, out.mean, out.rstd}, &p);
  }
  MNT_RETURN_IF_ERROR(Add(a, b, sum));
  return LayerNorm(sum, weight, bias, out, epsilon);
}

Status Ops::LayerNormBackwardAdd(const MNT_Tensor& dy, const MNT_Tensor& x,
                                 const MNT_Tensor& weight,
                                 const LayerNormOutput& saved,
                                 const MNT_Tensor& scratch,
                                 const MNT_Tensor& dresidual,
                                 const MNT_Tensor& dweight, const MNT_Tensor& dbias,
                                 bool accumulate, float epsilon) const {
  if (Supports(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD)) {
    const MNT_LayerNormParams p = LayerNormParams(epsilon, accumulate);
    return Run(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD,
               {dy, x, weight, saved.mean, saved.rstd, dresidual},
               {dresidual, dweight, dbias}, &p);
  }
  MNT_RETURN_IF_ERROR(LayerNormBackward(dy, x, weight, saved, scratch, dweight,
                                        dbias, accumulate, epsilon));
  return Add(dresidual, scratch, dresidual);
}

Status Ops::CausalSelfAttention(const MNT_Tensor& qkv, int64_t batch,
                                int64_t num_heads, const MNT_Tensor& y,
                                const MNT_Tensor& lse) const {
  const MNT_AttentionParams p = CausalAttentionParams(num_heads, matmul_compute_);
  return Run(MNT_OP_ATTENTION_FORWARD, {Batched(qkv, batch)},
             {Batched(y, batch), lse}, &p);
}

Status Ops::CausalSelfAttentionBackward(const MNT_Tensor& dy,
                                        const MNT_Tensor& qkv,
                                        const MNT_Tensor& y,
                                        const MNT_Tensor& lse, int64_t batch,
                                        int64_t num_heads,
                                        const MNT_Tensor& dqkv) const {
  const MNT_AttentionParams p = CausalAttentionParams(num_heads, matmul_compute_);
  return Run(MNT_OP_ATTENTION_BACKWARD,
             {Batched(dy, batch), Batched(qkv, batch), Batched(y, batch), lse},
             {Batched(dqkv, batch)}, &p);
}

MNT_Conv2dParams Ops::ConvParams(const Conv2dSpec& s, bool accumulate) const {
  return {MNT_Conv2dParams_STRUCT_SIZE,
          s.pad_h,
          s.pad_w,
          s.stride_h,
          s.stride_w,
          s.dilation_h,
          s.dilation_w,
          s.groups,
          matmul_compute_,
          accumulate ? 1 : 0};
}

Status Ops::Conv2d(const MNT_Tensor& x, const MNT_Tensor& w,
                   const MNT_Tensor& y, const Conv2dSpec& spec) const {
  const MNT_Conv2dParams p = ConvParams(spec, false);
  return Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p);
}

Status Ops::Conv2dBackwardData(const MNT_Tensor& dy, const MNT_Tensor& w,
                               const MNT_Tensor& dx, const Conv2dSpec& spec,
                               bool accumulate) const {
  const MNT_Conv2dParams p = ConvParams(spec, accumulate);
  return Run(MNT_OP_CONV2D_BACKWARD_DATA, {dy, w}, {dx}, &p);
}

Status Ops::Conv2dBackwardFilter(const MNT_Tensor& dy, const MNT_Tensor& x,
                                 const MNT_Tensor& dw, const Conv2dSpec& spec,
                                 bool accumulate) const {
  const MNT_Conv2dParams p = ConvParams(spec, accumulate);
  return Run(MNT_OP_CONV2D_BACKWARD_FILTER, {dy, x}, {dw}, &p);
}

Status Ops::Pool2d(const MNT_Tensor& x, const MNT_Tensor& y,
                   const Pool2dSpec& spec) const {
  const MNT_Pool2dParams p = PoolParams(spec);
  return Run(MNT_OP_POOL2D_FORWARD, {x}, {y}, &p);
}

Status Ops::Pool2dBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                           const MNT_Tensor& dx, const Pool2dSpec& spec) const {
  const MNT_Pool2dParams p = PoolParams(spec);
  return Run(MNT_OP_POOL2D_BACKWARD, {dy, x}, {dx}, &p);
}

Status Ops::BatchNorm(const MNT_Tensor& x, const MNT_Tensor& gamma,
                      const MNT_Tensor& beta, const MNT_Tensor& y,
                      const BatchNormStats& stats, const BatchNormSpec& spec,
                      bool training) const {
  const MNT_BatchNormParams p = BatchNormParams(spec, training, false);
  std::vector<MNT_Tensor> out = {y, stats.running_mean, stats.running_var};
  if (training) {
    out.push_back(stats.saved_mean);
    out.push_back(stats.saved_invstd);
  }
  return Run(MNT_OP_BATCHNORM_FORWARD, {x, gamma, beta}, out, &p);
}

Status Ops::BatchNormBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                              const MNT_Tensor& gamma,
                              const BatchNormStats& stats,
                              const MNT_Tensor& dx, const MNT_Tensor& dgamma,
                              const MNT_Tensor& dbeta,
                              const BatchNormSpec& spec,
                              bool accumulate) const {
  const MNT_BatchNormParams p = BatchNormParams(spec, true, accumulate);
  return Run(MNT_OP_BATCHNORM_BACKWARD,
             {dy, x, gamma, stats.saved_mean, stats.saved_invstd},
             {dx, dgamma, dbeta}, &p);
}

Status Ops::CrossEntropyLoss(const MNT_Tensor& logits,
                             const MNT_Tensor& targets, int64_t num_classes,
                             const MNT_Tensor& losses,
                             const MNT_Tensor& loss_out,
                             const OptionalTensor& correct_out) const {
  // Loss only: dlogits need Backward's loss multiplier, and forming them
  // there rounds (softmax - onehot) * scale / B straight into the 16-bit
  // dtype instead of rounding an unscaled, possibly underflowing, value.
  const MNT_CrossEntropyParams ce = CrossEntropyParams(1.0f, num_classes);
  MNT_RETURN_IF_ERROR(Run(MNT_OP_CROSS_ENTROPY, {logits, targets}, {losses}, &ce));
  const MNT_ReduceParams mean{MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_MEAN};
  MNT_RETURN_IF_ERROR(Run(MNT_OP_REDUCE, {losses}, {loss_out}, &mean));
  if (!correct_out) return Status::Ok();
  return Run(MNT_OP_COUNT_CORRECT, {logits, targets}, {*correct_out}, &ce);
}

GradScale MeanLossGradScale(float loss_multiplier, const MNT_Tensor* loss_multiplier_device,
                            int64_t count) {
  const float inverse = 1.0f / static_cast<float>(count);
  if (loss_multiplier_device != nullptr) return GradScale{inverse, loss_multiplier_device};
  return GradScale{loss_multiplier * inverse, nullptr};
}

Status Ops::CrossEntropyBackward(const MNT_Tensor& logits,
                                 const MNT_Tensor& targets,
                                 int64_t num_classes, GradScale grad_scale,
                                 const MNT_Tensor& losses,
                                 const MNT_Tensor& dlogits) const {
  // A backend without CROSS_ENTROPY's in[2] (before ABI 1.6) refuses a third
  // input: the multiplier is read to the host here (a sync, only there).
  if (grad_scale.device != nullptr &&
      !sdk::HasCapability(client_.plugin(), MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER)) {
    float m = 0;
    MNT_RETURN_IF_ERROR(client_.ToHost(&m, grad_scale.device->data, sizeof(float)));
    grad_scale = GradScale{m * grad_scale.host, nullptr};
  }
  const MNT_CrossEntropyParams ce = CrossEntropyParams(grad_scale.host, num_classes);
  std::vector<MNT_Tensor> inputs{logits, targets};
  if (grad_scale.device != nullptr) inputs.push_back(*grad_scale.device);
  return Run(MNT_OP_CROSS_ENTROPY, inputs, {losses, dlogits}, &ce);
}

Status Ops::Scale(const MNT_Tensor& x, float alpha, const MNT_Tensor& out) const {
  const MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, alpha, 0.0f};
  return Run(MNT_OP_ADD, {x}, {out}, &p);
}

Status Ops::CrossEntropyBackwardInPlace(const MNT_Tensor& logits,
                                        const MNT_Tensor& targets,
                                        int64_t num_classes, GradScale grad_scale,
                                        const MNT_Tensor& losses) const {
  // FUSED_CLASSIFIER came with ABI 1.6, and with it the optional device
  // multiplier in[1]: every backend that has the op takes it.
  const MNT_CrossEntropyParams ce = CrossEntropyParams(grad_scale.host, num_classes);
  std::vector<MNT_Tensor> inputs{targets};
  if (grad_scale.device != nullptr) inputs.push_back(*grad_scale.device);
  return Run(MNT_OP_FUSED_CLASSIFIER, inputs, {logits, losses}, &ce);
}

}  // namespace mnt::models
