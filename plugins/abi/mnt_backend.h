/* Mantissa plugin ABI: backend plugins (device memory, the ordered stream,
 * every kernel including the optimizer steps).
 *
 * A backend instance (MNT_Backend) owns one device and one ordered stream:
 * every Run and Memory_Copy call on an instance executes in call order;
 * Synchronize waits for all of them. Instances are not thread-safe: one
 * thread drives one instance. */
#ifndef MANTISSA_PLUGINS_ABI_MNT_BACKEND_H_
#define MANTISSA_PLUGINS_ABI_MNT_BACKEND_H_

#include "plugins/abi/mnt_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct MNT_Backend MNT_Backend; /* opaque instance */
typedef struct MNT_Event MNT_Event;     /* opaque, since 1.1 */

/* What memory is for; the allocator keeps current/peak bytes per category. */
typedef enum MNT_MemoryCategory {
  MNT_MEMORY_WEIGHTS = 0,         /* working weights the model reads */
  MNT_MEMORY_MASTER_WEIGHTS = 1,  /* fp32 master copy in mixed precision */
  MNT_MEMORY_GRADIENTS = 2,       /* parameter gradients (any dtype) */
  MNT_MEMORY_OPTIMIZER_STATE = 3, /* momentum, Adam moments */
  MNT_MEMORY_ACTIVATIONS = 4,     /* saved forward activations and their grads */
  MNT_MEMORY_WORKSPACE = 5,       /* scratch (GEMM workspace, reductions) */
  MNT_MEMORY_DATA = 6,            /* input batches, targets, scalars */
  MNT_MEMORY_CATEGORY_COUNT = 7,  /* not a category; grows with the minor */
  MNT_MEMORY_ALL = 100,           /* Memory_GetStats only: every category */
} MNT_MemoryCategory;

typedef enum MNT_CopyKind {
  MNT_COPY_HOST_TO_DEVICE = 1,
  MNT_COPY_DEVICE_TO_HOST = 2,
  MNT_COPY_DEVICE_TO_DEVICE = 3,
} MNT_CopyKind;

