// Mantissa GPT-2 model: the network (parameter specs, forward, backward),
// written against the op facade (plugins/sdk/model/ops.h), so it runs on any
// backend with the ABI 1.2 attention ops, and uses the ABI 1.6 fused ops
// (GELU/dGELU/bias-gradient GEMM epilogues, the in-place classifier) where
// the backend supports them (option fused=0 turns them off).
//
// Parameters follow llm.c's order and layout, with the per-layer tensors
// stacked along a leading [L] dimension so a checkpoint is the parameters
// written back to back:
//   wte [Vp,C], wpe [maxT,C], ln1w [L,C], ln1b [L,C], qkvw [L,3C,C],
//   qkvb [L,3C], attprojw [L,C,C], attprojb [L,C], ln2w [L,C], ln2b [L,C],
//   fcw [L,4C,C], fcb [L,4C], fcprojw [L,C,4C], fcprojb [L,C], lnfw [C],
//   lnfb [C].
// Linear weights are [out, in] (PyTorch's nn.Linear), so every GEMM is
// x @ W^T. Logits are tied to wte. Loss: mean token cross-entropy over the
// first `vocab` of the Vp logit columns.
#ifndef MANTISSA_MODELS_GPT2_GPT2_NETWORK_H_
#define MANTISSA_MODELS_GPT2_GPT2_NETWORK_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "plugins/sdk/model/create_args.h"
#include "plugins/sdk/model/device_arena.h"
#include "plugins/sdk/model/model_io.h"
#include "plugins/sdk/model/ops.h"
#include "plugins/sdk/model/param_spec.h"
#include "plugins/sdk/model/recompute.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/status.h"

namespace mnt::gpt2 {

using models::ParamSpec;

// Indices into the parameter list.
enum ParamIndex {
  kWte, kWpe, kLn1w, kLn1b, kQkvw, kQkvb, kAttprojw, kAttprojb, kLn2w,
  kLn2b, kFcw, kFcb, kFcprojw, kFcprojb, kLnfw, kLnfb, kNumParams
};

// Specs of a configuration with padded vocabulary `padded_vocab`.
std::vector<ParamSpec> Gpt2ParamSpecs(const Gpt2Config& config,
                                      int64_t padded_vocab);

class Gpt2Network {
 public:
  // What it trains on (ABI 1.12; the trainer refuses other data): token
  // sequences.
  static constexpr int32_t kDataKinds[] = {MNT_DATA_KIND_TOKENS};

  static sdk::Status Create(const MNT_Model_Create_Args& args,
                            std::unique_ptr<Gpt2Network>* out);

  Gpt2Network(const Gpt2Network&) = delete;
  Gpt2Network& operator=(const Gpt2Network&) = delete;

  const std::vector<ParamSpec>& param_specs() const { return io_.param_specs(); }
  const Gpt2Config& config() const { return config_; }
  int64_t vocab() const { return vocab_; }
  int64_t padded_vocab() const { return padded_vocab_; }
  int64_t seq_len() const { return t_; }

  sdk::Status Forward(const models::ForwardCall& call);
  sdk::Status Backward(const models::BackwardCall& call);
  const models::ModelSetup& setup() const { return setup_; }

  // The logits [batch*T, Vp] (activation dtype) of the last Forward; for
  // sampling tools that link the model directly. After a Backward on a
  // backend with the fused classifier they hold dlogits instead.
  MNT_Tensor Logits(int64_t batch) const;

 private:
  using Slot = models::DeviceArena::Slot;

