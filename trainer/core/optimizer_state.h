// The state of the memory-light optimizers (issue #39), which the
// ParameterStore's fp32 slots cannot hold: adamw8bit's moments as one code
// byte per element and one fp32 absmax per block of
// MNT_QUANTIZATION_BLOCK_SIZE elements (fp32 moments for tensors under
// --optimizer_options=min_8bit_size), Adafactor's factored second moment (a
// row and a column state per matrix) and its optional first moment. One
// allocation per tensor and piece, all MNT_MEMORY_OPTIMIZER_STATE, zeroed
// (a zero state is the op's start). What each parameter holds is a pure
// function of the config and the parameter's shape (StateTensorsOf), so the
// dry run and the estimator count the same bytes the run allocates.
#ifndef MANTISSA_TRAINER_CORE_OPTIMIZER_STATE_H_
#define MANTISSA_TRAINER_CORE_OPTIMIZER_STATE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "trainer/config/optimizer_options.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/parallel/shard_layout.h"

namespace mnt::trainer {

// One state tensor of a whole parameter.
struct StateTensorSpec {
  std::string prefix;  // its checkpoint name: prefix + parameter name
  MNT_DType dtype;
  int64_t count;  // elements for the whole parameter
  // Parameter elements per state element, for a piece's part (ZeRO-1): 1
  // (per element), MNT_QUANTIZATION_BLOCK_SIZE (per block), or 0 (whole
  // parameters only: Adafactor's factored rows and columns).
  int64_t granularity;
  size_t bytes() const;
};

// A parameter's shape as the optimizers see it: its dims, of which the
// first `stacked_dims` stack copies of one tensor (ABI 1.15; GPT-2's layers
// [L, ...]). Each copy is treated as its own tensor, as it would be in a
// model with one tensor per layer: bitsandbytes' small-tensor rule counts a
// copy's elements, and Adafactor factors and clips each copy by itself.
// With it the parameter's role (ABI 1.16), which adamw8bit's rule reads.
struct ParamShape {
  std::vector<int64_t> dims;
  int stacked_dims = 0;
  MNT_ParamRole role = MNT_PARAM_ROLE_OTHER;

  int64_t numel() const;
  int64_t copies() const;  // the product of the stacked dims
  std::vector<int64_t> copy_dims() const;  // the dims after them
  int64_t copy_numel() const { return numel() / copies(); }
};

// Whether `config` names an optimizer whose state OptimizerState keeps.
bool KeepsOwnState(const mantissa::OptimizerConfig& config);

// The state tensors of a parameter of `shape` under `config` (none for
// adamw, adam, sgd: their fp32 slots are the ParameterStore's). Copies'
// states lie one after another in each tensor.
std::vector<StateTensorSpec> StateTensorsOf(const mantissa::OptimizerConfig& config,
                                            const OptimizerOptions& options,
                                            const ParamShape& shape);

// Bytes of optimizer state for parameters of these shapes under `config`,
// the fp32 slots of adamw, adam and sgd included.
int64_t OptimizerStateBytes(const mantissa::OptimizerConfig& config,
                            const std::vector<ParamShape>& shapes);

// Whether a parameter of `shape` keeps adamw8bit's 8-bit moments: its
// copies have min_8bit_size elements or more, and it is no embedding
// (unless options.embedding_8bit).
bool Quantized(const OptimizerOptions& options, const ParamShape& shape);

// Whether Adafactor factors the second moment of each copy of `shape`: a
// copy of rank 2 or more.
bool Factored(const ParamShape& shape);

class OptimizerState {
 public:
  // The state of every piece the optimizer steps (`pieces`; `shapes` of
  // each parameter). A piece of a parameter (ZeRO-1) must start on a block
  // boundary, and a parameter with whole-only state must be whole.
  static absl::StatusOr<std::unique_ptr<OptimizerState>> Create(
      const mantissa::OptimizerConfig& config, const std::vector<ParamShape>& shapes,
      const std::vector<ParamPiece>& pieces, const sdk::BackendClient& client);

  const OptimizerOptions& options() const { return options_; }
  // Parameter `param`'s state tensors (StateTensorsOf).
  const std::vector<StateTensorSpec>& specs(int64_t param) const { return specs_[param]; }
  // Piece `i`'s part of its parameter's state tensor `k` on the device.
  MNT_Tensor Tensor(size_t i, size_t k) const;
  // Where a piece's part of state tensor `spec` lies in the whole tensor's
  // bytes: {offset, size}.
  static std::pair<size_t, size_t> ByteRange(const ParamPiece& piece, int64_t param_numel,
                                             const StateTensorSpec& spec);

 private:
  explicit OptimizerState(const OptimizerOptions& options) : options_(options) {}
  OptimizerOptions options_;
  std::vector<std::vector<StateTensorSpec>> specs_;        // [param][k]
  std::vector<std::vector<sdk::DeviceBuffer>> buffers_;    // [piece][k]
  std::vector<std::vector<MNT_Tensor>> tensors_;           // [piece][k]
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_OPTIMIZER_STATE_H_