/* ------------------------------------------------------------------------ */
/* Kernels. Each op reads `inputs`, writes `outputs` and takes an op-specific */
/* params struct (or NULL where none is listed). Unless stated otherwise      */
/* every op computes in fp32 whatever the storage dtypes (F32/F16/BF16) and   */
/* rounds results to nearest-even into the output dtype. Output memory may    */
/* alias an input only where stated. Shapes are checked; a mismatch is an     */
/* MNT_ERROR_INVALID_ARGUMENT naming the op and the operand. An operand       */
/* marked optional is absent when the array ends before it or when its      */
/* tensor's `data` is NULL.                                                  */
/* Values are appended only; never renumbered.                                */
/* ------------------------------------------------------------------------ */
typedef enum MNT_Op {
  MNT_OP_INVALID = 0,
  /* out[0] = value (any float dtype or I32). Params: MNT_FillParams. */
  MNT_OP_FILL = 1,
  /* out[0] = in[0] converted (same element count, any float dtypes). */
  MNT_OP_CAST = 2,
  /* out[0] C[M,N] = alpha * op(A) op(B) + beta * C (+ bias[N]).
   * in[0] A: [M,K] or [K,M] if trans_a; in[1] B: [K,N] or [N,K] if trans_b;
   * in[2] optional bias [N]. Operands are rounded to `compute` first; the
   * sum accumulates in fp32. Params: MNT_GemmParams. */
  MNT_OP_GEMM = 3,
  /* out[0] db[N] = (accumulate ? db : 0) + sum over rows of in[0] dY[M,N].
   * Params: MNT_AccumulateParams (NULL = overwrite). */
  MNT_OP_BIAS_GRAD = 4,
  /* out[0] y = act(in[0] x). Params: MNT_ActivationParams. out may alias in. */
  MNT_OP_ACTIVATION_FORWARD = 5,
  /* out[0] dx = act'(in[0] x) * in[1] dy. Params: MNT_ActivationParams.
   * out may alias dy. */
  MNT_OP_ACTIVATION_BACKWARD = 6,
  /* out[0] = alpha * in[0] + beta * in[1]; in[1] optional (then beta
   * ignored). Element counts equal; out may alias either input. Serves as
   * scale, axpy, residual add and mixed-dtype accumulation.
   * Params: MNT_AddParams. */
  MNT_OP_ADD = 7,
  /* out[0] = softmax over the last dimension of in[0]. */
  MNT_OP_SOFTMAX = 8,
  /* Fused softmax + cross-entropy (+ gradient). in[0] logits [B,V],
   * in[1] targets I32 [B] (a negative target is ignored: loss 0, grad 0).
   * out[0] losses F32 [B]; optional out[1] dlogits [B,V] =
   * (softmax - onehot) * grad_scale. Classes >= num_classes are padding:
   * probability 0, gradient 0. Params: MNT_CrossEntropyParams.
   * Since 1.6: optional in[2] grad multiplier F32 [1] on the device; when
   * given, dlogits = (softmax - onehot) * s with s = in[2][0] * grad_scale
   * rounded once to fp32 (a model's device loss multiplier; see
   * MNT_Model_Backward_Args). A 1.5 backend refuses a third input; a host
   * passes it only to backends offering
   * MNT_CAPABILITY_CROSS_ENTROPY_GRAD_MULTIPLIER. */
  MNT_OP_CROSS_ENTROPY = 9,
  /* Layer norm over the last dim C. in[0] x [N,C], in[1] weight [C],
   * in[2] bias [C]; out[0] y [N,C], out[1] mean F32 [N], out[2] rstd F32 [N].
   * Params: MNT_LayerNormParams. */
  MNT_OP_LAYERNORM_FORWARD = 10,
  /* in[0] dy [N,C], in[1] x, in[2] weight, in[3] mean, in[4] rstd;
   * out[0] dx [N,C] (overwritten), out[1] dweight [C], out[2] dbias [C]
   * (accumulated when params->accumulate). Params: MNT_LayerNormParams. */
  MNT_OP_LAYERNORM_BACKWARD = 11,
  /* out[0] [N,C] = in[0] table [V,C] rows picked by in[1] ids I32 [N]. */
  MNT_OP_EMBEDDING_FORWARD = 12,
  /* out[0] dtable [V,C] (+)= scatter of in[0] dout [N,C] by in[1] ids;
   * deterministic order. Params: MNT_AccumulateParams (NULL = overwrite). */
  MNT_OP_EMBEDDING_BACKWARD = 13,
  /* out[0] F32 [1] = reduction of every element of in[0].
   * Params: MNT_ReduceParams. */
  MNT_OP_REDUCE = 14,
  /* out[0] F32 [1] = number of rows of in[0] logits [B,V] whose argmax over
   * the first num_classes columns equals in[1] targets I32 [B].
   * Params: MNT_CrossEntropyParams (num_classes only). */
  MNT_OP_COUNT_CORRECT = 15,
  /* out[0] F32 [1] = sum of squares of every element of every input;
   * accumulated in fp64 in a fixed order (deterministic). */
  MNT_OP_GLOBAL_NORM_SQUARED = 16,
  /* Fused non-finite check + unscale, as torch's
   * _amp_foreach_non_finite_check_and_unscale_. in[0] inv_scale F32 [1];
   * in[1..n] gradients. out[0] found_inf F32 [1]: set to 1 when any input
   * element is inf or NaN, left as it was otherwise (the caller zeroes it);
   * out[1..n] = in[i] * inv_scale, same element counts, any float dtypes
   * (may alias the inputs). */
  MNT_OP_NONFINITE_CHECK_UNSCALE = 17,
  /* SGD with momentum on fp32 master weights. in[0] grad (any float dtype);
   * in[1] optional found_inf F32 [1] (non-zero: the whole op is a no-op);
   * in[2] optional grad multiplier F32 [1] (e.g. the clipping factor).
   * out[0] master weights F32 (updated in place); out[1] momentum F32
   * (required when momentum != 0); out[2] optional working copy, any float
   * dtype, written with the new master rounded (to nearest even; since
   * 1.7 optionally stochastically, MNT_Rounding). Params: MNT_SgdParams. */
  MNT_OP_SGD_STEP = 18,
  /* AdamW (decoupled weight decay, bias-corrected) on fp32 master weights.
   * Inputs as MNT_OP_SGD_STEP. out[0] master F32, out[1] m F32, out[2] v F32,
   * out[3] optional working copy. Params: MNT_AdamWParams.
   * Since 1.4: optional in[3] step counter I32 [1] on the device, the number
   * of steps applied so far (as torch's fused Adam keeps state_steps on the
   * device). When given, bias correction uses counter + 1 instead of
   * params->step (which is then ignored), and the op increments the counter
   * when the step is applied (found_inf absent or zero), so a skipped step
   * leaves it unchanged without a host read. Keep one counter per parameter
   * tensor: every ADAMW_STEP call increments the counter it is given. A host
   * passes in[3] only to backends offering MNT_CAPABILITY_ADAMW_STEP_COUNTER
   * (before 1.9: built against ABI >= 1.4; older ones refuse a fourth input).
   * Since 1.7 (SGD_STEP and ADAMW_STEP): an optional learning rate F32 [1]
   * on the device, SGD_STEP's in[3] and ADAMW_STEP's in[4] (in[3] may then
   * be absent, data NULL). When given it replaces params->lr (then ignored),
   * so a step whose lr follows a schedule keeps the same params every step
   * (CUDA-graph replay). A host passes it only to backends offering
   * MNT_CAPABILITY_OPTIMIZER_DEVICE_LR (before 1.9: built against ABI >= 1.7;
   * older ones refuse the extra input). */
  MNT_OP_ADAMW_STEP = 19,
  /* --- Since 1.2. --- */
  /* Multi-head self-attention, llm.c layout. in[0] qkv [B,T,3C], each row
   * packed q|k|v with C = H*D (head h uses columns h*D..h*D+D-1 of each).
   * out[0] y [B,T,C]; out[1] lse F32 [B,H,T], the logsumexp of each row of
   * scaled scores, saved so a flash-style backward can recompute the
   * probabilities. Scores and softmax compute in fp32 whatever the storage
   * dtype. Params: MNT_AttentionParams. */
  MNT_OP_ATTENTION_FORWARD = 20,
  /* in[0] dy [B,T,C], in[1] qkv [B,T,3C], in[2] y [B,T,C] (the forward's
   * output), in[3] lse F32 [B,H,T]; out[0] dqkv [B,T,3C] (overwritten).
   * Params: MNT_AttentionParams (the forward's). */
  MNT_OP_ATTENTION_BACKWARD = 21,
  /* --- Since 1.3: convolutional networks. ---
   * Image tensors are NCHW: [N, C, H, W], row-major. NCHW is what im2col on
   * the CPU wants (each channel plane is contiguous, so a patch row is a
   * strided copy and the GEMM output [K, P*Q] is the output plane as is),
   * and cuDNN accepts it for every precision; NHWC would only pay off on
   * tensor-core GPUs, inside a backend, which may transpose internally.
   * Output spatial size of a conv or pool along H (W likewise):
   *   P = (H + 2*pad_h - dilation_h*(R-1) - 1) / stride_h + 1 (floor),
   * with R the filter/window height (dilation 1 for pooling). */
  /* in[0] x [N,C,H,W], in[1] w [K, C/groups, R, S], in[2] optional bias
   * [K]; out[0] y [N,K,P,Q] (overwritten). x and w are rounded to `compute`
   * and the products accumulate in fp32 (as GEMM); bias is added in fp32.
   * C and K must divide by groups. Params: MNT_Conv2dParams (accumulate is
   * ignored). */
  MNT_OP_CONV2D_FORWARD = 22,
  /* in[0] dy [N,K,P,Q], in[1] w [K, C/groups, R, S]; out[0] dx [N,C,H,W]
   * (its dims give H and W, which strides leave ambiguous), overwritten or,
   * with accumulate, added to. Operands rounded to `compute`.
   * Params: MNT_Conv2dParams (the forward's). */
  MNT_OP_CONV2D_BACKWARD_DATA = 23,
  /* in[0] dy [N,K,P,Q], in[1] x [N,C,H,W]; out[0] dw [K, C/groups, R, S]
   * (its dims give R and S); optional out[1] dbias [K] = sum of dy over
   * N, P, Q. Both overwritten or, with accumulate, added to. Operands
   * rounded to `compute`. Params: MNT_Conv2dParams (the forward's). */
  MNT_OP_CONV2D_BACKWARD_FILTER = 24,
  /* in[0] x [N,C,H,W]; out[0] y [N,C,P,Q]. Max ignores padding; average
   * divides by the window area (count_include_pad) or by the number of
   * in-image elements. Global average pooling: window = H x W, pad 0.
   * Params: MNT_Pool2dParams. */
  MNT_OP_POOL2D_FORWARD = 25,
  /* in[0] dy [N,C,P,Q], in[1] x [N,C,H,W] (the forward's input; max pooling
   * recomputes each window's argmax from it, the first maximum in row-major
   * window order wins); out[0] dx [N,C,H,W] (overwritten).
   * Params: MNT_Pool2dParams (the forward's). */
  MNT_OP_POOL2D_BACKWARD = 26,
  /* Batch norm over channel dim 1 of in[0] x [N,C,...] (rank >= 2; the
   * statistics run over N and every dim after C). in[1] gamma [C], in[2]
   * beta [C]. out[0] y (x's dims), out[1] running_mean F32 [C] and out[2]
   * running_var F32 [C] (read and, when training, updated in place:
   * r = (1 - momentum) * r + momentum * batch value, the variance unbiased,
   * as torch), out[3] saved_mean F32 [C] and out[4] saved_invstd F32 [C]
   * (training: the batch mean and 1/sqrt(biased var + epsilon), for the
   * backward; optional when not training). Training normalises with the
   * batch statistics, inference with the running ones. Statistics are fp32
   * (accumulated in fp64) in every precision. Params: MNT_BatchNormParams. */
  MNT_OP_BATCHNORM_FORWARD = 27,
  /* Backward of a training-mode forward. in[0] dy, in[1] x, in[2] gamma [C],
   * in[3] saved_mean F32 [C], in[4] saved_invstd F32 [C]; out[0] dx
   * (overwritten), out[1] dgamma [C], out[2] dbeta [C] (added to when
   * accumulate). Params: MNT_BatchNormParams. */
  MNT_OP_BATCHNORM_BACKWARD = 28,
  /* --- Since 1.4: dynamic loss scaling and clipping on the device, so an
   * fp16 step needs no host round trip. --- */
  /* torch's _amp_update_scale_ (GradScaler.update()). in[0] found_inf F32
   * [1]; out[0] scale F32 [1] and out[1] growth_tracker I32 [1], read and
   * updated in place; out[2] inv_scale F32 [1] = (float)(1.0 / (double)new
   * scale), for the next NONFINITE_CHECK_UNSCALE. found_inf non-zero: scale
   * *= backoff_factor, tracker = 0. Otherwise tracker + 1; when it reaches
   * growth_interval, scale *= growth_factor unless that would overflow fp32
   * (the scale never becomes inf) and tracker = 0. Products are taken in
   * double and rounded to fp32 once. A single scalar: backends may run it
   * as one thread. Params: MNT_AmpUpdateScaleParams.
   * Since 1.5 the whole dynamic recipe of mnt_precision.h
   * (MNT_LossScaler_GetRecipe; formula in plugins/sdk/loss_scale_math.h):
   * the params gain hysteresis, min_scale and max_scale, and an optional
   * out[3] hysteresis_tracker I32 [1] (overflows in a row that did not back
   * off), read and updated in place. found_inf non-zero: tracker = 0, and
   * when hysteresis_tracker + 1 < hysteresis it is incremented and the
   * scale kept; otherwise scale = max(scale * backoff_factor, min_scale).
   * Clean: hysteresis_tracker = 0, and a growth is capped at max_scale when
   * max_scale > 0. out[3] is required when hysteresis > 1. A 1.4 caller's
   * params (struct_size 20) mean hysteresis 1, no floor, no ceiling. */
  MNT_OP_AMP_UPDATE_SCALE = 29,
  /* The clip_grad_norm_ multiplier from a squared global norm, on the device.
   * in[0] norm_squared F32 [1] (GLOBAL_NORM_SQUARED's output); optional in[1]
   * found_inf F32 [1]. out[0] multiplier F32 [1] = (float)(max_norm /
   * (sqrt(n) + 1e-6)) when sqrt(n) > max_norm, else 1 (computed in double);
   * 1 when max_norm <= 0 or found_inf is non-zero (that step is skipped
   * anyway). Feed it to the optimizer ops' in[2]. Params:
   * MNT_ClipCoefficientParams. */
  MNT_OP_CLIP_COEFFICIENT = 30,
  /* --- Since 1.6: fused GEMM epilogues and a fused classifier (cuBLASLt's
   * epilogues, llm.c's fused_classifier), so a transformer step makes fewer
   * passes over its activations. Each equals the unfused sequence named in
   * its comment, up to where that sequence rounds intermediates. --- */
  /* GEMM + bias + tanh-GELU, saving the pre-activation (cuBLASLt's
   * EPILOGUE_GELU_AUX_BIAS). in[0] A, in[1] B as MNT_OP_GEMM, in[2] bias [N]
   * (required); out[0] y [M,N] = gelu_tanh(pre), out[1] pre [M,N] =
   * alpha * op(A) op(B) + bias, both overwritten. y is the GELU of the fp32
   * pre-activation (before it is rounded into out[1]'s dtype). Equals GEMM
   * (with bias) then ACTIVATION_FORWARD(GELU_TANH). Params: MNT_GemmParams
   * (beta must be 0). */
  MNT_OP_GEMM_BIAS_GELU = 31,
  /* GEMM whose result is a GELU output's gradient, times GELU's derivative
   * at the saved pre-activation (cuBLASLt's EPILOGUE_DGELU, with the bias
   * gradient EPILOGUE_DGELU_BGRAD). in[0] A, in[1] B as MNT_OP_GEMM, in[2]
   * pre [M,N] (GEMM_BIAS_GELU's out[1]); out[0] dpre [M,N] =
   * gelu_tanh'(pre) * alpha * op(A) op(B) (overwritten; must not alias
   * pre); optional out[1] dbias [N] = sum over the M rows of dpre (the fp32
   * values, before rounding into out[0]), overwritten or, with
   * accumulate_bias_grad, added to. Equals GEMM, ACTIVATION_BACKWARD
   * (GELU_TANH) then BIAS_GRAD. Params: MNT_GemmEpilogueParams (beta must
   * be 0). */
  MNT_OP_GEMM_DGELU = 32,
  /* A weight-gradient GEMM with the bias gradient of its A operand
   * (cuBLASLt's EPILOGUE_BGRADB; cuBLAS is column-major, so the ABI's
   * row-major A is cuBLAS's B). in[0] A, in[1] B as MNT_OP_GEMM; out[0]
   * C [M,N] = alpha * op(A) op(B) + beta * C; out[1] dbias [M] = sum over
   * the K columns of op(A) (for dW = dYᵀ·X with A = dY, trans_a: db = the
   * row sums of dY), overwritten or, with accumulate_bias_grad, added to.
   * Equals GEMM then BIAS_GRAD(dY). Params: MNT_GemmEpilogueParams. */
  MNT_OP_GEMM_BIAS_GRAD = 33,
  /* Softmax + cross-entropy + dlogits in one pass over the logits, written
   * in place (llm.c's fused_classifier): probabilities are never stored.
   * in[0] targets I32 [B] (a negative target is ignored: loss 0, gradient
   * 0); optional in[1] loss multiplier F32 [1] on the device, multiplying
   * the gradient as grad_scale does (a device loss scale, read by no host).
   * out[0] logits [B,V], read, then overwritten with dlogits = (softmax -
   * onehot) * grad_scale (* in[1]); columns >= num_classes are padding:
   * probability 0, gradient 0. out[1] losses F32 [B] (unscaled, as
   * MNT_OP_CROSS_ENTROPY's); optional out[2] F32 [1] = the mean of out[1]
   * over the B rows (as MNT_OP_REDUCE MEAN). Equals CROSS_ENTROPY with
   * out[1] dlogits over the logits' own memory. Params:
   * MNT_CrossEntropyParams. */
  MNT_OP_FUSED_CLASSIFIER = 34,
  /* --- Also since 1.6: fused residual add + layer norm and multi-tensor
   * optimizer steps. --- */
  /* Residual add + layer norm in one pass (llm.c's fused_residual_forward).
   * in[0] x [N,C], in[1] r [N,C], in[2] weight [C], in[3] bias [C];
   * out[0] sum [N,C] = x + r rounded to its dtype (may alias in[0] or in[1]);
   * out[1] y [N,C] = layer norm of the rounded sum, out[2] mean F32 [N],
   * out[3] rstd F32 [N], exactly as ADD then LAYERNORM_FORWARD would give
   * (within the rounding of the sum). Params: MNT_LayerNormParams. */
  MNT_OP_RESIDUAL_LAYERNORM_FORWARD = 35,
  /* The backward of a layer norm whose input feeds a residual stream.
   * in[0] dy [N,C], in[1] sum [N,C] (the layer norm's input), in[2] weight
   * [C], in[3] mean F32 [N], in[4] rstd F32 [N], optional in[5] dsum [N,C]
   * (the gradient reaching the sum from its other consumers). out[0] dx
   * [N,C] = dsum + LAYERNORM_BACKWARD's dx, rounded once: the gradient of
   * both addends x and r (may alias in[5]); out[1] dweight [C], out[2]
   * dbias [C] (accumulated when params->accumulate).
   * Params: MNT_LayerNormParams. */
  MNT_OP_RESIDUAL_LAYERNORM_BACKWARD = 36,
  /* ADAMW_STEP over a table of n parameter tensors in one launch; per
   * element the same bits as n ADAMW_STEP calls. in[0] optional found_inf
   * F32 [1] (non-zero: the whole op is a no-op), in[1] optional grad
   * multiplier F32 [1]; for tensor i: in[2+2i] grad (any float dtype),
   * in[3+2i] step counter I32 [1] (optional, as ADAMW_STEP's in[3]; given
   * for every tensor or for none). out[4i] master F32, out[4i+1] m F32,
   * out[4i+2] v F32 (updated in place), out[4i+3] optional working copy.
   * Exactly 2 + 2n inputs and 4n outputs (absent ones with data NULL).
   * Params: MNT_MultiAdamWParams (per-tensor lr scale and weight decay).
   * Since 1.7: optionally one more input, in[2+2n], the learning rate F32
   * [1] on the device, replacing params->lr (lr_i = in[2+2n][0] *
   * lr_scales[i]); as ADAMW_STEP's in[4], for backends offering
   * MNT_CAPABILITY_OPTIMIZER_DEVICE_LR only. */
  MNT_OP_MULTI_ADAMW_STEP = 37,
  /* SGD_STEP over a table of n parameter tensors in one launch; per element
   * the same bits as n SGD_STEP calls. in[0] optional found_inf, in[1]
   * optional grad multiplier (as SGD_STEP); in[2+i] grad of tensor i.
   * out[3i] master F32, out[3i+1] momentum F32 (required when momentum !=
   * 0), out[3i+2] optional working copy. Exactly 2 + n inputs and 3n
   * outputs. Params: MNT_MultiSgdParams. Since 1.7: optionally one more
   * input, in[2+n], the learning rate F32 [1] on the device, as
   * MULTI_ADAMW_STEP's in[2+2n]. */
  MNT_OP_MULTI_SGD_STEP = 38,
  /* Since 1.9 (optional op; FP8 training). out[0] y = in[0] x * in[1][0]
   * converted, same element counts, in either direction:
   *  - x F32/F16/BF16 -> y F8_E4M3/F8_E5M2 (quantize; in[1] is the scale):
   *    the fp32 product rounded to nearest even, saturated to +-max finite
   *    (448 / 57344; infinities too), NaN kept a NaN;
   *  - x F8_E4M3/F8_E5M2 -> y F32/F16/BF16 (dequantize; in[1] is the
   *    inverse scale): the exact decode times in[1][0] in fp32, rounded to
   *    y's dtype.
   * in[1] scale F32 [1] on the device. Optional out[1] amax F32 [1] =
   * max |x| over every element of x (before scaling; NaN when an element
   * is NaN), overwritten: what a delayed-scaling recipe records. y may not
   * alias x. Params: NULL. */
  MNT_OP_SCALED_CAST = 39,
  /* Since 1.9 (optional op; FP8 training). out[0] D[M,N] = alpha *
   * in[2][0] * in[3][0] * op(A) op(B) + beta * D (+ in[4] bias[N]).
   * in[0] A and in[1] B are F8_E4M3 or F8_E5M2 (not both E5M2), shaped as
   * for MNT_OP_GEMM; in[2] A's and in[3] B's inverse scales F32 [1] on the
   * device (1 / the scale each was quantized with); optional in[4] bias
   * [N] F32/F16/BF16. Each product of two FP8 values is exact in fp32 and
   * the sum accumulates in fp32 in the backend's order (with
   * fast_accumulation, a backend may accumulate as Hopper's FP8 tensor
   * cores do with their fast mode; the CPU backend ignores it). D F32, F16
   * or BF16, rounded to nearest even. Optional out[1] amax F32 [1] =
   * max |D| over the result before it is rounded to D's dtype (NaN when an
   * element is NaN), overwritten. Params: MNT_ScaledGemmParams. */
  MNT_OP_SCALED_GEMM = 40,
  /* Since 1.10 (optional op; FP8 delayed scaling). For N scaled tensors:
   * in[0] amax F32 [N], the amax each tensor had in the last pass;
   * out[0] history F32 [H, N] (read and written), row 0 the most recent;
   * out[1] scale F32 [N] (read and written); out[2] scale_inv F32 [N]
   * (written). Per tensor n, with a = in[0][n]:
   *   1. when a is finite, the history rolls down one row (row H-1 falls
   *      off) and row 0 becomes a; a non-finite a (an overflowing pass,
   *      the loss scaler's business) leaves the history as it is, so one
   *      bad step cannot pin the scale for H steps;
   *   2. r = max over rows [0, history_length) (MNT_AMAX_ALGO_MAX) or row
   *      0 (MOST_RECENT), history_length <= H;
   *   3. when r > 0 and fp8_max / r / 2^margin is finite and > 0, scale =
   *      that value computed in fp32 as (fp8_max / r) * 2^-margin, else
   *      the scale is kept (Transformer Engine's rule: an all-zero
   *      history keeps the initial scale);
   *   4. scale_inv = 1 / scale in fp32.
   * Deterministic: elementwise. Params: MNT_Fp8ScaleUpdateParams. */
  MNT_OP_FP8_SCALE_UPDATE = 41,
  /* Since 1.10 (optional op; what --debug_overflow prints of an operand,
   * measured where the tensor lives). in[0] x F32/F16/BF16, any shape;
   * out[0] F32 [2] = {smallest |x|, largest |x|} over the finite elements
   * of x (both 0 when none is finite); out[1] I32 [2] = {elements that are
   * inf or NaN, elements that are NaN}, each saturating at INT32_MAX. Every
   * value is exact (a min/max and counts), so every backend gives the same
   * bits. Params: NULL. */
  MNT_OP_TENSOR_STATS = 42,
  /* --- Since 1.12 (optional ops; memory-light optimizers). --- */
  /* AdamW with both moments stored in 8 bits, blockwise (Dettmers et al.
   * 2022, bitsandbytes' blockwise 8-bit Adam): the operands are cut into
   * blocks of MNT_QUANTIZATION_BLOCK_SIZE elements (block b is elements
   * [256 b, 256 b + 256) of every operand; the last may be partial), each
   * moment stored as one code per element and one fp32 absmax per block;
   * an element's moment is map[code] * absmax with bitsandbytes' dynamic
   * maps: signed for m, unsigned for v (plugins/backends/common/
   * blockwise_quantization.h defines both maps exactly). Per element: the
   * moments are dequantized, updated as ADAMW_STEP updates them (the same
   * fp32 formula), the master is updated with the new fp32 moments, and the
   * new moments are requantized with their block's new absmax (the largest
   * |m| and v of the block; NaN if any is NaN) to the nearest map value
   * (ties to the lower code; a negative m never takes the code of 0).
   * Inputs as ADAMW_STEP: in[0] grad (any float dtype, n elements), in[1]
   * optional found_inf F32 [1] (non-zero: the whole op, counter included,
   * is a no-op), in[2] optional grad multiplier F32 [1], in[3] optional
   * step counter I32 [1] (as ADAMW_STEP's), in[4] optional learning rate
   * F32 [1] on the device (replaces params->lr). out[0] master F32 [n],
   * out[1] m codes U8 [n], out[2] m absmax F32 [ceil(n / 256)], out[3] v
   * codes U8 [n], out[4] v absmax F32 [ceil(n / 256)] (all updated in
   * place; zeroed codes and absmax are a zero state), out[5] optional
   * working copy (rounded as ADAMW_STEP's, stochastically with
   * params->rounding). Params: MNT_AdamWParams (rounding_element as
   * ADAMW_STEP's). A caller stepping a piece of a parameter passes a piece
   * that starts on a block boundary of the parameter, and the pieces' codes
   * and absmax slices, so the blocks are the whole parameter's. Every
   * block is independent: the same bits for any launch shape or thread
   * count. Which tensors to keep in 8 bits (bitsandbytes keeps those under
   * 4096 elements in 32 bits) is the caller's choice: it steps those with
   * ADAMW_STEP. */
  MNT_OP_ADAMW8BIT_STEP = 43,
  /* Adafactor (Shazeer & Stern 2018, HF transformers.Adafactor's step) on
   * one parameter tensor; plugins/backends/common/adafactor_math.h has the
   * formulas and the fixed order of its sums. in[0] grad (any float dtype)
   * with the parameter's dims: rank >= 2 is factored over its last two dims
   * (B batches, the product of the leading dims, of R x C), rank < 2 is not.
   * in[1] optional found_inf F32 [1] (non-zero: a no-op), in[2] optional
   * grad multiplier F32 [1], in[3] optional step counter I32 [1] (applied
   * steps so far: the step is counter + 1 instead of params->step, and the
   * op increments it when applied), in[4] optional learning rate F32 [1] on
   * the device (replaces params->lr). out[0] master F32 [n]; out[1] the
   * second moment: factored, the row state F32 [B * R]; unfactored, F32
   * [n]; out[2] the column state F32 [B * C] (factored; absent otherwise);
   * out[3] the first moment F32 [n] (required when params->beta1 != 0,
   * absent otherwise); out[4] optional working copy (rounded as
   * ADAMW_STEP's). Params: MNT_AdafactorParams. The step's sums (the means,
   * the RMS of the parameter and of the update) are whole-tensor
   * reductions: the op takes whole parameters, never pieces. */
  MNT_OP_ADAFACTOR_STEP = 44,
  /* --- Since 1.14 (optional ops; the memory-light optimizers over a table
   * of tensors, as MULTI_ADAMW_STEP is ADAMW_STEP's). --- */
  /* ADAMW8BIT_STEP over a table of n parameter tensors (or pieces of
   * parameters) in one call; per element the same bits as n ADAMW8BIT_STEP
   * calls. in[0] optional found_inf F32 [1] (non-zero: the whole op, every
   * counter included, is a no-op), in[1] optional grad multiplier F32 [1];
   * for tensor i: in[2+2i] grad (any float dtype, n_i elements), in[3+2i]
   * step counter I32 [1] (optional, as ADAMW8BIT_STEP's in[3]; given for
   * every tensor or for none); optionally in[2+2n], the learning rate F32
   * [1] on the device (lr_i = in[2+2n][0] * lr_scales[i], as
   * MULTI_ADAMW_STEP's). out[6i] master F32 [n_i], out[6i+1] m codes U8
   * [n_i], out[6i+2] m absmax F32 [ceil(n_i / 256)], out[6i+3] v codes U8
   * [n_i], out[6i+4] v absmax F32 [ceil(n_i / 256)] (updated in place, as
   * ADAMW8BIT_STEP's out[0..4]), out[6i+5] optional working copy. Exactly
   * 2 + 2n (or 3 + 2n) inputs and 6n outputs (absent ones with data NULL).
   * Params: MNT_MultiAdamWParams, the caller's struct reaching
   * rounding_elements (its 1.11 size: the op was born after it): tensor i
   * steps as ADAMW8BIT_STEP with lr_i, weight_decays[i], tensor index
   * rounding_tensors[i] (rounding_tensor + i when NULL) and element index
   * rounding_elements[i] + j for its element j (j when NULL); a piece
   * starts on a block boundary of its parameter, as ADAMW8BIT_STEP's. The
   * step counters and the device lr are the op's from birth (no
   * capability). */
  MNT_OP_MULTI_ADAMW8BIT_STEP = 45,
  /* ADAFACTOR_STEP over a table of n whole parameters in one call; per
   * element the same bits as n ADAFACTOR_STEP calls (every sum, mean and
   * RMS is still its own tensor's). in[0] optional found_inf F32 [1]
   * (non-zero: the whole op, every counter included, is a no-op), in[1]
   * optional grad multiplier F32 [1]; for tensor i: in[2+2i] grad (any
   * float dtype) with the parameter's dims (factored for rank >= 2, as
   * ADAFACTOR_STEP's in[0]), in[3+2i] step counter I32 [1] (optional, as
   * ADAFACTOR_STEP's in[3]; given for every tensor or for none);
   * optionally in[2+2n], the learning rate F32 [1] on the device (lr_i =
   * in[2+2n][0] * lr_scales[i]). out[5i..5i+4]: ADAFACTOR_STEP's
   * out[0..4] for tensor i (master, row state or full second moment,
   * column state (factored only), first moment (beta1 != 0 only), working
   * copy; absent ones with data NULL). Exactly 2 + 2n (or 3 + 2n) inputs
   * and 5n outputs. Params: MNT_MultiAdafactorParams. The step counters
   * and the device lr are the op's from birth (no capability). */
  MNT_OP_MULTI_ADAFACTOR_STEP = 46,
} MNT_Op;

