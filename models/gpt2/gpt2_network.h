// Mantissa GPT-2 model: the network (parameter specs, forward, backward),
// issuing only backend kernels so it runs on any backend with the ABI 1.2
// attention ops.
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
#include <string>
#include <vector>

#include "models/common/device_arena.h"
#include "models/common/model_io.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/status.h"

namespace mnt::gpt2 {

struct ParamSpec {
  std::string name;
  std::vector<int64_t> dims;
  MNT_ParamInit init;
  float init_scale;
  bool weight_decay;
};

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
  static sdk::Status Create(const MNT_Model_Create_Args& args,
                            std::unique_ptr<Gpt2Network>* out);

  Gpt2Network(const Gpt2Network&) = delete;
  Gpt2Network& operator=(const Gpt2Network&) = delete;

  const std::vector<ParamSpec>& param_specs() const { return specs_; }
  const Gpt2Config& config() const { return config_; }
  int64_t vocab() const { return vocab_; }
  int64_t padded_vocab() const { return padded_vocab_; }
  int64_t seq_len() const { return t_; }

  sdk::Status Forward(const models::ForwardCall& call);
  sdk::Status Backward(const models::BackwardCall& call);

  // The logits [batch*T, Vp] (activation dtype) of the last Forward; for
  // sampling tools that link the model directly.
  MNT_Tensor Logits(int64_t batch) const;

 private:
  // One block's saved activations.
  struct BlockBuffers {
    size_t ln1, mean1, rstd1, qkv, atty, lse, res2, ln2, mean2, rstd2, fch,
        fchg;
  };

  Gpt2Network() = default;
  sdk::Status Init(const MNT_Model_Create_Args& args);
  sdk::Status CheckParams(const char* call, const char* what,
                          const MNT_Tensor* tensors, size_t count,
                          MNT_DType dtype) const;
  sdk::Status BlockForward(const MNT_Tensor* params, int layer, int64_t batch,
                           bool recompute);
  sdk::Status BlockBackward(const MNT_Tensor* params, const MNT_Tensor* grads,
                            int layer, int64_t batch, bool accumulate);
  sdk::Status LinearBackward(const MNT_Tensor& x, const MNT_Tensor& w,
                             const MNT_Tensor& dy, const MNT_Tensor& dw,
                             const MNT_Tensor& db, const MNT_Tensor* dx,
                             bool accumulate);
  const BlockBuffers& Block(int layer) const {
    return blocks_[config_.checkpointing ? 0 : layer];
  }
  // Views: activation dtype [rows, width], or F32/I32 workspace.
  MNT_Tensor Act(size_t handle, int64_t rows, int64_t width) const;
  MNT_Tensor Act3(size_t handle, int64_t batch, int64_t width) const;
  MNT_Tensor Stat(size_t handle, int64_t rows) const;

  Gpt2Config config_;
  sdk::BackendClient client_;
  MNT_ModelPrecision precision_{};
  int64_t vocab_ = 0, padded_vocab_ = 0;
  int64_t t_ = 0;          // the data's sequence length (<= config.seq_len)
  int64_t max_batch_ = 0;  // sequences
  std::vector<ParamSpec> specs_;

  models::DeviceArena activations_;
  std::vector<BlockBuffers> blocks_;  // L, or 1 with checkpointing
  std::vector<size_t> residual_;      // L + 1 block inputs/outputs
  size_t lnf_ = 0, meanf_ = 0, rstdf_ = 0, logits_ = 0;
  size_t dlogits_ = 0, dres_ = 0, dtmp_ = 0, dtmp2_ = 0, dbig_ = 0,
         dqkv_ = 0;

  models::DeviceArena workspace_;
  size_t losses_ = 0, ids_ = 0, targets_ = 0, positions_ = 0;
  int64_t saved_batch_ = 0;
  int64_t last_batch_ = 0;
};

}  // namespace mnt::gpt2

#endif  // MANTISSA_MODELS_GPT2_GPT2_NETWORK_H_
