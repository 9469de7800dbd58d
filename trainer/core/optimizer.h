// The optimizer step: AdamW or SGD (momentum, Nesterov) over every
// parameter, one backend op per tensor that updates the fp32 master and the
// optimizer state and, in mixed precision, writes the rounded working copy;
// or, where the backend supports it (ABI 1.6, --multi_tensor_optimizer=auto),
// one MULTI_ADAMW_STEP / MULTI_SGD_STEP over the whole parameter table, with
// the same bits. With a device learning rate (ABI 1.7) the scheduled lr is
// written to a device scalar before the step and every op's params stay the
// same step after step (what a recorded CUDA graph replays). Since ABI 1.7
// (--stochastic_rounding) the bf16 working copy may also be rounded
// stochastically, its random bits keyed by a seed from --seed, the step and
// the parameter's index (the same in both forms).
//
// Since ABI 1.12 (issue #39) also the memory-light optimizers, one op per
// tensor: adamw8bit (ADAMW8BIT_STEP, bitsandbytes' blockwise 8-bit moments;
// tensors under min_8bit_size elements step with ADAMW_STEP on fp32
// moments, as bitsandbytes keeps them) and adafactor (ADAFACTOR_STEP, HF's
// Adafactor). Their state is OptimizerState's, not the ParameterStore's fp32
// slots. Since ABI 1.14 (--multi_tensor_optimizer=auto, where the backend
// supports the ops) adamw8bit steps as two tables with the same bits: one
// MULTI_ADAMW8BIT_STEP over its 8-bit tensors, one MULTI_ADAMW_STEP over
// the small ones; adafactor as one MULTI_ADAFACTOR_STEP.
#ifndef MANTISSA_TRAINER_CORE_OPTIMIZER_H_
#define MANTISSA_TRAINER_CORE_OPTIMIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/backend_instance.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/device_scalars.h"
#include "trainer/core/optimizer_state.h"
#include "trainer/core/parameters.h"

namespace mnt::trainer {

class Optimizer {
 public:
  // fp32 state tensors per parameter in the ParameterStore: AdamW's m and
  // v, SGD's momentum; 0 for adamw8bit and adafactor (OptimizerState).
  static int StateSlots(const mantissa::OptimizerConfig& config);

  // adamw8bit and adafactor need their op (ABI 1.12) in the backend: one
  // line naming the op and the backend's ABI otherwise.
  static absl::Status CheckBackend(const mantissa::OptimizerConfig& config,
                                   const sdk::BackendInstance& backend);

  // The memory-light optimizers' state (null for adamw, adam, sgd): what
  // checkpoints save besides the ParameterStore's slots.
  const OptimizerState* own_state() const { return own_state_.get(); }

  // `skips_on_device`: found_inf stays on the device (device loss scaling)
  // and the optimizer kernels skip an overflow step themselves; AdamW then
  // counts its applied steps on the device too (one I32 counter per tensor,
  // ADAMW_STEP in[3], ABI 1.4), allocated here.
  // `multi_tensor`: one multi-tensor op per step (UsesMultiTensor).
  // `device_lr`: the ops take the learning rate from a device scalar
  // (TakesDeviceLr), allocated here.
  static absl::StatusOr<std::unique_ptr<Optimizer>> Create(
      const mantissa::OptimizerConfig& config, ParameterStore* params,
      const sdk::BackendClient& client, bool skips_on_device,
      bool multi_tensor = false, bool device_lr = false);

  // Whether a step is one multi-tensor op per table: --multi_tensor_optimizer=auto
  // and a backend that reports the ops supported (ABI 1.6: adamw, adam, sgd;
  // ABI 1.14: adamw8bit, which needs MULTI_ADAMW8BIT_STEP and
  // MULTI_ADAMW_STEP; adafactor, MULTI_ADAFACTOR_STEP).
  static bool UsesMultiTensor(const mantissa::OptimizerConfig& config,
                              const sdk::BackendInstance& backend);
  bool multi_tensor() const { return multi_tensor_; }
  // Bytes of optimizer state per parameter (OptimizerStateBytes over every
  // parameter, AdamW's and SGD's fp32 slots included): the run report's.
  double StateBytesPerParameter() const;

  // Whether the backend's optimizer ops take a device learning rate: it
  // offers MNT_CAPABILITY_OPTIMIZER_DEVICE_LR (ABI 1.7; others refuse the
  // extra input).
  static bool TakesDeviceLr(const sdk::BackendInstance& backend);
  bool device_lr() const { return device_lr_; }

  // Before a step's first op: with a device lr, writes `lr` (as fp32) to it,
  // one host -> device copy; else nothing.
  absl::Status SetLearningRate(double lr);

  // --stochastic_rounding's preconditions, one line each: bf16 working
  // weights (a copy the optimizer writes) and a backend that offers
  // MNT_CAPABILITY_STOCHASTIC_ROUNDING (ABI 1.7; another would round to
  // nearest without saying so).
  // `mixed`: fp32 masters apart from working weights of `weight_dtype`.
  // `splits_parameters`: the step updates parts of parameters (ZeRO-1), whose
  // bits must be keyed by their place in the parameter: a backend offering
  // MNT_CAPABILITY_OPTIMIZER_PIECES (ABI 1.11).
  static absl::Status CheckStochasticRounding(const mantissa::OptimizerConfig& config,
                                              const sdk::BackendInstance& backend, bool mixed,
                                              MNT_DType weight_dtype,
                                              const std::string& precision_name,
                                              bool splits_parameters = false);
  // The seed of the random bits a run derives from its --seed.
  static uint64_t RoundingSeedFor(uint64_t run_seed);
  bool stochastic_rounding() const { return config_.stochastic_rounding(); }
  uint64_t rounding_seed() const { return rounding_seed_; }
  void set_rounding_seed(uint64_t seed) { rounding_seed_ = seed; }

