// Mantissa models: the backend's kernels as typed calls, so a network reads
// like its architecture (llm.c's gpt2_forward) instead of a list of
// MNT_Backend_Run argument structs.
//
// Every call takes MNT_Tensor views (see views.h) and issues exactly the
// backend ops its comment names, with the params struct filled here, once.
// Activations are [rows, width] matrices; ops that need another layout
// (attention's [B, T, 3C]) reshape inside.
//
// Ops also holds the backend's answers to Backend_GetOpSupport, asked once
// when the model is created. A fused kernel (say GEMM with a GELU epilogue)
// is added here and nowhere else: Create() asks for its op as well (an
// unsupported or unknown op is simply not used), and the facade call
// (say LinearGelu) issues the fused op when Supports() says so and the two
// plain ops otherwise, so networks never branch on backend features.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_OPS_H_
#define MANTISSA_PLUGINS_SDK_MODEL_OPS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/model/fp8_gemms.h"
#include "plugins/sdk/model/lora.h"
#include "plugins/sdk/model/views.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

using OptionalTensor = std::optional<MNT_Tensor>;

// A borrowed tensor that may be NULL (e.g. Model_Forward's correct_out).
inline OptionalTensor Optional(const MNT_Tensor* t) {
  return t == nullptr ? std::nullopt : OptionalTensor(*t);
}

// PyTorch's nn.LayerNorm default.
inline constexpr float kLayerNormEpsilon = 1e-5f;

// What a layer norm forward writes and its backward reads.
struct LayerNormOutput {
  MNT_Tensor y;     // [N, C], activation dtype
  MNT_Tensor mean;  // F32 [N]
  MNT_Tensor rstd;  // F32 [N]
};

// A 2-D convolution's geometry (the ABI's MNT_Conv2dParams without the
// compute mode, which comes from the precision, and the accumulate flag).
struct Conv2dSpec {
  int32_t pad_h = 0, pad_w = 0;
  int32_t stride_h = 1, stride_w = 1;
  int32_t dilation_h = 1, dilation_w = 1;
  int32_t groups = 1;
};

// A pooling window (MNT_Pool2dParams without its struct_size).
struct Pool2dSpec {
  MNT_PoolKind kind = MNT_POOL_AVG;
  int32_t window_h = 1, window_w = 1;
  int32_t stride_h = 1, stride_w = 1;
  int32_t pad_h = 0, pad_w = 0;
  bool count_include_pad = true;

  // Average over a whole [H, W] plane, giving [N, C, 1, 1].
  static Pool2dSpec GlobalAverage(int64_t height, int64_t width);
};

struct BatchNormSpec {
  float momentum = 0.1f;  // running-statistics update weight (torch's)
  float epsilon = 1e-5f;
};

// A batch norm's F32 [C] statistics: the running ones it owns, and the
// batch ones a training forward saves for the backward.
struct BatchNormStats {
  MNT_Tensor running_mean, running_var;
  MNT_Tensor saved_mean, saved_invstd;
};

// What dlogits are multiplied by: `host`, times the F32 [1] `device` value
// when given (a model's device loss multiplier, ABI 1.6). Either way the
// kernel applies the one fp32 product device[0] * host, so a multiplier m
// gives the same bits as a float or as a tensor holding m.
struct GradScale {
  float host = 1.0f;
  const MNT_Tensor* device = nullptr;
};

// The scale for the gradient of the mean over `count` rows times the
// Backward's loss multiplier: m * (1/count), with m on the host or on the
// device (then formed by the kernel).
GradScale MeanLossGradScale(float loss_multiplier, const MNT_Tensor* loss_multiplier_device,
                            int64_t count);

class Ops {
 public:
  Ops() = default;

  // Asks the backend once about every op in `required`; one it does not
  // support is Unimplemented "<model>: backend '<name>' does not support
  // <OP><note>". GEMMs and convolutions compute in `matmul_compute`.
  static sdk::Status Create(const sdk::BackendClient& client,
                            MNT_ComputeMode matmul_compute,
                            const std::vector<MNT_Op>& required,
                            const std::string& model, const std::string& note,
                            Ops* out);

  // Asks the backend about fused ops a model can do without (ABI 1.6 and
  // later): each one it reports supported is used by the facade calls below,
  // the others (also those whose query fails) are not.
  sdk::Status AskOptional(const std::vector<MNT_Op>& ops);

  // Runs the GEMMs of Linear layers in FP8 (ABI 1.10, fp8_gemms.h): asks
  // the backend for SCALED_CAST and SCALED_GEMM (and FP8_SCALE_UPDATE for
  // current scaling), refusing with "<model>: backend '<name>' does not
  // support <OP> (FP8 GEMMs)". From then on the fused GEMM ops are not used
  // (their epilogues have no FP8 form) and every Linear call whose weight
  // owns a scaling slot quantizes, in the passes fp8() was given tensors.
  sdk::Status EnableFp8(const Fp8GemmConfig& config, const std::string& model);
  // NULL unless EnableFp8 succeeded; shared by copies of this Ops.
  Fp8Gemms* fp8() const { return fp8_.get(); }
  // Whether the facade keeps its own copy of a Linear layer's input for the
  // backward (FP8: the quantized input, per weight matrix with a scaling
  // slot). Then a network need not keep an input that only that layer's
  // GEMMs read: its buffer may be reused once the forward GEMM has read it.
  bool KeepsGemmInputs() const { return fp8_ != nullptr; }

  // Adds LoRA adapters (lora.h) to every Linear call whose weight has one,
  // from then on, for this Ops and every copy of it (the model layer's
  // ModelApi enables them after the network is created, which is why this
  // is const: the adapters live in state the copies share).
  void UseLora(std::unique_ptr<LoraAdapters> lora) const { *lora_ = std::move(lora); }
  // NULL unless UseLora was given adapters.
  LoraAdapters* lora() const { return lora_->get(); }

  // The backend's answer for an op asked about in Create or AskOptional;
  // false otherwise (and for the fused GEMMs once FP8 is on).
  bool Supports(MNT_Op op) const;
  const sdk::BackendClient& client() const { return client_; }

