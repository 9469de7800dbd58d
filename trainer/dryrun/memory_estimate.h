// "Will it fit?": the device memory a training run takes, by category, for
// a model, its options, a precision and a batch size, worked out before the
// run from the plugins' own declarations while allocating nothing large:
//
//   weights, master weights, gradients, master gradients, optimizer state:
//     the model's parameter table (Model_GetParamSpec), laid out as the
//     trainer lays it out (one flat buffer per kind, each tensor starting on
//     a 128-element boundary: trainer/core/parameters.cc), times the
//     precision plugin's bytes per parameter (Precision_GetMemoryPlan);
//   activations, workspace: what the model allocates in Model_Create for
//     that batch size (in-tree models allocate all of it there, sized by
//     max_batch_size), asked of a CountingBackend: the real backend answers
//     every query, allocations are counted and backed by address space only;
//   data: the batch's inputs and targets as the trainer uploads them
//     (4 bytes an element), plus its step scalars.
//
// A precision whose MATMUL op class computes in FP8 (fp8, ABI 1.10) also
// takes what the trainer and the model add for FP8 GEMMs:
//   optimizer state: the trainer's scaling state (trainer/core/fp8_scaling.cc):
//     per scaling slot (plugins/sdk/fp8_slots.h: one per GEMM weight matrix)
//     and role (input, weight, output gradient) a scale, its inverse and the
//     last amax, plus the delayed recipe's amax history of
//     --precision_options' history length: 4 * (9 S + 3 S H) bytes;
//   workspace: the FP8 copies of the GEMM operands (plugins/sdk/model/fp8_gemms.h:
//     two scratch buffers, one byte per element of the largest A and the
//     largest B operand, and 8 bytes of constants under current scaling),
//     found by running one training forward and backward of the model on the
//     CountingBackend (its ops do nothing; the scratch it grows is counted;
//     at a batch size the model cannot train at, an evaluation forward).
//
// With --ranks=N (data parallel) the numbers are one rank's; with
// --zero_stage=1 masters and optimizer state are 1/N of the flat layout and
// the share's averaged gradient (fp32 with a master copy) joins "gradients".
//
// The trainer's report counts master gradients under "gradients"; here
// they are a row of their own.
#ifndef MANTISSA_TRAINER_DRYRUN_MEMORY_ESTIMATE_H_
#define MANTISSA_TRAINER_DRYRUN_MEMORY_ESTIMATE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "plugins/abi/mantissa.h"
#include "plugins/sdk/backend_instance.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::memory {

// What stays the same across precisions and batch sizes.
struct EstimateSetup {
  std::string device = "cpu";  // the backend plugin whose op support the model sees
  std::string backend_options;
  std::string model;
  std::string model_options;
  MNT_DataSpec data_spec{};  // per example, as the dataset would give it
  std::string optimizer = "adamw";  // adamw | adam | sgd | adamw8bit | adafactor
  std::string optimizer_options;    // --optimizer_options (adafactor's beta1, min_8bit_size)
  // --precision_options (an FP8 precision's scaling recipe: its history
  // length sizes the amax history).
  std::string precision_options;
  // Data parallel: the estimate is one rank's (rank 0's) of `ranks`; the
  // flat layout is padded as the trainer pads it (trainer/core/shard_layout.h),
  // and with zero_stage 1 the fp32 masters and the optimizer state are the
  // rank's share, plus its share's averaged gradient.
  int ranks = 1;
  int zero_stage = 0;
  double bucket_mb = 25;
  // --freeze: globs over parameter names that train no further (no
  // gradient, master, master gradient or optimizer state; the model's
  // backward skips their weight gradients).
  std::string freeze;
};

struct MemoryEstimate {
  std::string precision;
  int64_t batch_size = 0;
  int64_t num_parameters = 0;
  int64_t num_frozen = 0;  // of num_parameters, --freeze's
  bool mixed = false;  // a separate fp32 master copy (bf16, fp16, fp8)
  int64_t weights = 0, master_weights = 0, gradients = 0, master_gradients = 0,
          optimizer_state = 0, activations = 0, workspace = 0, data = 0;
  // FP8 GEMMs (0 otherwise): the scaling slots S and the amax history
  // length H (0 under current scaling), and the bytes of the above that are
  // FP8's: the scaling state (in optimizer_state) and the operand scratch
  // (in workspace).
  bool fp8 = false;
  int64_t fp8_slots = 0, fp8_history = 0, fp8_scaling_state = 0, fp8_scratch = 0;
  // FP8: the GEMM inputs a training forward keeps (quantized) for the
  // backward, in activations (plugins/sdk/model/fp8_gemms.h).
  int64_t fp8_kept_inputs = 0;
  // The model trains at no such batch size (the CNN below 2): the scratch
  // is an evaluation forward's.
  bool fp8_forward_only = false;

  int64_t total() const {
    return weights + master_weights + gradients + master_gradients + optimizer_state +
           activations + workspace + data;
  }
  // (name, bytes) in report order, "total" last.
  std::vector<std::pair<std::string, int64_t>> Rows() const;
};

class MemoryEstimator {
 public:
  // Loads the backend, model plugins from `registry` (which must outlive
  // the estimator) and creates one backend instance.
  static absl::StatusOr<std::unique_ptr<MemoryEstimator>> Create(
      const EstimateSetup& setup, trainer::PluginRegistry* registry);

  // `precision`: a precision plugin's name (fp32, tf32, bf16, fp16, fp8, ...).
  absl::StatusOr<MemoryEstimate> Estimate(const std::string& precision, int64_t batch_size);

  // The smallest batch size in [1, limit] at which `precision` takes no more
  // memory than fp32 (0: it takes more at every batch size up to `limit`),
  // found by bisection (the difference shrinks as the batch grows: mixed
  // precision pays more per parameter and less per example).
  absl::StatusOr<int64_t> BreakEvenBatch(const std::string& precision, int64_t limit);

  // The largest batch size in [1, limit] whose total is at most `bytes`
  // (0: not even batch size 1), by bisection.
  absl::StatusOr<int64_t> LargestBatch(const std::string& precision, int64_t bytes,
                                       int64_t limit);

  const EstimateSetup& setup() const { return setup_; }
  // The backend's device memory (Backend_GetInfo's total), 0 when it does
  // not say.
  int64_t device_memory_bytes() const;
  // Whether the backend's device memory is the host's (the CPU backend).
  bool host_addressable() const;

 private:
  MemoryEstimator(EstimateSetup setup, trainer::PluginRegistry* registry)
      : setup_(std::move(setup)), registry_(registry) {}

  EstimateSetup setup_;
  trainer::PluginRegistry* registry_;
  const MNT_Plugin_Api* backend_plugin_ = nullptr;
  const MNT_Plugin_Api* model_plugin_ = nullptr;
  std::unique_ptr<sdk::BackendInstance> backend_;
};

}  // namespace mnt::memory

#endif  // MANTISSA_TRAINER_DRYRUN_MEMORY_ESTIMATE_H_