/* Since 1.12: elements per quantization block of MNT_OP_ADAMW8BIT_STEP. */
#define MNT_QUANTIZATION_BLOCK_SIZE 256

typedef struct MNT_FillParams {
  size_t struct_size;
  double value;
} MNT_FillParams;
#define MNT_FillParams_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_FillParams, value)

typedef struct MNT_GemmParams {
  size_t struct_size;
  int32_t trans_a;
  int32_t trans_b;
  float alpha;
  float beta;
  MNT_ComputeMode compute;
} MNT_GemmParams;
#define MNT_GemmParams_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_GemmParams, compute)

typedef struct MNT_AccumulateParams {
  size_t struct_size;
  int32_t accumulate; /* 0: overwrite the output, 1: add to it */
} MNT_AccumulateParams;
#define MNT_AccumulateParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_AccumulateParams, accumulate)

typedef enum MNT_Activation {
  MNT_ACTIVATION_INVALID = 0,
  MNT_ACTIVATION_IDENTITY = 1,
  MNT_ACTIVATION_RELU = 2,
  MNT_ACTIVATION_GELU_TANH = 3, /* GPT-2's tanh approximation */
} MNT_Activation;

typedef struct MNT_ActivationParams {
  size_t struct_size;
  MNT_Activation activation;
} MNT_ActivationParams;
#define MNT_ActivationParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_ActivationParams, activation)