  // --- Memory. ---
  // out = value everywhere (FILL).
  sdk::Status Fill(const MNT_Tensor& out, double value) const;
  // y = x converted to y's dtype (CAST; same element count).
  sdk::Status Cast(const MNT_Tensor& x, const MNT_Tensor& y) const;
  // Device-to-device copy of `from`'s bytes into `to` (same byte size).
  sdk::Status Copy(const MNT_Tensor& from, const MNT_Tensor& to) const;

  // --- Dense layers. ---
  // y = x·Wᵀ + b or x·W + b (one GEMM; b optional); a weight with a LoRA
  // adapter then adds s·(x·Aᵀ)·Bᵀ (two GEMMs, x·Aᵀ kept for the backward).
  sdk::Status Linear(const MNT_Tensor& x, const MNT_Tensor& w,
                     const OptionalTensor& b, const MNT_Tensor& y,
                     WeightLayout layout) const;
  // y = gelu_tanh(pre), pre = x·Wᵀ + b (or x·W + b), both kept for the
  // backward: GEMM_BIAS_GELU when supported (and the weight has no LoRA
  // adapter), else Linear then ACTIVATION.
  sdk::Status LinearGelu(const MNT_Tensor& x, const MNT_Tensor& w,
                         const MNT_Tensor& b, const MNT_Tensor& pre,
                         const MNT_Tensor& y, WeightLayout layout) const;
  // Gradients of Linear from dy, in this order: dW (GEMM), db (BIAS_GRAD)
  // when given, dx (GEMM, overwritten) when given. dW and db are added to
  // when `accumulate`. A weight with a LoRA adapter then adds the adapter's:
  // dB (+)= s·dyᵀ·H (H = x·Aᵀ kept from the forward), dH = s·dy·B,
  // dA (+)= dHᵀ·x and dx += dH·A (four GEMMs). A frozen weight or bias (its gradient's data NULL,
  // ABI 1.13) has no GEMM or BIAS_GRAD issued for it; dx still is. With an [out, in] weight and db, dW and db come from
  // one GEMM_BIAS_GRAD where supported.
  sdk::Status LinearBackward(const MNT_Tensor& x, const MNT_Tensor& w,
                             const MNT_Tensor& dy, const MNT_Tensor& dw,
                             const OptionalTensor& db,
                             const OptionalTensor& dx, bool accumulate,
                             WeightLayout layout) const;
  // The input gradient of a Linear layer whose input was gelu_tanh(pre),
  // taken through the GELU: dpre = gelu'(pre) * (dy·W) (dy·Wᵀ for [in, out]
  // weights), overwritten, and its bias gradient db (+)= the column sums of
  // dpre. GEMM_DGELU when supported, else GEMM, ACTIVATION_BACKWARD,
  // BIAS_GRAD; with a LoRA adapter on W the unfused path, dpre taking the
  // adapter's input gradient (s·dy·B)·A before the GELU's.
  sdk::Status LinearBackwardThroughGelu(const MNT_Tensor& dy,
                                        const MNT_Tensor& w,
                                        const MNT_Tensor& pre,
                                        const MNT_Tensor& dpre,
                                        const MNT_Tensor& db, bool accumulate,
                                        WeightLayout layout) const;
  // y = act(x); y may be x.
  sdk::Status Activation(MNT_Activation act, const MNT_Tensor& x,
                         const MNT_Tensor& y) const;
  // dx = act'(x) * dy; dx may be dy.
  sdk::Status ActivationBackward(MNT_Activation act, const MNT_Tensor& x,
                                 const MNT_Tensor& dy,
                                 const MNT_Tensor& dx) const;
  // out = alpha * x, rounded once into out's dtype; out may be x (ADD).
  sdk::Status Scale(const MNT_Tensor& x, float alpha, const MNT_Tensor& out) const;
  // out = a + b, rounded once into out's dtype; out may be a or b (the
  // residual add, and gradient accumulation across dtypes).
  sdk::Status Add(const MNT_Tensor& a, const MNT_Tensor& b,
                  const MNT_Tensor& out) const;

