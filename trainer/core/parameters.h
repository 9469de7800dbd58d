// The model's parameters and every buffer the trainer keeps per parameter:
// working weights (the dtype the model reads), fp32 master weights and fp32
// master gradients (mixed precision only), gradients as backward writes
// them, and the optimizer's fp32 state. Initial values are drawn on the host
// (param_init.h), so every backend starts from the same bits.
#ifndef MANTISSA_TRAINER_CORE_PARAMETERS_H_
#define MANTISSA_TRAINER_CORE_PARAMETERS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model_client.h"
#include "plugins/sdk/tensor.h"
#include "trainer/parallel/gradient_buffers.h"
#include "trainer/parallel/shard_layout.h"

namespace mnt::trainer {

// One parameter tensor and everything the trainer keeps for it.
struct Param {
  std::string name;
  std::vector<int64_t> dims;
  int64_t numel = 0;
  MNT_ParamInit init = MNT_PARAM_INIT_ZEROS;
  float init_scale = 0;
  bool weight_decay = false;
  // Leading dims stacking copies of one tensor (ABI 1.15; GPT-2's layers),
  // for the optimizers that treat each copy as a tensor (ParamShape).
  int stacked_dims = 0;
  // What the parameter is to the model (ABI 1.16): adamw8bit keeps an
  // embedding's moments in 32 bits (OptimizerOptions::embedding_8bit).
  MNT_ParamRole role = MNT_PARAM_ROLE_OTHER;
  // --freeze: no gradient, master, master gradient or optimizer state (their
  // views stay empty: the model gets a gradient with NULL data, ABI 1.13),
  // and the working weights keep their values.
  bool frozen = false;
  // Views into the store's flat buffers (ParameterStore). Under ZeRO-1 the
  // master and the optimizer state are sharded and these two stay empty:
  // the store's pieces (PieceMaster, PieceState) are this rank's parts.
  sdk::DeviceBuffer weights;         // working weights (weight dtype)
  sdk::DeviceBuffer master;          // fp32 master (mixed precision only)
  sdk::DeviceBuffer grads;           // as backward writes them
  sdk::DeviceBuffer master_grads;    // fp32 accumulation (mixed only)
  sdk::DeviceBuffer state1, state2;  // Adam m, v / SGD momentum (fp32)

  MNT_Tensor Tensor(const sdk::DeviceBuffer& b, MNT_DType dtype) const {
    return sdk::MakeTensor(b.data(), dtype, static_cast<int32_t>(dims.size()),
                           dims.data());
  }
};

// Each kind of parameter buffer (working weights, gradients, fp32 masters,
// master gradients, optimizer state) is one allocation holding every
// parameter's tensor: Param's buffers are views into it (they free
// nothing), 256-byte aligned as separate allocations were, at the same
// element offset in every kind. Checkpoints read and write each tensor by
// itself, so their bytes are the same.
class ParameterStore : public GradientBuffers {
 public:
  // Allocates and initialises every parameter `model` declares, in its spec
  // order, in the dtypes of `policy`, with `optimizer_state_slots` (0, 1 or 2)
  // zeroed fp32 state tensors each; `seed` draws the initial values.
  static absl::StatusOr<std::unique_ptr<ParameterStore>> Create(
      const sdk::ModelClient& model, const sdk::BackendClient& client,
      const MNT_Precision_GetPolicy_Args& policy, int optimizer_state_slots,
      uint64_t seed, ParamShard shard = {}, const std::vector<bool>& frozen = {});

  // ZeRO-1: masters, optimizer state and the averaged gradient are this
  // rank's share only; the working weights of the other shares are what
  // their ranks gathered last (the trainer gathers after every update).
  bool sharded() const { return shard_.zero1 && shard_.world > 1; }
  const ShardLayout& layout() const override { return layout_; }

  // What this rank's optimizer steps, in flat order: every parameter whole,
  // or (ZeRO-1) the pieces of its share.
  const std::vector<ParamPiece>& steps() const { return steps_; }
  // Whether some of them are parts of a parameter.
  bool splits_parameters() const;
  // A piece's part of each buffer: the parameter's tensor (its dims) for a
  // whole one, else a 1-D range. PieceGrad: the gradient the optimizer
  // reads (ZeRO-1: the averaged share); PieceMaster: the fp32 weights it
  // updates; PieceWorking: the rounded copy it writes (mixed only).
  MNT_Tensor PieceGrad(const ParamPiece& piece) const;
  MNT_Tensor PieceMaster(const ParamPiece& piece) const;
  MNT_Tensor PieceState(const ParamPiece& piece, int slot) const;
  MNT_Tensor PieceWorking(const ParamPiece& piece) const;

  // The gradients the loss scaling unscales and checks for inf/NaN: every
  // parameter's, or (ZeRO-1) this rank's share.
  std::vector<MNT_Tensor> UnscaledGradTensors() const;
  // The gradients whose squared norm this rank adds: every parameter's, or
  // (world > 1) its share's, whose sum over ranks is the global norm.
  std::vector<MNT_Tensor> NormGradTensors() const;
  bool norm_is_partial() const { return shard_.world > 1; }