typedef struct MNT_AddParams {
  size_t struct_size;
  float alpha;
  float beta;
} MNT_AddParams;
#define MNT_AddParams_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_AddParams, beta)

typedef struct MNT_CrossEntropyParams {
  size_t struct_size;
  float grad_scale;    /* multiplies dlogits, e.g. loss_scale / batch */
  int64_t num_classes; /* columns >= this are padding; 0 = all columns */
} MNT_CrossEntropyParams;
#define MNT_CrossEntropyParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_CrossEntropyParams, num_classes)

typedef struct MNT_LayerNormParams {
  size_t struct_size;
  float epsilon;
  int32_t accumulate; /* backward: add to dweight/dbias */
} MNT_LayerNormParams;
#define MNT_LayerNormParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_LayerNormParams, accumulate)

typedef enum MNT_ReduceKind {
  MNT_REDUCE_INVALID = 0,
  MNT_REDUCE_SUM = 1,
  MNT_REDUCE_MEAN = 2,
  MNT_REDUCE_MAX = 3,
} MNT_ReduceKind;

typedef struct MNT_ReduceParams {
  size_t struct_size;
  MNT_ReduceKind kind;
} MNT_ReduceParams;
#define MNT_ReduceParams_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_ReduceParams, kind)

/* Since 1.7: how an optimizer step rounds the working copy it writes
 * (SGD_STEP, ADAMW_STEP and their multi-tensor forms). */