  // --- Transformer layers. ---
  // out [N, C] = rows of table [V, C] picked by ids I32 [N].
  sdk::Status Embedding(const MNT_Tensor& table, const MNT_Tensor& ids,
                        const MNT_Tensor& out) const;
  // dtable (+)= dout's rows scattered by ids, in a deterministic order.
  sdk::Status EmbeddingBackward(const MNT_Tensor& dout, const MNT_Tensor& ids,
                                const MNT_Tensor& dtable,
                                bool accumulate) const;
  sdk::Status LayerNorm(const MNT_Tensor& x, const MNT_Tensor& weight,
                        const MNT_Tensor& bias, const LayerNormOutput& out,
                        float epsilon = kLayerNormEpsilon) const;
  // dx is overwritten; dweight and dbias are added to when `accumulate`.
  sdk::Status LayerNormBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                                const MNT_Tensor& weight,
                                const LayerNormOutput& saved,
                                const MNT_Tensor& dx, const MNT_Tensor& dweight,
                                const MNT_Tensor& dbias, bool accumulate,
                                float epsilon = kLayerNormEpsilon) const;
  // sum = a + b (rounded into sum's dtype; sum may be a or b), then the
  // layer norm of sum into out: RESIDUAL_LAYERNORM_FORWARD where supported,
  // else ADD and LAYERNORM_FORWARD (the same bits).
  sdk::Status ResidualLayerNorm(const MNT_Tensor& a, const MNT_Tensor& b,
                                const MNT_Tensor& weight, const MNT_Tensor& bias,
                                const MNT_Tensor& sum, const LayerNormOutput& out,
                                float epsilon = kLayerNormEpsilon) const;
  // dresidual += the layer norm's input gradient (x: the norm's input):
  // RESIDUAL_LAYERNORM_BACKWARD where supported (one rounding), else
  // LAYERNORM_BACKWARD into `scratch` (x's shape) and ADD. dweight and dbias
  // as LayerNormBackward.
  sdk::Status LayerNormBackwardAdd(const MNT_Tensor& dy, const MNT_Tensor& x,
                                   const MNT_Tensor& weight,
                                   const LayerNormOutput& saved,
                                   const MNT_Tensor& scratch,
                                   const MNT_Tensor& dresidual,
                                   const MNT_Tensor& dweight, const MNT_Tensor& dbias,
                                   bool accumulate,
                                   float epsilon = kLayerNormEpsilon) const;
  // Causal multi-head self-attention over `batch` sequences: qkv [B*T, 3C]
  // (rows packed q|k|v) -> y [B*T, C], with lse F32 [B, H, T] saved for
  // the backward.
  sdk::Status CausalSelfAttention(const MNT_Tensor& qkv, int64_t batch,
                                  int64_t num_heads, const MNT_Tensor& y,
                                  const MNT_Tensor& lse) const;
  // dqkv [B*T, 3C] (overwritten) from dy [B*T, C] and the forward's tensors.
  sdk::Status CausalSelfAttentionBackward(const MNT_Tensor& dy,
                                          const MNT_Tensor& qkv,
                                          const MNT_Tensor& y,
                                          const MNT_Tensor& lse, int64_t batch,
                                          int64_t num_heads,
                                          const MNT_Tensor& dqkv) const;

  // --- Convolutional layers (NCHW). ---
  sdk::Status Conv2d(const MNT_Tensor& x, const MNT_Tensor& w,
                     const MNT_Tensor& y, const Conv2dSpec& spec) const;
  sdk::Status Conv2dBackwardData(const MNT_Tensor& dy, const MNT_Tensor& w,
                                 const MNT_Tensor& dx, const Conv2dSpec& spec,
                                 bool accumulate) const;
  sdk::Status Conv2dBackwardFilter(const MNT_Tensor& dy, const MNT_Tensor& x,
                                   const MNT_Tensor& dw, const Conv2dSpec& spec,
                                   bool accumulate) const;
  sdk::Status Pool2d(const MNT_Tensor& x, const MNT_Tensor& y,
                     const Pool2dSpec& spec) const;
  // dx (overwritten) from dy and the forward's input x.
  sdk::Status Pool2dBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                             const MNT_Tensor& dx,
                             const Pool2dSpec& spec) const;
  // Training: normalise with the batch statistics, update the running ones
  // and save the batch ones; otherwise normalise with the running ones.
  sdk::Status BatchNorm(const MNT_Tensor& x, const MNT_Tensor& gamma,
                        const MNT_Tensor& beta, const MNT_Tensor& y,
                        const BatchNormStats& stats, const BatchNormSpec& spec,
                        bool training) const;
  // Backward of a training forward: dx overwritten, dgamma and dbeta added
  // to when `accumulate`.
  sdk::Status BatchNormBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                                const MNT_Tensor& gamma,
                                const BatchNormStats& stats,
                                const MNT_Tensor& dx, const MNT_Tensor& dgamma,
                                const MNT_Tensor& dbeta,
                                const BatchNormSpec& spec,
                                bool accumulate) const;

  // --- Classification loss over the first `num_classes` columns. ---
  // Per-row losses F32 [B] of logits [B, V] against targets I32 [B], their
  // mean into loss_out F32 [1], and, when given, the number of rows whose
  // argmax is the target into correct_out F32 [1].
  sdk::Status CrossEntropyLoss(const MNT_Tensor& logits,
                               const MNT_Tensor& targets, int64_t num_classes,
                               const MNT_Tensor& losses,
                               const MNT_Tensor& loss_out,
                               const OptionalTensor& correct_out) const;
  // dlogits = (softmax - onehot) * grad_scale (losses are rewritten too).
  // A device scale goes to the kernel as CROSS_ENTROPY's in[2]; a backend
  // without MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER (one older than ABI
  // 1.6) takes none, so for it the value is read to the host (a sync, the
  // price of the old backend).
  sdk::Status CrossEntropyBackward(const MNT_Tensor& logits,
                                   const MNT_Tensor& targets,
                                   int64_t num_classes, GradScale grad_scale,
                                   const MNT_Tensor& losses,
                                   const MNT_Tensor& dlogits) const;
  // The same written over the logits themselves (FUSED_CLASSIFIER: one
  // pass, no dlogits buffer), a device scale as its in[1]. Only where
  // Supports(MNT_OP_FUSED_CLASSIFIER); `logits` then holds dlogits.
  sdk::Status CrossEntropyBackwardInPlace(const MNT_Tensor& logits,
                                          const MNT_Tensor& targets,
                                          int64_t num_classes, GradScale grad_scale,
                                          const MNT_Tensor& losses) const;

 private:
  // Backend_GetOpSupport for `op`; a supported op is remembered for Supports().
  sdk::Status Ask(MNT_Op op, bool* supported);
  sdk::Status Run(MNT_Op op, const std::vector<MNT_Tensor>& inputs,
                  const std::vector<MNT_Tensor>& outputs,
                  const void* params = nullptr) const;
  sdk::Status Gemm(const MNT_Tensor& a, const MNT_Tensor& b,
                   const OptionalTensor& bias, const MNT_Tensor& c,
                   bool trans_a, bool trans_b, bool accumulate) const;
  // c = alpha·op(a)·op(b) + beta·c (LoRA's scaled products).
  sdk::Status ScaledGemm(const MNT_Tensor& a, const MNT_Tensor& b, const MNT_Tensor& c,
                         bool trans_a, bool trans_b, float alpha, float beta) const;
  // The adapter of `w` for a call in `layout`, nullopt without one; a layout
  // other than the weight's spec declares is an error.
  sdk::Status FindAdapter(const MNT_Tensor& w, WeightLayout layout,
                          std::optional<LoraAdapter>* out) const;
  // y += s·(x·Aᵀ)·Bᵀ, keeping x·Aᵀ.
  sdk::Status LoraForward(const LoraAdapter& adapter, const MNT_Tensor& x,
                          const MNT_Tensor& y) const;
  // dB, dA (each when its data is not NULL; added to when `accumulate`) and
  // dx += dH·A when given.
  sdk::Status LoraBackward(const LoraAdapter& adapter, const MNT_Tensor& x, const MNT_Tensor& dy,
                           const OptionalTensor& dx, bool accumulate) const;
  // LinearBackward without the adapter.
  sdk::Status BaseLinearBackward(const MNT_Tensor& x, const MNT_Tensor& w, const MNT_Tensor& dy,
                                 const MNT_Tensor& dw, const OptionalTensor& db,
                                 const OptionalTensor& dx, bool accumulate,
                                 WeightLayout layout) const;
  // A GEMM of the Linear layer whose weight is `w`: in FP8 when the pass
  // has FP8 GEMMs and `w` owns a scaling slot, else Gemm in the precision's
  // compute mode.
  sdk::Status LayerGemm(const MNT_Tensor& w, const Fp8Operand& a, const Fp8Operand& b,
                        const OptionalTensor& bias, const MNT_Tensor& c, bool trans_a,
                        bool trans_b, bool accumulate) const;
  MNT_GemmEpilogueParams EpilogueParams(bool trans_a, bool trans_b, float beta,
                                        bool accumulate_bias_grad) const;
  MNT_Conv2dParams ConvParams(const Conv2dSpec& spec, bool accumulate) const;

  // Frozen parameters (ABI 1.13, MNT_CAPABILITY_MODEL_FROZEN_PARAMS): a
  // gradient tensor with data NULL wants nothing written. Ops whose
  // backend op writes a parameter's gradient together with the input
  // gradient (layer norm, batch norm) write it into this scratch instead,
  // grown to the largest such gradient (a norm's [C]: bytes, not a weight
  // matrix); shared by copies of this Ops.
  MNT_Tensor GradientSink(const MNT_Tensor& grad) const;

  sdk::BackendClient client_;
  std::shared_ptr<sdk::DeviceBuffer> gradient_sink_ = std::make_shared<sdk::DeviceBuffer>();
  MNT_ComputeMode matmul_compute_ = MNT_COMPUTE_F32;
  std::vector<bool> supported_;  // indexed by MNT_Op
  std::shared_ptr<Fp8Gemms> fp8_;
  std::shared_ptr<std::unique_ptr<LoraAdapters>> lora_ =
      std::make_shared<std::unique_ptr<LoraAdapters>>();
};

