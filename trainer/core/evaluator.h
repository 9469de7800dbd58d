// Evaluation: mean loss and accuracy of the working weights over a data set
// (or its first eval_batches batches), forward only.
#ifndef MANTISSA_TRAINER_CORE_EVALUATOR_H_
#define MANTISSA_TRAINER_CORE_EVALUATOR_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model_client.h"
#include "trainer/core/batch_source.h"
#include "trainer/core/device_batch.h"
#include "trainer/core/device_scalars.h"
#include "trainer/core/metrics.h"
#include "trainer/core/parameters.h"
#include "trainer/parallel/host_comm.h"

namespace mnt::trainer {

class Evaluator {
 public:
  // All borrowed. `eval_batches` 0 is the whole set.
  Evaluator(const sdk::ModelClient* model, const sdk::BackendClient* client,
            const ParameterStore* params, DeviceBatch* batch,
            StepScalars* scalars, int64_t batch_size, int64_t eval_batches)
      : model_(model), client_(client), params_(params), batch_(batch),
        scalars_(scalars), batch_size_(batch_size), eval_batches_(eval_batches) {}

  // Evaluates `source` in order, in batches; `step` labels the result.
  absl::StatusOr<EvalMetrics> Run(const BatchSource& source, int64_t step);

  // Data parallel: rank r evaluates batches r, r + N, ... and the ranks'
  // sums are added in rank order, so every rank gets the same metrics for
  // the same examples as one rank would (up to the summation order).
  void SplitAcrossRanks(HostComm* host) { host_ = host; }

 private:
  const sdk::ModelClient* model_;
  const sdk::BackendClient* client_;
  const ParameterStore* params_;
  DeviceBatch* batch_;
  StepScalars* scalars_;
  int64_t batch_size_, eval_batches_;
  HostComm* host_ = nullptr;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_EVALUATOR_H_