typedef enum MNT_Rounding {
  MNT_ROUNDING_NEAREST_EVEN = 0, /* the default, and a 1.6 caller's params */
  /* bf16 working copies only (any other working dtype is refused): 16
   * random bits are added below bf16's cut and the sum truncated, so the
   * copy rounds up with probability (dropped bits) / 2^16 (llm.c's
   * stochastic rounding; unbiased). The bits are a counter-based hash of
   * (rounding_seed, step, tensor index, element index): the same on every
   * backend and thread count. NaN, +-inf and magnitudes above the largest
   * finite bf16 round to nearest even as before. The element index of an
   * operand's element i is i, or since 1.11 (capability
   * MNT_CAPABILITY_OPTIMIZER_PIECES) rounding_element + i: an op given a
   * piece of a parameter (elements [e, e + n) of its flat buffer) with
   * rounding_element e and the parameter's tensor index writes the bits a
   * step of the whole parameter would. */
  MNT_ROUNDING_STOCHASTIC = 1,
} MNT_Rounding;

typedef struct MNT_SgdParams {
  size_t struct_size;
  float lr;
  float momentum;
  float weight_decay; /* coupled L2, added to the gradient as torch.optim.SGD */
  int32_t nesterov;
  /* Since 1.7 (absent in a 1.6 caller's struct: round to nearest even). */
  MNT_Rounding rounding;
  uint64_t rounding_seed;  /* stochastic rounding's seed */
  int64_t rounding_tensor; /* the tensor index the random bits use */
  int64_t rounding_step;   /* the step they use (SGD keeps no step count) */
  /* Since 1.11 (MNT_CAPABILITY_OPTIMIZER_PIECES; absent in a 1.10 caller's
   * struct: 0). The element index of the operands' element 0 for the random
   * bits: element i uses rounding_element + i. >= 0. */
  int64_t rounding_element;
} MNT_SgdParams;
#define MNT_SgdParams_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_SgdParams, rounding_element)
#define MNT_SgdParams_STRUCT_SIZE_1_6 MNT_STRUCT_SIZE(MNT_SgdParams, nesterov)
#define MNT_SgdParams_STRUCT_SIZE_1_10 MNT_STRUCT_SIZE(MNT_SgdParams, rounding_step)

typedef struct MNT_AdamWParams {
  size_t struct_size;
  float lr;
  float beta1;
  float beta2;
  float epsilon;
  float weight_decay; /* decoupled: w -= lr * wd * w */
  int64_t step;       /* 1-based, for bias correction */
  /* Since 1.7 (absent in a 1.6 caller's struct: round to nearest even). The
   * random bits use the step of the bias correction (the step counter + 1
   * when one is given, else step). */
  MNT_Rounding rounding;
  uint64_t rounding_seed;
  int64_t rounding_tensor; /* the tensor index the random bits use */
  /* Since 1.11 (MNT_CAPABILITY_OPTIMIZER_PIECES; absent in a 1.10 caller's
   * struct: 0). As MNT_SgdParams.rounding_element. >= 0. */
  int64_t rounding_element;
} MNT_AdamWParams;
#define MNT_AdamWParams_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_AdamWParams, rounding_element)
#define MNT_AdamWParams_STRUCT_SIZE_1_6 MNT_STRUCT_SIZE(MNT_AdamWParams, step)
#define MNT_AdamWParams_STRUCT_SIZE_1_10 MNT_STRUCT_SIZE(MNT_AdamWParams, rounding_tensor)

/* Since 1.2: MNT_OP_ATTENTION_FORWARD/BACKWARD. */
typedef struct MNT_AttentionParams {
  size_t struct_size;
  int32_t num_heads; /* H; C = in[0].dims[2] / 3 must divide by it */
  int32_t causal;    /* 1: position t attends to positions <= t only */
  float scale;       /* multiplies q.k; 0 means 1/sqrt(D) */
  /* Since 1.8 (absent in a 1.2-1.7 caller's struct, or 0: F32). The
   * precision of the products (Q K^T, P V and the backward's): F32, or TF32
   * (each product's fp32 operands rounded to TF32, as GEMM's compute mode;
   * 16-bit operands are exact in it). Softmax and accumulation stay fp32.
   * Other modes are INVALID_ARGUMENT. */
  MNT_ComputeMode compute;
} MNT_AttentionParams;
#define MNT_AttentionParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_AttentionParams, compute)
#define MNT_AttentionParams_STRUCT_SIZE_1_7 \
  MNT_STRUCT_SIZE(MNT_AttentionParams, scale)