// Implementation (header-only: the SDK ships no library).

namespace detail {


// The same bytes seen with other dims (attention's [B, T, width] view of a
// [B*T, width] matrix).
inline MNT_Tensor Batched(const MNT_Tensor& rows, int64_t batch) {
  return Reshape(rows, {batch, rows.dims[0] / batch, rows.dims[1]});
}

inline MNT_AccumulateParams AccumulateParams(bool accumulate) {
  return {MNT_AccumulateParams_STRUCT_SIZE, accumulate ? 1 : 0};
}

inline MNT_ActivationParams ActivationParams(MNT_Activation act) {
  return {MNT_ActivationParams_STRUCT_SIZE, act};
}

inline MNT_LayerNormParams LayerNormParams(float epsilon, bool accumulate) {
  return {MNT_LayerNormParams_STRUCT_SIZE, epsilon, accumulate ? 1 : 0};
}

// scale 0: the backend's 1/sqrt(head size). The products in TF32 when the
// precision's GEMMs are (ABI 1.8; a 1.2-1.7 backend ignores the field and
// computes them in fp32); 16-bit operands are exact in fp32 products anyway.
inline MNT_AttentionParams CausalAttentionParams(int64_t num_heads, MNT_ComputeMode matmul_compute) {
  return {MNT_AttentionParams_STRUCT_SIZE, static_cast<int32_t>(num_heads), 1, 0.0f,
          matmul_compute == MNT_COMPUTE_TF32 ? MNT_COMPUTE_TF32 : MNT_COMPUTE_F32};
}

inline MNT_Pool2dParams PoolParams(const Pool2dSpec& s) {
  return {MNT_Pool2dParams_STRUCT_SIZE, s.kind,      s.window_h,
          s.window_w,                   s.stride_h,  s.stride_w,
          s.pad_h,                      s.pad_w,     s.count_include_pad ? 1 : 0};
}

inline MNT_BatchNormParams BatchNormParams(const BatchNormSpec& s, bool training, bool accumulate) {
  return {MNT_BatchNormParams_STRUCT_SIZE, training ? 1 : 0, s.momentum,
          s.epsilon, accumulate ? 1 : 0};
}

inline MNT_CrossEntropyParams CrossEntropyParams(float grad_scale, int64_t num_classes) {
  MNT_CrossEntropyParams p{};
  p.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  p.grad_scale = grad_scale;
  p.num_classes = num_classes;
  return p;
}

}  // namespace detail

inline Pool2dSpec Pool2dSpec::GlobalAverage(int64_t height, int64_t width) {
  Pool2dSpec s;
  s.kind = MNT_POOL_AVG;
  s.window_h = static_cast<int32_t>(height);
  s.window_w = static_cast<int32_t>(width);
  return s;
}

inline sdk::Status Ops::Ask(MNT_Op op, bool* supported) {
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
  return sdk::Status::Ok();
}

inline sdk::Status Ops::Create(const sdk::BackendClient& client, MNT_ComputeMode matmul_compute,
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
  return sdk::Status::Ok();
}

inline sdk::Status Ops::AskOptional(const std::vector<MNT_Op>& ops) {
  // Backend_GetOpSupport answers for every op, whatever the backend's minor:
  // one that never heard of an op reports it unsupported. A failing query
  // of an op the model can do without is a "no" too (an older backend may
  // refuse a value it does not know), as sdk::BackendInstance::Supports.
  for (MNT_Op op : ops) {
    bool supported = false;
    (void)Ask(op, &supported);
  }
  return sdk::Status::Ok();
}

inline sdk::Status Ops::EnableFp8(const Fp8GemmConfig& config, const std::string& model) {
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
  return sdk::Status::Ok();
}

inline bool Ops::Supports(MNT_Op op) const {
  if (fp8_ != nullptr && (op == MNT_OP_GEMM_BIAS_GELU || op == MNT_OP_GEMM_DGELU ||
                          op == MNT_OP_GEMM_BIAS_GRAD)) {
    return false;
  }
  const size_t index = static_cast<size_t>(op);
  return index < supported_.size() && supported_[index];
}

