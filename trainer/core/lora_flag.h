// --lora=r=8,alpha=16,dropout=0.0,targets=GLOB,...: LoRA adapters on the
// model's Linear layers (PEFT's LoraConfig: r, lora_alpha, lora_dropout,
// target_modules). What the model takes is its lora_* options
// (plugins/sdk/model/lora.h, ABI 1.13's MODEL_LORA); what the trainer does
// is freeze every other parameter, as PEFT's get_peft_model does.
#ifndef MANTISSA_TRAINER_CORE_LORA_FLAG_H_
#define MANTISSA_TRAINER_CORE_LORA_FLAG_H_

#include <string>

#include "absl/status/statusor.h"

namespace mnt::trainer {

// The --freeze pattern that --lora adds: every parameter but the adapters.
inline constexpr char kLoraFreezePattern[] = "!*.lora_[AB]";

// The model options for --lora's value: "lora_r=8,lora_alpha=16,
// lora_dropout=0,lora_targets=qkvw|fcw". r and targets are required; alpha
// defaults to PEFT's 8; items after targets= without '=' are more targets.
// A bad value is one line "--lora: ...".
absl::StatusOr<std::string> LoraModelOptions(const std::string& flag);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_LORA_FLAG_H_