/* Since 1.3: MNT_OP_CONV2D_FORWARD/BACKWARD_DATA/BACKWARD_FILTER. */
typedef struct MNT_Conv2dParams {
  size_t struct_size;
  int32_t pad_h; /* zero padding on each side */
  int32_t pad_w;
  int32_t stride_h; /* >= 1 */
  int32_t stride_w;
  int32_t dilation_h; /* >= 1; 1 is a dense filter */
  int32_t dilation_w;
  int32_t groups; /* >= 1; C and K divide by it */
  MNT_ComputeMode compute;
  int32_t accumulate; /* backward ops: add to the outputs */
} MNT_Conv2dParams;
#define MNT_Conv2dParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Conv2dParams, accumulate)

/* Since 1.3: MNT_OP_POOL2D_FORWARD/BACKWARD. */
typedef enum MNT_PoolKind {
  MNT_POOL_INVALID = 0,
  MNT_POOL_MAX = 1,
  MNT_POOL_AVG = 2,
} MNT_PoolKind;

typedef struct MNT_Pool2dParams {
  size_t struct_size;
  MNT_PoolKind kind;
  int32_t window_h; /* >= 1 */
  int32_t window_w;
  int32_t stride_h; /* >= 1 */
  int32_t stride_w;
  int32_t pad_h; /* < the window size */
  int32_t pad_w;
  int32_t count_include_pad; /* average: 1 divides by window_h*window_w */
} MNT_Pool2dParams;
#define MNT_Pool2dParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Pool2dParams, count_include_pad)

/* Since 1.3: MNT_OP_BATCHNORM_FORWARD/BACKWARD. */
typedef struct MNT_BatchNormParams {
  size_t struct_size;
  int32_t training; /* 1: batch statistics, update the running ones */
  float momentum;   /* running-statistics update weight, torch's 0.1 */
  float epsilon;
  int32_t accumulate; /* backward: add to dgamma/dbeta */
} MNT_BatchNormParams;
#define MNT_BatchNormParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_BatchNormParams, accumulate)

/* Since 1.4: MNT_OP_AMP_UPDATE_SCALE. GradScaler's defaults are 2, 0.5,
 * 2000 (and, since 1.5, hysteresis 1, no floor, no ceiling). */
typedef struct MNT_AmpUpdateScaleParams {
  size_t struct_size;
  float growth_factor;     /* > 1 */
  float backoff_factor;    /* in (0, 1) */
  int32_t growth_interval; /* >= 1 clean steps before growing */
  /* Since 1.5 (absent in a 1.4 caller's struct: 1, 0, 0). */
  int32_t hysteresis; /* overflows in a row before a backoff; 0 means 1 */
  float min_scale;    /* >= 0, finite: backoffs stop here (0: no floor) */
  float max_scale;    /* 0: no ceiling; else finite and >= min_scale */
} MNT_AmpUpdateScaleParams;
#define MNT_AmpUpdateScaleParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_AmpUpdateScaleParams, max_scale)
#define MNT_AmpUpdateScaleParams_STRUCT_SIZE_1_4 \
  MNT_STRUCT_SIZE(MNT_AmpUpdateScaleParams, growth_interval)

/* Since 1.4: MNT_OP_CLIP_COEFFICIENT. */
typedef struct MNT_ClipCoefficientParams {
  size_t struct_size;
  float max_norm; /* <= 0: no clipping (multiplier 1) */
} MNT_ClipCoefficientParams;
#define MNT_ClipCoefficientParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_ClipCoefficientParams, max_norm)

/* Since 1.6: MNT_OP_GEMM_DGELU and MNT_OP_GEMM_BIAS_GRAD (MNT_GemmParams
 * plus what happens to the bias gradient). */
typedef struct MNT_GemmEpilogueParams {
  size_t struct_size;
  int32_t trans_a;
  int32_t trans_b;
  float alpha;
  float beta;
  MNT_ComputeMode compute;
  int32_t accumulate_bias_grad; /* 0: overwrite the bias gradient, 1: add */
} MNT_GemmEpilogueParams;
#define MNT_GemmEpilogueParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_GemmEpilogueParams, accumulate_bias_grad)
/* Since 1.6: MNT_OP_MULTI_ADAMW_STEP. Tensor i steps as ADAMW_STEP with
 * lr_i = lr * lr_scales[i] (an fp32 product; lr itself when lr_scales is
 * NULL) and weight_decay_i = weight_decays[i] (weight_decay when NULL). The
 * arrays are borrowed for the call and hold num_tensors values. Since 1.14
 * also MNT_OP_MULTI_ADAMW8BIT_STEP's (tensor i as ADAMW8BIT_STEP). */
typedef struct MNT_MultiAdamWParams {
  size_t struct_size;
  float lr;
  float beta1;
  float beta2;
  float epsilon;
  float weight_decay;           /* every tensor's, unless weight_decays */
  int64_t step;                 /* 1-based; ignored with step counters */
  int64_t num_tensors;          /* n >= 1 */
  const float* lr_scales;       /* optional [n] */
  const float* weight_decays;   /* optional [n] */
  /* Since 1.7 (absent in a 1.6 caller's struct: round to nearest even).
   * Tensor i's random bits use tensor index rounding_tensor + i and its
   * bias-correction step, as ADAMW_STEP's. */
  MNT_Rounding rounding;
  uint64_t rounding_seed;
  int64_t rounding_tensor;
  /* Since 1.11 (MNT_CAPABILITY_OPTIMIZER_PIECES; absent in a 1.10 caller's
   * struct: both NULL), for tables of parameter pieces. Borrowed for the
   * call, like lr_scales; every value >= 0.
   * rounding_tensors: optional [n]; tensor i's random bits use tensor
   *   index rounding_tensors[i] instead of rounding_tensor + i.
   * rounding_elements: optional [n]; the element index of tensor i's
   *   element 0 (element j uses rounding_elements[i] + j); 0 when NULL. */
  const int64_t* rounding_tensors;
  const int64_t* rounding_elements;
} MNT_MultiAdamWParams;
#define MNT_MultiAdamWParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_MultiAdamWParams, rounding_elements)
#define MNT_MultiAdamWParams_STRUCT_SIZE_1_6 \
  MNT_STRUCT_SIZE(MNT_MultiAdamWParams, weight_decays)
#define MNT_MultiAdamWParams_STRUCT_SIZE_1_10 \
  MNT_STRUCT_SIZE(MNT_MultiAdamWParams, rounding_tensor)

/* Since 1.6: MNT_OP_MULTI_SGD_STEP; lr_scales and weight_decays as in
 * MNT_MultiAdamWParams. */
typedef struct MNT_MultiSgdParams {
  size_t struct_size;
  float lr;
  float momentum;
  float weight_decay; /* coupled L2, every tensor's unless weight_decays */
  int32_t nesterov;
  int64_t num_tensors;        /* n >= 1 */
  const float* lr_scales;     /* optional [n] */
  const float* weight_decays; /* optional [n] */
  /* Since 1.7 (absent in a 1.6 caller's struct: round to nearest even).
   * Tensor i's random bits use tensor index rounding_tensor + i and
   * rounding_step, as SGD_STEP's. */
  MNT_Rounding rounding;
  uint64_t rounding_seed;
  int64_t rounding_tensor;
  int64_t rounding_step;
  /* Since 1.11: as MNT_MultiAdamWParams' (MNT_CAPABILITY_OPTIMIZER_PIECES;
   * absent in a 1.10 caller's struct: both NULL). */
  const int64_t* rounding_tensors;  /* optional [n] */
  const int64_t* rounding_elements; /* optional [n] */
} MNT_MultiSgdParams;
#define MNT_MultiSgdParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_MultiSgdParams, rounding_elements)
#define MNT_MultiSgdParams_STRUCT_SIZE_1_6 \
  MNT_STRUCT_SIZE(MNT_MultiSgdParams, weight_decays)
#define MNT_MultiSgdParams_STRUCT_SIZE_1_10 \
  MNT_STRUCT_SIZE(MNT_MultiSgdParams, rounding_step)

/* Since 1.12: MNT_OP_ADAFACTOR_STEP. HF transformers.Adafactor's defaults
 * where the caller gives the learning rate (as HF Trainer's
 * optim="adafactor"): beta1 0, decay_rate -0.8, epsilon1 1e-30, epsilon2
 * 1e-3, clip_threshold 1, relative_step 0, scale_parameter 0. */