inline sdk::Status Ops::Run(MNT_Op op, const std::vector<MNT_Tensor>& inputs,
                            const std::vector<MNT_Tensor>& outputs, const void* params) const {
  return client_.Run(op, inputs, outputs, params);
}

inline sdk::Status Ops::Fill(const MNT_Tensor& out, double value) const {
  const MNT_FillParams p{MNT_FillParams_STRUCT_SIZE, value};
  return Run(MNT_OP_FILL, {}, {out}, &p);
}

inline sdk::Status Ops::Cast(const MNT_Tensor& x, const MNT_Tensor& y) const {
  return Run(MNT_OP_CAST, {x}, {y});
}

inline sdk::Status Ops::Copy(const MNT_Tensor& from, const MNT_Tensor& to) const {
  const size_t bytes = sdk::SizeBytes(to);
  if (sdk::SizeBytes(from) != bytes) {
    return sdk::Internal("copy of " + sdk::Describe(from) + " into " +
                         sdk::Describe(to) + ": sizes differ");
  }
  return client_.Copy(to.data, from.data, bytes, MNT_COPY_DEVICE_TO_DEVICE);
}

inline sdk::Status Ops::Gemm(const MNT_Tensor& a, const MNT_Tensor& b, const OptionalTensor& bias,
                             const MNT_Tensor& c, bool trans_a, bool trans_b,
                             bool accumulate) const {
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

inline sdk::Status Ops::LayerGemm(const MNT_Tensor& w, const Fp8Operand& a, const Fp8Operand& b,
                                  const OptionalTensor& bias, const MNT_Tensor& c, bool trans_a,
                                  bool trans_b, bool accumulate) const {
  if (fp8_ != nullptr) {
    if (const std::optional<int64_t> slot = fp8_->SlotOf(w)) {
      return fp8_->Gemm(a, b, bias, c, trans_a, trans_b, accumulate, *slot);
    }
  }
  return Gemm(a.x, b.x, bias, c, trans_a, trans_b, accumulate);
}

inline sdk::Status Ops::Linear(const MNT_Tensor& x, const MNT_Tensor& w, const OptionalTensor& b,
                               const MNT_Tensor& y, WeightLayout layout) const {
  std::optional<LoraAdapter> adapter;
  MNT_RETURN_IF_ERROR(FindAdapter(w, layout, &adapter));
  MNT_RETURN_IF_ERROR(LayerGemm(w, {x, sdk::kFp8Input, true}, {w, sdk::kFp8Weight, true}, b, y,
                                false, layout == WeightLayout::kOutIn, false));
  if (!adapter) return sdk::Status::Ok();
  return LoraForward(*adapter, x, y);
}

inline sdk::Status Ops::ScaledGemm(const MNT_Tensor& a, const MNT_Tensor& b, const MNT_Tensor& c,
                                   bool trans_a, bool trans_b, float alpha, float beta) const {
  MNT_GemmParams p{};
  p.struct_size = MNT_GemmParams_STRUCT_SIZE;
  p.trans_a = trans_a ? 1 : 0;
  p.trans_b = trans_b ? 1 : 0;
  p.alpha = alpha;
  p.beta = beta;
  p.compute = matmul_compute_;
  return Run(MNT_OP_GEMM, {a, b}, {c}, &p);
}

inline sdk::Status Ops::FindAdapter(const MNT_Tensor& w, WeightLayout layout,
                                    std::optional<LoraAdapter>* out) const {
  *out = std::nullopt;
  if (lora() == nullptr) return sdk::Status::Ok();
  *out = lora()->Find(w);
  if (*out && (*out)->layout != layout) {
    return sdk::InvalidArgument(sdk::Format(
        "LoRA: a Linear call multiplies %s as %s, but its parameter spec declares %s "
        "(ParamSpec::layout)",
        sdk::Describe(w).c_str(), layout == WeightLayout::kOutIn ? "[out, in]" : "[in, out]",
        layout == WeightLayout::kOutIn ? "[in, out]" : "[out, in]"));
  }
  return sdk::Status::Ok();
}

inline sdk::Status Ops::LoraForward(const LoraAdapter& adapter, const MNT_Tensor& x,
                                    const MNT_Tensor& y) const {
  MNT_Tensor hidden{};
  MNT_RETURN_IF_ERROR(lora()->Hidden(adapter.slot, x.dims[0], x.dtype, &hidden));
  MNT_RETURN_IF_ERROR(ScaledGemm(x, adapter.a, hidden, false, true, 1.0f, 0.0f));
  return ScaledGemm(hidden, adapter.b, y, false, true, lora()->config().scale(), 1.0f);
}

inline sdk::Status Ops::LoraBackward(const LoraAdapter& adapter, const MNT_Tensor& x,
                                     const MNT_Tensor& dy, const OptionalTensor& dx,
                                     bool accumulate) const {
  const float s = lora()->config().scale();
  const float beta = accumulate ? 1.0f : 0.0f;
  const int64_t rows = x.dims[0];
  MNT_Tensor hidden{};
  MNT_RETURN_IF_ERROR(lora()->Hidden(adapter.slot, rows, x.dtype, &hidden));
  // dB [out, r] (+)= s·dyᵀ·H.
  if (adapter.db.data != nullptr) {
    MNT_RETURN_IF_ERROR(ScaledGemm(dy, hidden, adapter.db, true, false, s, beta));
  }
  if (adapter.da.data == nullptr && !dx) return sdk::Status::Ok();
  // dH [rows, r] = s·dy·B.
  MNT_Tensor dhidden{};
  MNT_RETURN_IF_ERROR(lora()->HiddenGrad(rows, dy.dtype, &dhidden));
  MNT_RETURN_IF_ERROR(ScaledGemm(dy, adapter.b, dhidden, false, false, s, 0.0f));
  // dA [r, in] (+)= dHᵀ·x.
  if (adapter.da.data != nullptr) {
    MNT_RETURN_IF_ERROR(ScaledGemm(dhidden, x, adapter.da, true, false, 1.0f, beta));
  }
  if (!dx) return sdk::Status::Ok();
  return ScaledGemm(dhidden, adapter.a, *dx, false, false, 1.0f, 1.0f);
}

inline MNT_GemmEpilogueParams Ops::EpilogueParams(bool trans_a, bool trans_b, float beta,
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

inline sdk::Status Ops::LinearGelu(const MNT_Tensor& x, const MNT_Tensor& w, const MNT_Tensor& b,
                                   const MNT_Tensor& pre, const MNT_Tensor& y,
                                   WeightLayout layout) const {
  std::optional<LoraAdapter> adapter;
  MNT_RETURN_IF_ERROR(FindAdapter(w, layout, &adapter));
  if (!Supports(MNT_OP_GEMM_BIAS_GELU) || adapter) {
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

inline sdk::Status Ops::LinearBackwardThroughGelu(const MNT_Tensor& dy, const MNT_Tensor& w,
                                                  const MNT_Tensor& pre, const MNT_Tensor& dpre,
                                                  const MNT_Tensor& db, bool accumulate,
                                                  WeightLayout layout) const {
  // dx = dy·W for [out, in] weights, dy·Wᵀ for [in, out].
  const bool trans_w = layout == WeightLayout::kInOut;
  std::optional<LoraAdapter> adapter;
  MNT_RETURN_IF_ERROR(FindAdapter(w, layout, &adapter));
  if (!Supports(MNT_OP_GEMM_DGELU) || db.data == nullptr || adapter) {
    MNT_RETURN_IF_ERROR(LayerGemm(w, {dy, sdk::kFp8GradOutput, true},
                                  {w, sdk::kFp8Weight, false}, std::nullopt, dpre, false,
                                  trans_w, false));
    if (adapter) {
      // dpre += (s·dy·B)·A; the adapter's own gradients come from this
      // layer's LinearBackward.
      MNT_Tensor dhidden{};
      MNT_RETURN_IF_ERROR(lora()->HiddenGrad(dy.dims[0], dy.dtype, &dhidden));
      MNT_RETURN_IF_ERROR(ScaledGemm(dy, adapter->b, dhidden, false, false,
                                     lora()->config().scale(), 0.0f));
      MNT_RETURN_IF_ERROR(ScaledGemm(dhidden, adapter->a, dpre, false, false, 1.0f, 1.0f));
    }
    MNT_RETURN_IF_ERROR(
        ActivationBackward(MNT_ACTIVATION_GELU_TANH, pre, dpre, dpre));
    if (db.data == nullptr) return sdk::Status::Ok();  // a frozen bias
    const MNT_AccumulateParams p = detail::AccumulateParams(accumulate);
    return Run(MNT_OP_BIAS_GRAD, {dpre}, {db}, &p);
  }
  const MNT_GemmEpilogueParams p = EpilogueParams(false, trans_w, 0.0f, accumulate);
  return Run(MNT_OP_GEMM_DGELU, {dy, w, pre}, {dpre, db}, &p);
}

inline sdk::Status Ops::LinearBackward(const MNT_Tensor& x, const MNT_Tensor& w,
                                       const MNT_Tensor& dy, const MNT_Tensor& dw,
                                       const OptionalTensor& db, const OptionalTensor& dx,
                                       bool accumulate, WeightLayout layout) const {
  std::optional<LoraAdapter> adapter;
  MNT_RETURN_IF_ERROR(FindAdapter(w, layout, &adapter));
  MNT_RETURN_IF_ERROR(BaseLinearBackward(x, w, dy, dw, db, dx, accumulate, layout));
  if (!adapter) return sdk::Status::Ok();
  return LoraBackward(*adapter, x, dy, dx, accumulate);
}

inline sdk::Status Ops::BaseLinearBackward(const MNT_Tensor& x, const MNT_Tensor& w,
                                           const MNT_Tensor& dy, const MNT_Tensor& dw,
                                           const OptionalTensor& db, const OptionalTensor& dx,
                                           bool accumulate, WeightLayout layout) const {
  const bool out_in = layout == WeightLayout::kOutIn;
  // A frozen weight or bias (ABI 1.13): its gradient's data is NULL.
  const bool want_dw = dw.data != nullptr;
  const bool want_db = db && db->data != nullptr;
  // dW [out, in] = dyᵀ·x, or [in, out] = xᵀ·dy.
  if (out_in && want_dw && want_db && Supports(MNT_OP_GEMM_BIAS_GRAD)) {
    // db = the rows of dy summed = the bias gradient of GEMM's A (dy).
    const MNT_GemmEpilogueParams p =
        EpilogueParams(true, false, accumulate ? 1.0f : 0.0f, accumulate);
    MNT_RETURN_IF_ERROR(Run(MNT_OP_GEMM_BIAS_GRAD, {dy, x}, {dw, *db}, &p));
    if (!dx) return sdk::Status::Ok();
    return Gemm(dy, w, std::nullopt, *dx, false, false, false);
  }
  // In FP8 the backward measures dy and quantizes x and W again with the
  // scales their forward used (fp8_gemms.h).
  const Fp8Operand fx{x, sdk::kFp8Input, false}, fw{w, sdk::kFp8Weight, false},
      fdy{dy, sdk::kFp8GradOutput, true};
  if (want_dw && out_in) {
    MNT_RETURN_IF_ERROR(LayerGemm(w, fdy, fx, std::nullopt, dw, true, false, accumulate));
  } else if (want_dw) {
    MNT_RETURN_IF_ERROR(LayerGemm(w, fx, fdy, std::nullopt, dw, true, false, accumulate));
  }
  if (want_db) {
    const MNT_AccumulateParams p = detail::AccumulateParams(accumulate);
    MNT_RETURN_IF_ERROR(Run(MNT_OP_BIAS_GRAD, {dy}, {*db}, &p));
  }
  if (!dx) return sdk::Status::Ok();
  // dx = dy·W, or dy·Wᵀ.
  return LayerGemm(w, fdy, fw, std::nullopt, *dx, false, !out_in, false);
}

inline sdk::Status Ops::Activation(MNT_Activation act, const MNT_Tensor& x,
                                   const MNT_Tensor& y) const {
  const MNT_ActivationParams p = detail::ActivationParams(act);
  return Run(MNT_OP_ACTIVATION_FORWARD, {x}, {y}, &p);
}

inline sdk::Status Ops::ActivationBackward(MNT_Activation act, const MNT_Tensor& x,
                                           const MNT_Tensor& dy, const MNT_Tensor& dx) const {
  const MNT_ActivationParams p = detail::ActivationParams(act);
  return Run(MNT_OP_ACTIVATION_BACKWARD, {x, dy}, {dx}, &p);
}

inline sdk::Status Ops::Add(const MNT_Tensor& a, const MNT_Tensor& b, const MNT_Tensor& out) const {
  const MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f};
  return Run(MNT_OP_ADD, {a, b}, {out}, &p);
}

inline sdk::Status Ops::Embedding(const MNT_Tensor& table, const MNT_Tensor& ids,
                                  const MNT_Tensor& out) const {
  return Run(MNT_OP_EMBEDDING_FORWARD, {table, ids}, {out});
}

inline sdk::Status Ops::EmbeddingBackward(const MNT_Tensor& dout, const MNT_Tensor& ids,
                                          const MNT_Tensor& dtable, bool accumulate) const {
  if (dtable.data == nullptr) return sdk::Status::Ok();  // a frozen table
  const MNT_AccumulateParams p = detail::AccumulateParams(accumulate);
  return Run(MNT_OP_EMBEDDING_BACKWARD, {dout, ids}, {dtable}, &p);
}

inline sdk::Status Ops::LayerNorm(const MNT_Tensor& x, const MNT_Tensor& weight,
                                  const MNT_Tensor& bias, const LayerNormOutput& out,
                                  float epsilon) const {
  const MNT_LayerNormParams p = detail::LayerNormParams(epsilon, false);
  return Run(MNT_OP_LAYERNORM_FORWARD, {x, weight, bias},
             {out.y, out.mean, out.rstd}, &p);
}

inline sdk::Status Ops::LayerNormBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                                          const MNT_Tensor& weight, const LayerNormOutput& saved,
                                          const MNT_Tensor& dx, const MNT_Tensor& dweight,
                                          const MNT_Tensor& dbias, bool accumulate,
                                          float epsilon) const {
  const MNT_LayerNormParams p = detail::LayerNormParams(epsilon, accumulate);
  return Run(MNT_OP_LAYERNORM_BACKWARD, {dy, x, weight, saved.mean, saved.rstd},
             {dx, GradientSink(dweight), GradientSink(dbias)}, &p);
}

inline sdk::Status Ops::ResidualLayerNorm(const MNT_Tensor& a, const MNT_Tensor& b,
                                          const MNT_Tensor& weight, const MNT_Tensor& bias,
                                          const MNT_Tensor& sum, const LayerNormOutput& out,
                                          float epsilon) const {
  const MNT_LayerNormParams p = detail::LayerNormParams(epsilon, false);
  if (Supports(MNT_OP_RESIDUAL_LAYERNORM_FORWARD)) {
    return Run(MNT_OP_RESIDUAL_LAYERNORM_FORWARD, {a, b, weight, bias},
               {sum, out.y, out.mean, out.rstd}, &p);
  }
  MNT_RETURN_IF_ERROR(Add(a, b, sum));
  return LayerNorm(sum, weight, bias, out, epsilon);
}

inline sdk::Status Ops::LayerNormBackwardAdd(const MNT_Tensor& dy, const MNT_Tensor& x,
                                             const MNT_Tensor& weight, const LayerNormOutput& saved,
                                             const MNT_Tensor& scratch, const MNT_Tensor& dresidual,
                                             const MNT_Tensor& dweight, const MNT_Tensor& dbias,
                                             bool accumulate, float epsilon) const {
  if (Supports(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD)) {
    const MNT_LayerNormParams p = detail::LayerNormParams(epsilon, accumulate);
    return Run(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD,
               {dy, x, weight, saved.mean, saved.rstd, dresidual},
               {dresidual, GradientSink(dweight), GradientSink(dbias)}, &p);
  }
  MNT_RETURN_IF_ERROR(LayerNormBackward(dy, x, weight, saved, scratch, dweight,
                                        dbias, accumulate, epsilon));
  return Add(dresidual, scratch, dresidual);
}

inline sdk::Status Ops::CausalSelfAttention(const MNT_Tensor& qkv, int64_t batch, int64_t num_heads,
                                            const MNT_Tensor& y, const MNT_Tensor& lse) const {
  const MNT_AttentionParams p = detail::CausalAttentionParams(num_heads, matmul_compute_);
  return Run(MNT_OP_ATTENTION_FORWARD, {detail::Batched(qkv, batch)},
             {detail::Batched(y, batch), lse}, &p);
}

inline sdk::Status Ops::CausalSelfAttentionBackward(const MNT_Tensor& dy, const MNT_Tensor& qkv,
                                                    const MNT_Tensor& y, const MNT_Tensor& lse,
                                                    int64_t batch, int64_t num_heads,
                                                    const MNT_Tensor& dqkv) const {
  const MNT_AttentionParams p = detail::CausalAttentionParams(num_heads, matmul_compute_);
  return Run(MNT_OP_ATTENTION_BACKWARD,
             {detail::Batched(dy, batch), detail::Batched(qkv, batch), detail::Batched(y, batch), lse},
             {detail::Batched(dqkv, batch)}, &p);
}

inline MNT_Conv2dParams Ops::ConvParams(const Conv2dSpec& s, bool accumulate) const {
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

inline sdk::Status Ops::Conv2d(const MNT_Tensor& x, const MNT_Tensor& w, const MNT_Tensor& y,
                               const Conv2dSpec& spec) const {
  const MNT_Conv2dParams p = ConvParams(spec, false);
  return Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p);
}

inline sdk::Status Ops::Conv2dBackwardData(const MNT_Tensor& dy, const MNT_Tensor& w,
                                           const MNT_Tensor& dx, const Conv2dSpec& spec,
                                           bool accumulate) const {
  const MNT_Conv2dParams p = ConvParams(spec, accumulate);
  return Run(MNT_OP_CONV2D_BACKWARD_DATA, {dy, w}, {dx}, &p);
}

inline sdk::Status Ops::Conv2dBackwardFilter(const MNT_Tensor& dy, const MNT_Tensor& x,
                                             const MNT_Tensor& dw, const Conv2dSpec& spec,
                                             bool accumulate) const {
  if (dw.data == nullptr) return sdk::Status::Ok();  // a frozen filter
  const MNT_Conv2dParams p = ConvParams(spec, accumulate);
  return Run(MNT_OP_CONV2D_BACKWARD_FILTER, {dy, x}, {dw}, &p);
}

inline sdk::Status Ops::Pool2d(const MNT_Tensor& x, const MNT_Tensor& y,
                               const Pool2dSpec& spec) const {
  const MNT_Pool2dParams p = detail::PoolParams(spec);
  return Run(MNT_OP_POOL2D_FORWARD, {x}, {y}, &p);
}

inline sdk::Status Ops::Pool2dBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                                       const MNT_Tensor& dx, const Pool2dSpec& spec) const {
  const MNT_Pool2dParams p = detail::PoolParams(spec);
  return Run(MNT_OP_POOL2D_BACKWARD, {dy, x}, {dx}, &p);
}

inline sdk::Status Ops::BatchNorm(const MNT_Tensor& x, const MNT_Tensor& gamma,
                                  const MNT_Tensor& beta, const MNT_Tensor& y,
                                  const BatchNormStats& stats, const BatchNormSpec& spec,
                                  bool training) const {
  const MNT_BatchNormParams p = detail::BatchNormParams(spec, training, false);
  std::vector<MNT_Tensor> out = {y, stats.running_mean, stats.running_var};
  if (training) {
    out.push_back(stats.saved_mean);
    out.push_back(stats.saved_invstd);
  }
  return Run(MNT_OP_BATCHNORM_FORWARD, {x, gamma, beta}, out, &p);
}

inline sdk::Status Ops::BatchNormBackward(const MNT_Tensor& dy, const MNT_Tensor& x,
                                          const MNT_Tensor& gamma, const BatchNormStats& stats,
                                          const MNT_Tensor& dx, const MNT_Tensor& dgamma,
                                          const MNT_Tensor& dbeta, const BatchNormSpec& spec,
                                          bool accumulate) const {
  const MNT_BatchNormParams p = detail::BatchNormParams(spec, true, accumulate);
  return Run(MNT_OP_BATCHNORM_BACKWARD,
             {dy, x, gamma, stats.saved_mean, stats.saved_invstd},
             {dx, GradientSink(dgamma), GradientSink(dbeta)}, &p);
}

inline MNT_Tensor Ops::GradientSink(const MNT_Tensor& grad) const {
  if (grad.data != nullptr) return grad;
  const size_t bytes = static_cast<size_t>(sdk::NumElements(grad)) * sdk::DTypeSize(grad.dtype);
  if (gradient_sink_->size() < bytes) {
    // A failed allocation leaves data NULL: the op then refuses its operand.
    *gradient_sink_ = sdk::DeviceBuffer();
    if (!client_.Allocate(bytes, MNT_MEMORY_WORKSPACE, gradient_sink_.get()).ok()) return grad;
  }
  MNT_Tensor sink = grad;
  sink.data = gradient_sink_->data();
  return sink;
}

inline sdk::Status Ops::CrossEntropyLoss(const MNT_Tensor& logits, const MNT_Tensor& targets,
                                         int64_t num_classes, const MNT_Tensor& losses,
                                         const MNT_Tensor& loss_out,
                                         const OptionalTensor& correct_out) const {
  // Loss only: dlogits need Backward's loss multiplier, and forming them
  // there rounds (softmax - onehot) * scale / B straight into the 16-bit
  // dtype instead of rounding an unscaled, possibly underflowing, value.
  const MNT_CrossEntropyParams ce = detail::CrossEntropyParams(1.0f, num_classes);
  MNT_RETURN_IF_ERROR(Run(MNT_OP_CROSS_ENTROPY, {logits, targets}, {losses}, &ce));
  const MNT_ReduceParams mean{MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_MEAN};
  MNT_RETURN_IF_ERROR(Run(MNT_OP_REDUCE, {losses}, {loss_out}, &mean));
  if (!correct_out) return sdk::Status::Ok();
  return Run(MNT_OP_COUNT_CORRECT, {logits, targets}, {*correct_out}, &ce);
}

inline GradScale MeanLossGradScale(float loss_multiplier, const MNT_Tensor* loss_multiplier_device,
                                   int64_t count) {
  const float inverse = 1.0f / static_cast<float>(count);
  if (loss_multiplier_device != nullptr) return GradScale{inverse, loss_multiplier_device};
  return GradScale{loss_multiplier * inverse, nullptr};
}

inline sdk::Status Ops::CrossEntropyBackward(const MNT_Tensor& logits, const MNT_Tensor& targets,
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
  const MNT_CrossEntropyParams ce = detail::CrossEntropyParams(grad_scale.host, num_classes);
  std::vector<MNT_Tensor> inputs{logits, targets};
  if (grad_scale.device != nullptr) inputs.push_back(*grad_scale.device);
  return Run(MNT_OP_CROSS_ENTROPY, inputs, {losses, dlogits}, &ce);
}

inline sdk::Status Ops::Scale(const MNT_Tensor& x, float alpha, const MNT_Tensor& out) const {
  const MNT_AddParams p{MNT_AddParams_STRUCT_SIZE, alpha, 0.0f};
  return Run(MNT_OP_ADD, {x}, {out}, &p);
}

inline sdk::Status Ops::CrossEntropyBackwardInPlace(const MNT_Tensor& logits,
                                                    const MNT_Tensor& targets, int64_t num_classes,
                                                    GradScale grad_scale,
                                                    const MNT_Tensor& losses) const {
  // FUSED_CLASSIFIER came with ABI 1.6, and with it the optional device
  // multiplier in[1]: every backend that has the op takes it.
  const MNT_CrossEntropyParams ce = detail::CrossEntropyParams(grad_scale.host, num_classes);
  std::vector<MNT_Tensor> inputs{targets};
  if (grad_scale.device != nullptr) inputs.push_back(*grad_scale.device);
  return Run(MNT_OP_FUSED_CLASSIFIER, inputs, {logits, losses}, &ce);
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_OPS_H_
