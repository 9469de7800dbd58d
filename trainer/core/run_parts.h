// Everything a training run is made of, assembled once before the first
// step: the plugin instances, the parameter buffers, the gradient
// synchronisation, FP8 scaling, the batch and its sampler, the optimizer,
// loss scaling, evaluation, the eval policy, checkpoints and the step's
// observers. The trainer (trainer.h) runs the loop over them; this file
// decides how they are wired (which loss-scaling path, which observers,
// whether steps carry markers).
#ifndef MANTISSA_TRAINER_CORE_RUN_PARTS_H_
#define MANTISSA_TRAINER_CORE_RUN_PARTS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "trainer/config/train_config.pb.h"
#include "trainer/core/batch_source.h"
#include "trainer/core/device_batch.h"
#include "trainer/core/device_scalars.h"
#include "trainer/core/eval_policy.h"
#include "trainer/core/evaluator.h"
#include "trainer/core/fp8_scaling.h"
#include "trainer/core/loss_scaling.h"
#include "trainer/core/optimizer.h"
#include "trainer/core/parameters.h"
#include "trainer/core/run_plugins.h"
#include "trainer/core/step_observer.h"
#include "trainer/core/training_checkpoint.h"
#include "trainer/data/sampler.h"
#include "trainer/loader/plugin_registry.h"
#include "trainer/parallel/gradient_sync.h"
#include "trainer/parallel/host_comm.h"

namespace mnt::trainer {

// Members go in reverse declaration order: the synchronisation's
// communicator and every device buffer first, then the model, the loss
// scaler and the backend instance (plugins, first here).
struct RunParts {
  std::unique_ptr<RunPlugins> plugins;
  std::unique_ptr<BatchSource> train_data, eval_data;
  std::unique_ptr<ParameterStore> params;
  // FP8 GEMMs (ABI 1.10): the scales the model reads; NULL otherwise.
  std::unique_ptr<Fp8Scaling> fp8;
  std::unique_ptr<DeviceBatch> batch;
  std::unique_ptr<StepScalars> scalars;
  std::unique_ptr<BatchSampler> sampler;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<LossScaling> scaling;
  std::unique_ptr<Evaluator> evaluator;
  std::unique_ptr<EvalPolicy> eval_policy;
  std::unique_ptr<TrainingCheckpoint> checkpoint;
  // How the ranks' gradients become one (one rank: nothing to do).
  std::unique_ptr<GradientSync> sync;
  StepObservers observers;

  // Open Backend_StepBegin/StepEnd around each step.
  bool step_markers = true;
  // The run scales its loss at all; the scale is on the device and the
  // model takes it there (ABI 1.6).
  bool loss_scaling_active = false;
  bool device_loss_multiplier = false;
  std::string loss_scaling_description;  // one line, "" when not scaling
  double loss_scale_floor = 0;           // the recipe's min_scale, for SkipGuard
};

// Assembles the run `config` (validated; it and everything borrowed outlive
// `out`) asks for. `ranks`: data parallel (null or one rank: none).
absl::Status AssembleRun(const mantissa::TrainConfig& config, PluginRegistry* registry,
                         HostComm* ranks, std::unique_ptr<BatchSource> train_data,
                         std::unique_ptr<BatchSource> eval_data, RunParts* out);

// Micro-batches per optimizer step.
int64_t MicroBatches(const mantissa::TrainConfig& config);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_RUN_PARTS_H_