typedef struct MNT_AdafactorParams {
  size_t struct_size;
  float lr;             /* ignored with relative_step or a device lr */
  float beta1;          /* 0: no first moment (HF's beta1=None) */
  float decay_rate;     /* beta2_t = 1 - t^decay_rate; < 0 */
  float epsilon1;       /* added to g^2; >= 0 */
  float epsilon2;       /* floor of the parameter's RMS (scale_parameter); >= 0 */
  float clip_threshold; /* updates are divided by max(1, RMS(u) / this); > 0 */
  float weight_decay;   /* decoupled: w -= lr_t * wd * w */
  int32_t relative_step;   /* 1: lr_t = min(1e-2, 1/sqrt(t)) (x RMS scaling) */
  int32_t scale_parameter; /* 1: lr_t *= max(epsilon2, RMS(param)) */
  int32_t warmup_init;     /* with relative_step: min(1e-6 t, 1/sqrt(t)) */
  int64_t step;            /* 1-based; ignored with a step counter */
  MNT_Rounding rounding;   /* the working copy's, as MNT_AdamWParams' */
  uint64_t rounding_seed;
  int64_t rounding_tensor;
} MNT_AdafactorParams;
#define MNT_AdafactorParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_AdafactorParams, rounding_tensor)

/* Since 1.14: MNT_OP_MULTI_ADAFACTOR_STEP. MNT_AdafactorParams' fields,
 * every tensor's, then the table's: tensor i steps as ADAFACTOR_STEP with
 * lr_i = lr * lr_scales[i] (an fp32 product; lr itself when lr_scales is
 * NULL), weight_decay_i = weight_decays[i] (weight_decay when NULL) and
 * its random bits' tensor index rounding_tensors[i] (rounding_tensor + i
 * when NULL). The arrays are borrowed for the call and hold num_tensors
 * values. */
typedef struct MNT_MultiAdafactorParams {
  size_t struct_size;
  float lr;             /* ignored with relative_step or a device lr */
  float beta1;          /* 0: no first moment */
  float decay_rate;     /* < 0 */
  float epsilon1;       /* >= 0 */
  float epsilon2;       /* >= 0 */
  float clip_threshold; /* > 0 */
  float weight_decay;   /* every tensor's, unless weight_decays */
  int32_t relative_step;
  int32_t scale_parameter;
  int32_t warmup_init;
  int64_t step;          /* 1-based; ignored with step counters */
  MNT_Rounding rounding; /* the working copies', as MNT_AdafactorParams' */
  uint64_t rounding_seed;
  int64_t rounding_tensor;
  int64_t num_tensors;               /* n >= 1 */
  const float* lr_scales;            /* optional [n] */
  const float* weight_decays;        /* optional [n] */
  const int64_t* rounding_tensors;   /* optional [n] */
} MNT_MultiAdafactorParams;
#define MNT_MultiAdafactorParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_MultiAdafactorParams, rounding_tensors)

/* Since 1.9: MNT_OP_SCALED_GEMM. */
typedef struct MNT_ScaledGemmParams {
  size_t struct_size;
  int32_t trans_a;
  int32_t trans_b;
  float alpha;
  float beta;
  /* Non-zero: the backend may accumulate the FP8 products with less than
   * fp32 precision where its hardware offers it (Hopper's fast
   * accumulation); 0: fp32 accumulation. */
  int32_t fast_accumulation;
} MNT_ScaledGemmParams;
#define MNT_ScaledGemmParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_ScaledGemmParams, fast_accumulation)

/* Since 1.10: MNT_OP_FP8_SCALE_UPDATE. */
typedef struct MNT_Fp8ScaleUpdateParams {
  size_t struct_size;
  float fp8_max;          /* the format's largest finite value: 448, 57344 */
  int32_t margin;         /* >= 0: scales are 2^margin below the maximum */
  MNT_AmaxAlgo amax_algo;
  int32_t history_length; /* rows of the history reduced, 1..H */
} MNT_Fp8ScaleUpdateParams;
#define MNT_Fp8ScaleUpdateParams_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Fp8ScaleUpdateParams, history_length)

/* ------------------------------------------------------------------------ */
/* Calls. Every call takes one Args struct (struct_size and extension chain  */
/* first, inputs, then outputs marked "out") and returns NULL or an error    */
/* the caller frees with the plugin's Error_Destroy.                         */
/* ------------------------------------------------------------------------ */
typedef struct MNT_Backend_Create_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  /* "key=value,key=value"; NULL or "" for defaults. Copied; unknown keys
   * are an error. */
  const char* options;
  int32_t device_ordinal;
  MNT_Backend* backend; /* out; caller owns, frees with Backend_Destroy */
} MNT_Backend_Create_Args;
#define MNT_Backend_Create_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Backend_Create_Args, backend)
typedef MNT_Error* MNT_Backend_Create(MNT_Backend_Create_Args* args);

/* Frees every allocation still held by the instance. Accepts NULL backend. */
typedef struct MNT_Backend_Destroy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
} MNT_Backend_Destroy_Args;
#define MNT_Backend_Destroy_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Backend_Destroy_Args, backend)
typedef MNT_Error* MNT_Backend_Destroy(MNT_Backend_Destroy_Args* args);

typedef struct MNT_Backend_GetInfo_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  const char* device_name;      /* out; owned by backend, lives as long */
  int64_t total_memory_bytes;   /* out; 0 if unknown */
  int32_t host_addressable;     /* out; 1 if device pointers are host memory */
  /* Since 1.8, out (written when the caller's struct has it): the slow
   * paths the instance took so far, one per line, "<calls> x <kind>: <shape>"
   * (a refused fused epilogue, a fallback kernel, a step run without its
   * graph), or "" / NULL for none. Owned by the backend; valid until the
   * next call on the instance. */
  const char* slow_paths;
} MNT_Backend_GetInfo_Args;
#define MNT_Backend_GetInfo_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Backend_GetInfo_Args, slow_paths)
#define MNT_Backend_GetInfo_Args_STRUCT_SIZE_1_7 \
  MNT_STRUCT_SIZE(MNT_Backend_GetInfo_Args, host_addressable)
typedef MNT_Error* MNT_Backend_GetInfo(MNT_Backend_GetInfo_Args* args);

/* Device memory, at least 256-byte aligned. size_bytes 0 gives NULL. The
 * caller owns the memory and frees it with Memory_Free on the same instance
 * (or lets Backend_Destroy free it). Contents are unspecified. */
typedef struct MNT_Memory_Allocate_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  size_t size_bytes;
  MNT_MemoryCategory category;
  void* data; /* out */
} MNT_Memory_Allocate_Args;
#define MNT_Memory_Allocate_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Memory_Allocate_Args, data)
typedef MNT_Error* MNT_Memory_Allocate(MNT_Memory_Allocate_Args* args);

/* Accepts NULL data. Freeing memory the instance did not allocate is an
 * error. */
typedef struct MNT_Memory_Free_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  void* data;
} MNT_Memory_Free_Args;
#define MNT_Memory_Free_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Memory_Free_Args, data)
typedef MNT_Error* MNT_Memory_Free(MNT_Memory_Free_Args* args);

/* Ordered on the instance's stream. A DEVICE_TO_HOST copy has completed when
 * the call returns; a HOST_TO_DEVICE copy has read `src` by then, so the
 * host buffer may be reused at once. Pointers are borrowed. */
typedef struct MNT_Memory_Copy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  void* dst;
  const void* src;
  size_t size_bytes;
  MNT_CopyKind kind;
} MNT_Memory_Copy_Args;
#define MNT_Memory_Copy_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Memory_Copy_Args, kind)
typedef MNT_Error* MNT_Memory_Copy(MNT_Memory_Copy_Args* args);

/* Bytes currently allocated and the peak since creation or the last
 * Memory_ResetPeak, for one category or MNT_MEMORY_ALL. */
typedef struct MNT_Memory_GetStats_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_MemoryCategory category;
  int64_t current_bytes; /* out */
  int64_t peak_bytes;    /* out */
} MNT_Memory_GetStats_Args;
#define MNT_Memory_GetStats_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Memory_GetStats_Args, peak_bytes)
typedef MNT_Error* MNT_Memory_GetStats(MNT_Memory_GetStats_Args* args);

/* Sets every category's peak to its current value. */
typedef struct MNT_Memory_ResetPeak_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
} MNT_Memory_ResetPeak_Args;
#define MNT_Memory_ResetPeak_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Memory_ResetPeak_Args, backend)
typedef MNT_Error* MNT_Memory_ResetPeak(MNT_Memory_ResetPeak_Args* args);