  // fp32 optimizer state tensors per parameter (0, 1 or 2).
  int state_slots() const {
    return (state_flat_[0].data() != nullptr) + (state_flat_[1].data() != nullptr);
  }

  // Separate fp32 master weights and gradients (the policy has a master
  // dtype); otherwise the working weights are the master.
  bool mixed() const { return mixed_; }
  // The dtype of the working weights the model reads.
  MNT_DType weight_dtype() const { return weight_dtype_; }
  int64_t num_parameters() const { return num_parameters_; }
  // The elements of the parameters that are not frozen.
  int64_t num_trainable() const { return num_trainable_; }
  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }

  // In spec order: what Model_Forward/Backward read and write.
  std::vector<MNT_Tensor> WeightTensors() const;
  std::vector<MNT_Tensor> GradTensors() const;
  // What the optimizer steps from: fp32 master gradients (mixed) or the
  // grads, whole and as backward (and the exchange) left them.
  MNT_Tensor OptimizerGrad(const Param& p) const;
  std::vector<MNT_Tensor> OptimizerGradTensors() const;
  // The optimizer's gradients of every parameter as one flat 1-D tensor
  // (elements [begin, end), default all), the alignment padding between
  // them included (never read as a parameter's): what data parallelism
  // averages or reduce-scatters, bucket by bucket.
  MNT_Tensor FlatOptimizerGrads(int64_t begin = 0, int64_t end = -1) const override;
  // ZeRO-1: `n` elements of this rank's averaged gradient share from
  // element `at` (where a bucket's reduce-scatter writes).
  MNT_Tensor ShardGrads(int64_t at, int64_t n) const override;
  // The working weights' flat elements [begin, end) (ZeRO-1's all-gather).
  MNT_Tensor FlatWorkingWeights(int64_t begin, int64_t end) const override;
  MNT_Tensor WorkingWeights(const Param& p) const;
  // The fp32 weights a checkpoint saves: the master, or the working weights
  // (mixed precision off). Whole parameters only: not under ZeRO-1 with
  // mixed precision (PieceMaster).
  const sdk::DeviceBuffer& CheckpointedWeights(const Param& p) const {
    return mixed_ ? p.master : p.weights;
  }

  // Mixed precision: micro-batch `micro`'s 16-bit gradients into the fp32
  // master gradients (CAST on the first, ADD after), so accumulation loses
  // no bits. Without a master copy gradients accumulate in place: no-op.
  absl::Status AccumulateMasterGradients(int64_t micro) override;

  // The same for elements [first, first + count) of parameter `param` only
  // (a slice a model handed over while its backward goes on).
  absl::Status AccumulateMasterGradients(int64_t micro, int64_t param, int64_t first,
                                         int64_t count) override;

  // Mixed precision: rounds the fp32 masters of this rank's pieces into the
  // working weights.
  absl::Status SyncWorkingWeights();

 private:
  ParameterStore(const sdk::BackendClient& client,
                 const MNT_Precision_GetPolicy_Args& policy);
  // Every flat buffer, and the views into it for each parameter.
  absl::Status AllocateFlat(int optimizer_state_slots);
  // Writes the initial fp32 values and zeroes the optimizer state.
  absl::Status Initialise(uint64_t seed);
 public:
  // A frozen parameter's working weights from fp32 values (rounded to
  // nearest even on the host when they are 16-bit): initialisation and
  // restore, which have no master to round from.
  absl::Status WriteFrozenWeights(const Param& p, const float* values);
  // And back, as fp32 (exact: every 16-bit value is one), for checkpoints.
  absl::Status ReadFrozenWeights(const Param& p, float* values) const;
 private:
  // A 1-D range of a flat buffer of `dtype`.
  static MNT_Tensor Range(const sdk::DeviceBuffer& flat, MNT_DType dtype, int64_t at, int64_t n);

  const sdk::BackendClient& client_;
  MNT_DType weight_dtype_, gradient_dtype_;
  bool mixed_;
  ParamShard shard_;
  std::vector<Param> params_;
  int64_t num_parameters_ = 0, num_trainable_ = 0;
  // The working weights' offsets: layout_'s, unless parameters are frozen
  // (then layout_ gives them no elements, and these do).
  std::vector<int64_t> weight_offsets_;
  int64_t weight_elements_ = 0;
  ShardLayout layout_;  // the flat layout (offsets) and the ranks' shares
  std::vector<ParamPiece> share_;  // this rank's share (world > 1)
  std::vector<ParamPiece> steps_;
  // The flat buffers Param's views point into (empty where not needed).
  sdk::DeviceBuffer weights_flat_, grads_flat_, master_flat_, master_grads_flat_;
  sdk::DeviceBuffer state_flat_[2];
  sdk::DeviceBuffer shard_grads_flat_;  // ZeRO-1: the averaged share
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_PARAMETERS_H_