  // One step with learning rate `lr` (the device scalar SetLearningRate wrote,
  // when device_lr()) on the gradients times `multiplier` (F32 [1], the clip
  // factor). `found_inf` is F32 [1] when the kernels skip
  // on it, an empty F32 [0] when the host already decided to step.
  // `train_step` (1-based) is the step SGD's stochastic rounding keys its
  // bits with (AdamW uses its bias-correction step).
  absl::Status Step(double lr, const MNT_Tensor& found_inf,
                    const MNT_Tensor& multiplier, int64_t train_step);

  // Applied (not skipped) steps: AdamW's bias correction. With device step
  // counters the host's count is only brought up to date by the loss
  // scaling's sync (set_applied_steps).
  int64_t applied_steps() const { return applied_steps_; }
  void set_applied_steps(int64_t n) { applied_steps_ = n; }

  bool has_device_step_counters() const { return device_step_counters_; }
  // Every tensor's device counter := `applied`.
  absl::Status WriteDeviceStepCounters(int64_t applied);
  // The first tensor's device counter (all advance together).
  absl::StatusOr<int32_t> ReadDeviceStepCounter() const;

 private:
  Optimizer(const mantissa::OptimizerConfig& config, ParameterStore* params,
            const sdk::BackendClient& client, bool skips_on_device, bool multi_tensor,
            bool device_lr);
  // The lr the params carry: the step's, or (device lr) the configured one,
  // ignored by the op and the same every step.
  float ParamsLr(double lr) const;
  // AdamW's params->step: applied + 1, or 1 with device counters (ignored).
  int64_t ParamsStep() const;
  // The device lr as an op input (SGD_STEP in[3], ADAMW_STEP in[4], the
  // multi ops' last input).
  MNT_Tensor LrInput() const;
  // Piece `i` with ADAMW8BIT_STEP (or, for a small tensor, ADAMW_STEP on
  // fp32 moments) or ADAFACTOR_STEP; `in` holds its inputs.
  sdk::Status OwnStateStep(size_t i, float lr, std::vector<MNT_Tensor> in);
  // The whole table in one MULTI_ADAMW_STEP / MULTI_SGD_STEP.
  sdk::Status MultiTensorStep(float lr, const MNT_Tensor& found_inf,
                              const MNT_Tensor& multiplier, int64_t train_step);
  // Adafactor steps each stacked copy of a parameter (ParamShape) as its
  // own tensor: piece `i`'s copy `c` of copies_[i], its gradient with the
  // copy's dims, ADAFACTOR_STEP's outputs (absent ones, NULL, in their
  // places), its step counter and its rounding tensor index (the
  // parameter's for copy 0, so an unstacked parameter keeps its bits).
  MNT_Tensor AdafactorGrad(size_t i, int64_t c) const;
  std::vector<MNT_Tensor> AdafactorOutputs(size_t i, int64_t c) const;
  MNT_Tensor StepCounter(size_t i, int64_t c) const {
    return I32Scalar(step_counters_[first_counter_[i] + static_cast<size_t>(c)]);
  }
  int64_t CopyRoundingTensor(size_t i, int64_t c) const;
  // adamw8bit's and adafactor's tables (ABI 1.14), own_tables_: one op each.
  void BuildOwnStateTables();
  sdk::Status OwnStateMultiStep(float lr, const MNT_Tensor& found_inf,
                                const MNT_Tensor& multiplier);
  MNT_Rounding rounding() const {
    return config_.stochastic_rounding() ? MNT_ROUNDING_STOCHASTIC : MNT_ROUNDING_NEAREST_EVEN;
  }
  // SGD's rounding_step: the step only when it keys random bits, else 0, so
  // round-to-nearest steps keep the same params every step (a graph replays).
  int64_t RoundingStep(int64_t train_step) const {
    return config_.stochastic_rounding() ? train_step : 0;
  }

  const mantissa::OptimizerConfig config_;
  const bool adam_;
  ParameterStore* params_;
  const sdk::BackendClient& client_;
  const bool skips_on_device_;
  const bool device_step_counters_;
  const bool multi_tensor_;
  const bool device_lr_;
  sdk::DeviceBuffer lr_;  // F32 [1], with device_lr_
  // Each tensor's weight decay, for the multi-tensor params (built once: the
  // array the params point at stays put).
  std::vector<float> weight_decays_;
  // Each stepped tensor's parameter index and first element there (ABI
  // 1.11's rounding keys).
  std::vector<int64_t> rounding_tensors_, rounding_elements_;
  // Each stepped piece's copies (Adafactor on a stacked parameter: its
  // copies; else 1) and its first device step counter.
  std::vector<int64_t> copies_;
  std::vector<size_t> first_counter_;
  size_t counters_ = 0;  // their sum
  // AdamW's device step counters, one per stepped tensor (each copy).
  std::vector<sdk::DeviceBuffer> step_counters_;
  std::unique_ptr<OptimizerState> own_state_;
  // A multi-tensor step's table of own-state pieces (indices into
  // params_->steps()) with its op and per-piece params arrays, built once.
  struct PieceTable {
    MNT_Op op = MNT_OP_INVALID;
    std::vector<size_t> pieces;
    std::vector<int64_t> copies;  // each entry's copy of its piece
    std::vector<float> weight_decays;
    std::vector<int64_t> rounding_tensors, rounding_elements;
  };
  std::vector<PieceTable> own_tables_;
  int64_t applied_steps_ = 0;
  uint64_t rounding_seed_ = 0;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_OPTIMIZER_H_