/* Waits until everything issued on the instance has finished. Errors of
 * asynchronous work surface here at the latest. */
typedef struct MNT_Backend_Synchronize_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
} MNT_Backend_Synchronize_Args;
#define MNT_Backend_Synchronize_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Backend_Synchronize_Args, backend)
typedef MNT_Error* MNT_Backend_Synchronize(MNT_Backend_Synchronize_Args* args);

typedef struct MNT_Backend_GetOpSupport_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Op op;
  int32_t supported; /* out */
} MNT_Backend_GetOpSupport_Args;
#define MNT_Backend_GetOpSupport_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Backend_GetOpSupport_Args, supported)
typedef MNT_Error* MNT_Backend_GetOpSupport(MNT_Backend_GetOpSupport_Args* args);

/* Issues one kernel on the instance's stream. The tensor arrays and params
 * are borrowed for the duration of the call only; the memory they point to
 * must stay valid until the work completes (Synchronize). */
typedef struct MNT_Backend_Run_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Op op;
  const MNT_Tensor* inputs;
  size_t num_inputs;
  const MNT_Tensor* outputs;
  size_t num_outputs;
  const void* params; /* op-specific struct starting with struct_size, or NULL */
} MNT_Backend_Run_Args;
#define MNT_Backend_Run_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Backend_Run_Args, params)
typedef MNT_Error* MNT_Backend_Run(MNT_Backend_Run_Args* args);

/* --- Since 1.1: events for timing work on the stream. ------------------- */
typedef struct MNT_Event_Create_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Event* event; /* out; caller owns, frees with Event_Destroy */
} MNT_Event_Create_Args;
#define MNT_Event_Create_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Event_Create_Args, event)
typedef MNT_Error* MNT_Event_Create(MNT_Event_Create_Args* args);

/* Records the point in the stream reached by the work issued so far. */
typedef struct MNT_Event_Record_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Event* event;
} MNT_Event_Record_Args;
#define MNT_Event_Record_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Event_Record_Args, event)
typedef MNT_Error* MNT_Event_Record(MNT_Event_Record_Args* args);

/* Waits for `end` and gives the milliseconds between two recorded events. */
typedef struct MNT_Event_ElapsedTime_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Event* start;
  MNT_Event* end;
  double milliseconds; /* out */
} MNT_Event_ElapsedTime_Args;
#define MNT_Event_ElapsedTime_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Event_ElapsedTime_Args, milliseconds)
typedef MNT_Error* MNT_Event_ElapsedTime(MNT_Event_ElapsedTime_Args* args);

/* Accepts NULL event. */
typedef struct MNT_Event_Destroy_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  MNT_Event* event;
} MNT_Event_Destroy_Args;
#define MNT_Event_Destroy_Args_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Event_Destroy_Args, event)
typedef MNT_Error* MNT_Event_Destroy(MNT_Event_Destroy_Args* args);

/* --- Since 1.7: step markers, so a backend may capture the ops of a
 * training step once (e.g. into a CUDA graph) and replay them. Optional: a
 * backend sets both or neither; NULL (or absent, in a backend built against
 * 1.6 or older) means no markers, and the host then does not call them.
 *
 * Backend_StepBegin opens a step on the instance; the ops issued until the
 * matching Backend_StepEnd form it. Between the two, Backend_Run checks each
 * op's operands and params before returning (a bad call fails at once, as
 * outside a step) but the backend may defer the work until StepEnd, copying
 * what the call borrows (the tensor arrays, the params struct and the arrays
 * it points to): the caller's pointers stay borrowed for the call only. At
 * StepEnd the backend issues the step's ops in order, eagerly or as a replay
 * of an earlier step that issued the same ops with the same operands
 * (pointers, dtypes, shapes) and the same params bytes. Errors of deferred
 * work are reported by StepEnd, by the call that made the backend issue it
 * (below), or by Backend_Synchronize, like any asynchronous work.
 *
 * Results never depend on whether the backend defers: a Memory_Copy to or
 * from the host, Memory_Free, Backend_Synchronize, Event_Record or
 * Event_ElapsedTime inside a step first issues the ops deferred so far (the
 * rest of that step then runs as issued), so every copy sees the work
 * issued before it; a DEVICE_TO_DEVICE Memory_Copy is stream work and is
 * deferred in its place among the ops
 * (host-addressable memory read directly, not through Memory_Copy, is read
 * after StepEnd). Device memory an op uses must stay valid until its work
 * completes, as always. A step is issued as a replay only when it equals
 * the captured one op for op: operand pointers, dtypes and shapes, params
 * bytes (padding excepted) and the arrays params point to; a host float
 * that changes (a scheduled learning rate) makes the step run as issued.
 * StepBegin inside an open step and StepEnd outside one are
 * FAILED_PRECONDITION; Backend_Destroy with a step open drops its deferred
 * ops. A backend that never defers may implement both as no-ops. */
typedef struct MNT_Backend_StepBegin_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
} MNT_Backend_StepBegin_Args;
#define MNT_Backend_StepBegin_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Backend_StepBegin_Args, backend)
typedef MNT_Error* MNT_Backend_StepBegin(MNT_Backend_StepBegin_Args* args);

typedef struct MNT_Backend_StepEnd_Args {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  MNT_Backend* backend;
  /* out: 1 when this step's work was issued as a replay of a captured
   * earlier step (one graph launch), else 0. */
  int32_t replayed;
} MNT_Backend_StepEnd_Args;
#define MNT_Backend_StepEnd_Args_STRUCT_SIZE \
  MNT_STRUCT_SIZE(MNT_Backend_StepEnd_Args, replayed)
typedef MNT_Error* MNT_Backend_StepEnd(MNT_Backend_StepEnd_Args* args);

typedef struct MNT_Backend_Api {
  size_t struct_size;
  MNT_Extension_Base* extension_start;
  /* 1.0 */
  MNT_Backend_Create* Backend_Create;
  MNT_Backend_Destroy* Backend_Destroy;
  MNT_Backend_GetInfo* Backend_GetInfo;
  MNT_Memory_Allocate* Memory_Allocate;
  MNT_Memory_Free* Memory_Free;
  MNT_Memory_Copy* Memory_Copy;
  MNT_Memory_GetStats* Memory_GetStats;
  MNT_Memory_ResetPeak* Memory_ResetPeak;
  MNT_Backend_Synchronize* Backend_Synchronize;
  MNT_Backend_GetOpSupport* Backend_GetOpSupport;
  MNT_Backend_Run* Backend_Run;
  /* Members appended later end the table of a source built for an older
   * minor (-DMNT_ABI_SOURCE_MINOR, mnt_common.h) where its minor's ended. */
#if MNT_ABI_MINOR >= 1
  /* 1.1: NULL, or absent in a 1.0 plugin, means no events. */
  MNT_Event_Create* Event_Create;
  MNT_Event_Record* Event_Record;
  MNT_Event_ElapsedTime* Event_ElapsedTime;
  MNT_Event_Destroy* Event_Destroy;
#endif
#if MNT_ABI_MINOR >= 7
  /* 1.7: NULL, or absent in an older plugin, means no step markers; both
   * set or both NULL. */
  MNT_Backend_StepBegin* Backend_StepBegin;
  MNT_Backend_StepEnd* Backend_StepEnd;
#endif
} MNT_Backend_Api;
#if MNT_ABI_MINOR >= 7
#define MNT_Backend_Api_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Backend_Api, Backend_StepEnd)
#elif MNT_ABI_MINOR >= 1
#define MNT_Backend_Api_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Backend_Api, Event_Destroy)
#else
#define MNT_Backend_Api_STRUCT_SIZE MNT_STRUCT_SIZE(MNT_Backend_Api, Backend_Run)
#endif
/* What a 1.1-1.6 plugin stores in struct_size. */
#define MNT_Backend_Api_STRUCT_SIZE_1_6 \
  MNT_STRUCT_SIZE(MNT_Backend_Api, Event_Destroy)
/* What a 1.0 plugin stores in struct_size. */
#define MNT_Backend_Api_STRUCT_SIZE_1_0 \
  MNT_STRUCT_SIZE(MNT_Backend_Api, Backend_Run)

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MANTISSA_PLUGINS_ABI_MNT_BACKEND_H_ */