  // One block's parameters (or their gradients): layer l of the stacked
  // tensors.
  struct BlockParams {
    MNT_Tensor ln1w, ln1b, qkvw, qkvb, attprojw, attprojb, ln2w, ln2b, fcw,
        fcb, fcprojw, fcprojb;
  };
  // One block's saved activations for n = B*T rows.
  struct BlockActivations {
    models::LayerNormOutput ln1;  // [n, C]
    MNT_Tensor qkv;               // [n, 3C]
    MNT_Tensor atty;              // [n, C], attention output
    MNT_Tensor lse;               // F32 [B, H, T]
    MNT_Tensor res2;              // [n, C], x + attention projection
    models::LayerNormOutput ln2;  // [n, C]
    MNT_Tensor fch, fchg;         // [n, 4C], fc output and its GELU
  };
  // Where a block's activations live (in BlockActivations' order).
  struct BlockSlots {
    Slot ln1, mean1, rstd1, qkv, atty, lse, res2, ln2, mean2, rstd2, fch, fchg;
  };

  Gpt2Network() = default;
  sdk::Status Init(const MNT_Model_Create_Args& args);
  sdk::Status CheckData(const MNT_DataSpec& data);
  void PlanActivations();
  static BlockParams LayerOf(const MNT_Tensor* stacked, int layer);
  BlockActivations BlockViews(int layer, int64_t batch) const;
  // [n, width] view of an activation.
  MNT_Tensor Rows(Slot slot, int64_t n, int64_t width) const {
    return activations_.View(slot, {n, width});
  }
  // The input of block `layer` (layer L: the last block's output).
  MNT_Tensor Residual(int layer, int64_t n) const {
    return Rows(residual_[layer], n, config_.d_model);
  }
  models::LayerNormOutput FinalNorm(int64_t n) const;
  // Where a block's output goes and the layer norm that reads it (the next
  // block's ln1, or lnf): one fused residual add + layer norm.
  struct NextNorm {
    MNT_Tensor y;  // the block's output (the next residual stream)
    MNT_Tensor weight, bias;
    models::LayerNormOutput norm;
  };
  // The block from a.ln1 = ln1(x) (already computed), saving `a`, to
  // next->y = block(x) and next->norm = its layer norm; without `next`
  // (recomputing for the backward) it stops at what the backward reads.
  sdk::Status BlockForward(const BlockParams& w, const MNT_Tensor& x,
                           const BlockActivations& a, int64_t batch,
                           const NextNorm* next);
  // A second Backward of one Forward with the fused classifier: the
  // dlogits over the logits rescaled to `grad_scale`.
  sdk::Status RescaleDlogits(const MNT_Tensor& dlogits, const models::GradScale& grad_scale);
  // On entry dres holds dL/d(block output); on exit dL/d(block input x).
  sdk::Status BlockBackward(const BlockParams& w, const BlockParams& dw,
                            const MNT_Tensor& x, const BlockActivations& a,
                            int64_t batch, bool accumulate);

  Gpt2Config config_;
  models::ModelSetup setup_;
  models::ModelIo io_;
  int64_t vocab_ = 0, padded_vocab_ = 0;
  int64_t t_ = 0;  // the data's sequence length (<= config.seq_len)

  models::DeviceArena activations_;
  models::Recompute recompute_;     // checkpointing: blocks recomputed in Backward
  std::vector<BlockSlots> blocks_;  // recompute_.sets(): L, or 1 with checkpointing
  std::vector<Slot> residual_;      // L + 1 block inputs/outputs
  Slot lnf_, meanf_, rstdf_, logits_;
  // Gradient scratch (dlogits_ only without the fused classifier).
  Slot dlogits_, dres_, dtmp_, dtmp2_, dbig_, dqkv_;

  models::DeviceArena workspace_;
  Slot losses_, ids_, targets_, positions_;
  // F32 [1]: the device multiplier the fused classifier's dlogits carry.
  Slot dlogits_multiplier_;
  int64_t saved_batch_ = 0;  // sequences of the last training Forward
  // With the fused classifier: the logits already hold dlogits (a Backward
  // of this Forward ran), scaled by dlogits_scale_ (times the value saved in
  // dlogits_multiplier_ when dlogits_scale_on_device_).
  bool dlogits_in_logits_ = false;
  float dlogits_scale_ = 0.0f;
  bool dlogits_scale_on_device_ = false;
};

}  // namespace mnt::gpt2

#endif  // MANTISSA_MODELS_GPT2_GPT2_NETWORK_H_
