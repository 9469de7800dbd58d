// --optimizer_options: the settings of the memory-light optimizers that the
// AdamW/SGD flags do not name (issue #39), parsed once, with a one-line
// refusal for a key the optimizer does not take or a value out of range.
//
//   adafactor (HF transformers.Adafactor's names and, where the trainer
//   gives the learning rate, HF Trainer's defaults):
//     beta1=0          first moment's decay; 0 keeps none (HF's beta1=None)
//     decay_rate=-0.8  beta2_t = 1 - t^decay_rate
//     clip_threshold=1 updates divided by max(1, RMS(u) / clip_threshold)
//     eps1=1e-30       added to g^2
//     eps2=1e-3        floor of the parameter RMS (scale_parameter)
//     relative_step=0  1: lr_t = min(1e-2, 1/sqrt(t)), --lr and the schedule ignored
//     scale_parameter=0  1: lr_t *= max(eps2, RMS(parameter))
//     warmup_init=0    with relative_step: min(1e-6 t, 1/sqrt(t))
//   adamw8bit:
//     min_8bit_size=4096  tensors with fewer elements keep 32-bit moments
//                         (bitsandbytes' default; a stacked parameter's
//                         copies count, ABI 1.15)
//     embedding_8bit=0    1: embeddings (ABI 1.16's role) too; 0 keeps
//                         their moments in 32 bits, as Hugging Face's
//                         Trainer does with optim="adamw_bnb_8bit"
//   adamw, adam, sgd: none.
#ifndef MANTISSA_TRAINER_CONFIG_OPTIMIZER_OPTIONS_H_
#define MANTISSA_TRAINER_CONFIG_OPTIMIZER_OPTIONS_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "trainer/config/train_config.pb.h"

namespace mnt::trainer {

struct AdafactorOptions {
  float beta1 = 0.0f;
  float decay_rate = -0.8f;
  float clip_threshold = 1.0f;
  float eps1 = 1e-30f;
  float eps2 = 1e-3f;
  bool relative_step = false;
  bool scale_parameter = false;
  bool warmup_init = false;
};

struct OptimizerOptions {
  AdafactorOptions adafactor;
  int64_t min_8bit_size = 4096;
  bool embedding_8bit = false;
};

// The options of `config`'s optimizer from config.optimizer_options():
// defaults for the keys not given; INVALID_ARGUMENT naming the flag for an
// unknown key, a malformed or out-of-range value, or options given to an
// optimizer that takes none.
absl::StatusOr<OptimizerOptions> ParseOptimizerOptions(const mantissa::OptimizerConfig& config);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CONFIG_OPTIMIZER_OPTIONS_H_
