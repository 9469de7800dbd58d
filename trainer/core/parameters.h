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

namespace mnt::trainer {

// One parameter tensor and everything the trainer keeps for it.
struct Param {
  std::string name;
  std::vector<int64_t> dims;
  int64_t numel = 0;
  MNT_ParamInit init = MNT_PARAM_INIT_ZEROS;
  float init_scale = 0;
  bool weight_decay = false;
  // Views into the store's flat buffers (ParameterStore).
  sdk::DeviceBuffer weights;         // working weights (weight dtype)
  sdk::DeviceBuffer master;          // fp32 master (mixed precision only)
  sdk::DeviceBuffer grads;           // as backward writes them
  sdk::DeviceBuffer master_grads;    // fp32 accumulation (mixed only)
  sdk::DeviceBuffer state1, state2;  // Adam m, v / SGD momentum (fp32)
  // Adam with device loss scaling: applied steps, I32 [1], advanced by
  // ADAMW_STEP itself (one per tensor, as torch's state_steps). Optimizer.
  sdk::DeviceBuffer step_counter;

  MNT_Tensor Tensor(const sdk::DeviceBuffer& b, MNT_DType dtype) const {
    return sdk::MakeTensor(b.data(), dtype, static_cast<int32_t>(dims.size()),
                           dims.data());
  }
};

// ZeRO-1 (--zero_stage=1): this rank of `world` keeps the fp32 master
// weights and the optimizer state of its own parameters only. Rank r owns a
// contiguous run of parameters (in spec order), about 1/world of the flat
// elements, so the ranks' runs, concatenated in rank order, are every
// parameter in order. world 1: one rank owns all (no sharding).
struct ParamShard {
  int rank = 0;
  int world = 1;
};

// The owner of each of the parameters at flat `offsets` (FlatOffsets: one
// entry per parameter, then the total): the rank whose 1/world share of the
// flat elements holds the parameter's middle element, adjusted so that the
// owners run 0, 1, ..., world-1 without gaps where there are enough
// parameters.
std::vector<int> ParamOwners(const std::vector<int64_t>& offsets, int world);

// Element offsets of tensors of `numels` elements laid out back to back,
// each starting at a multiple of `alignment` elements; one more entry: the
// total (a multiple of `alignment`).
std::vector<int64_t> FlatOffsets(const std::vector<int64_t>& numels, int64_t alignment);

// Each kind of parameter buffer (working weights, gradients, fp32 masters,
// master gradients, optimizer state) is one allocation holding every
// parameter's tensor: Param's buffers are views into it (they free
// nothing), 256-byte aligned as separate allocations were, at the same
// element offset in every kind. Checkpoints read and write each tensor by
// itself, so their bytes are the same.
class ParameterStore {
 public:
  // Allocates and initialises every parameter `model` declares, in its spec
  // order, in the dtypes of `policy`, with `optimizer_state_slots` (1 or 2)
  // zeroed fp32 state tensors each; `seed` draws the initial values.
  static absl::StatusOr<std::unique_ptr<ParameterStore>> Create(
      const sdk::ModelClient& model, const sdk::BackendClient& client,
      const MNT_Precision_GetPolicy_Args& policy, int optimizer_state_slots,
      uint64_t seed, ParamShard shard = {});

  // ZeRO-1: whether this rank owns parameter `p` (its master weights,
  // optimizer state and update); always true without sharding. Under
  // sharding the master and state views of parameters it does not own are
  // empty, and their working weights are whatever the owner broadcast last
  // (WorkingWeightRange): the trainer gathers them after every update.
  bool sharded() const { return shard_.world > 1; }
  bool Owns(const Param& p) const;
  // Rank r's parameters as a range of the flat working weights, in elements
  // [begin, end) (empty when it owns none), and that range as a 1-D tensor.
  std::pair<int64_t, int64_t> OwnedElements(int rank) const;
  MNT_Tensor WorkingWeightRange(int64_t begin, int64_t end) const;
  // The index of this rank's first parameter (its optimizer's tensor 0).
  int64_t first_owned_param() const { return first_owned_; }
  int64_t owned_params() const { return owned_count_; }

  // Separate fp32 master weights and gradients (the policy has a master
  // dtype); otherwise the working weights are the master.
  bool mixed() const { return mixed_; }
  // The dtype of the working weights the model reads.
  MNT_DType weight_dtype() const { return weight_dtype_; }
  int64_t num_parameters() const { return num_parameters_; }
  std::vector<Param>& params() { return params_; }
  const std::vector<Param>& params() const { return params_; }

  // In spec order: what Model_Forward/Backward read and write.
  std::vector<MNT_Tensor> WeightTensors() const;
  std::vector<MNT_Tensor> GradTensors() const;
  // What the optimizer steps: fp32 master gradients (mixed) or the grads,
  // and the fp32 weights it updates (the master, or the working weights).
  MNT_Tensor OptimizerGrad(const Param& p) const;
  std::vector<MNT_Tensor> OptimizerGradTensors() const;
  // The optimizer's gradients of every parameter as one flat 1-D tensor,
  // the alignment padding between them included (never read as a
  // parameter's): what data parallelism averages, bucket by bucket.
  MNT_Tensor FlatOptimizerGrads() const;
  MNT_Tensor MasterWeights(const Param& p) const;
  MNT_Tensor WorkingWeights(const Param& p) const;
  // The buffer a checkpoint saves and restores as the weights (fp32).
  const sdk::DeviceBuffer& CheckpointedWeights(const Param& p) const {
    return mixed_ ? p.master : p.weights;
  }

  // Mixed precision: micro-batch `micro`'s 16-bit gradients into the fp32
  // master gradients (CAST on the first, ADD after), so accumulation loses
  // no bits. Without a master copy gradients accumulate in place: no-op.
  absl::Status AccumulateMasterGradients(int64_t micro);

  // Mixed precision: rounds the fp32 masters into the working weights.
  absl::Status SyncWorkingWeights();

 private:
  ParameterStore(const sdk::BackendClient& client,
                 const MNT_Precision_GetPolicy_Args& policy);
  // Every flat buffer, and the views into it for each parameter.
  absl::Status AllocateFlat(int optimizer_state_slots);

  // Each view starts on a 256-byte boundary (128 elements: 256 bytes in 16
  // bits, 512 in fp32), as aligned as a separate allocation of the backend,
  // so vector loads and cuBLASLt's alignment-keyed plans see no difference.
  static constexpr int64_t kFlatAlignmentElements = 128;

  const sdk::BackendClient& client_;
  MNT_DType weight_dtype_, gradient_dtype_;
  bool mixed_;
  std::vector<sdk::DeviceBuffer> flat_;  // owns what Param's views point at
  std::vector<Param> params_;
  int64_t num_parameters_ = 0;
  int64_t flat_elements_ = 0;  // each flat buffer's length, padding included
  ParamShard shard_;
  std::vector<int> owner_;            // per parameter
  std::vector<int64_t> offsets_;      // FlatOffsets of the parameters
  std::vector<std::pair<int64_t, int64_t>> owned_ranges_;  // per rank
  int64_t first_owned_ = 0, owned_count_ = 0;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_PARAMETERS_H_
