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
#ifndef MANTISSA_MODELS_COMMON_OPS_H_
#define MANTISSA_MODELS_COMMON_OPS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/common/fp8_gemms.h"
#include "plugins/abi/mnt_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

namespace mnt::models {

using OptionalTensor = std::optional<MNT_Tensor>;

// A borrowed tensor that may be NULL (e.g. Model_Forward's correct_out).
inline OptionalTensor Optional(const MNT_Tensor* t) {
  return t == nullptr ? std::nullopt : OptionalTensor(*t);
}

// How a Linear layer stores its weight.
enum class WeightLayout {
  kOutIn,  // W [out, in], y = x·Wᵀ + b (PyTorch's nn.Linear, GPT-2)
  kInOut,  // W [in, out], y = x·W + b (no transposes in the forward GEMM)
};

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
  // y = x·Wᵀ + b or x·W + b (one GEMM; b optional).
  sdk::Status Linear(const MNT_Tensor& x, const MNT_Tensor& w,
                     const OptionalTensor& b, const MNT_Tensor& y,
                     WeightLayout layout) const;
  // y = gelu_tanh(pre), pre = x·Wᵀ + b (or x·W + b), both kept for the
  // backward: GEMM_BIAS_GELU when supported, else Linear then ACTIVATION.
  sdk::Status LinearGelu(const MNT_Tensor& x, const MNT_Tensor& w,
                         const MNT_Tensor& b, const MNT_Tensor& pre,
                         const MNT_Tensor& y, WeightLayout layout) const;
  // Gradients of Linear from dy, in this order: dW (GEMM), db (BIAS_GRAD)
  // when given, dx (GEMM, overwritten) when given. dW and db are added to
  // when `accumulate`. With an [out, in] weight and db, dW and db come from
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
  // BIAS_GRAD.
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
  // A GEMM of the Linear layer whose weight is `w`: in FP8 when the pass
  // has FP8 GEMMs and `w` owns a scaling slot, else Gemm in the precision's
  // compute mode.
  sdk::Status LayerGemm(const MNT_Tensor& w, const Fp8Operand& a, const Fp8Operand& b,
                        const OptionalTensor& bias, const MNT_Tensor& c, bool trans_a,
                        bool trans_b, bool accumulate) const;
  MNT_GemmEpilogueParams EpilogueParams(bool trans_a, bool trans_b, float beta,
                                        bool accumulate_bias_grad) const;
  MNT_Conv2dParams ConvParams(const Conv2dSpec& spec, bool accumulate) const;

  sdk::BackendClient client_;
  MNT_ComputeMode matmul_compute_ = MNT_COMPUTE_F32;
  std::vector<bool> supported_;  // indexed by MNT_Op
  std::shared_ptr<Fp8Gemms> fp8_;
};

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_OPS_H_
