#include "trainer/config/flags.h"

#include <cstdint>

#include "absl/flags/flag.h"
#include "absl/flags/internal/private_handle_accessor.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"

// Defaults repeat DefaultTrainConfig() so --help shows them; flags_test checks
// that the two agree.
ABSL_FLAG(std::string, config, "",
          "Text-format TrainConfig file; flags given on the command line override it");

ABSL_FLAG(std::string, model, "gpt2", "Model plugin name (loads mnt_model_<name>.so): gpt2|mlp|...");
ABSL_FLAG(std::string, model_options, "", "Options for the model plugin, e.g. preset=gpt2-124m (gpt2) or hidden=128:128 (mlp)");
ABSL_FLAG(bool, gradient_checkpointing, false, "Recompute each transformer block in backward (gpt2)");
ABSL_FLAG(std::string, precision, "auto", "fp32|tf32|bf16|fp16|auto");
ABSL_FLAG(std::string, device, "auto", "cpu|cuda|auto");
ABSL_FLAG(std::string, backend_options, "", "Options for the backend plugin");

ABSL_FLAG(std::string, dataset, "fortunes", "fortunes|shards|text|digits|idx");
ABSL_FLAG(std::string, train_shards, "", "Glob of llm.c token shards (--dataset=shards)");
ABSL_FLAG(std::string, val_shards, "", "Glob of validation shards; \"\" = split --validation_fraction off");
ABSL_FLAG(int64_t, vocab_size, 0, "Token vocabulary of the shards; 0 = 256 or 50257 (GPT-2) by their largest token");
ABSL_FLAG(std::string, train_images, "", "IDX images file (--dataset=idx)");
ABSL_FLAG(std::string, train_labels, "", "IDX labels file (--dataset=idx)");
ABSL_FLAG(std::string, test_images, "", "IDX test images (optional; else a validation split)");
ABSL_FLAG(std::string, test_labels, "", "IDX test labels (optional; else a validation split)");
ABSL_FLAG(std::string, text_path, "", "Plain text file (--dataset=text)");
ABSL_FLAG(int64_t, seq_len, 64, "Tokens per sequence (fortunes, shards, text)");
ABSL_FLAG(std::string, cache_dir, "", "Converted datasets go here; default $XDG_CACHE_HOME/mantissa or ~/.cache/mantissa");
ABSL_FLAG(double, validation_fraction, 0.2, "Fraction of the training set held out for validation");

ABSL_FLAG(int64_t, batch_size, 64, "Examples per micro-batch");
ABSL_FLAG(int64_t, grad_accum_steps, 1, "Micro-batches per optimizer step");
ABSL_FLAG(int64_t, steps, 300, "Optimizer steps");

ABSL_FLAG(std::string, optimizer, "adamw", "adamw|adam|sgd");
ABSL_FLAG(double, lr, 1e-3, "Peak learning rate");
ABSL_FLAG(double, weight_decay, 0.01, "Weight decay");
ABSL_FLAG(double, beta1, 0.9, "Adam beta1");
ABSL_FLAG(double, beta2, 0.999, "Adam beta2");
ABSL_FLAG(double, eps, 1e-8, "Adam epsilon");
ABSL_FLAG(double, momentum, 0.9, "SGD momentum");
ABSL_FLAG(bool, nesterov, false, "SGD Nesterov momentum");

ABSL_FLAG(std::string, schedule, "cosine", "cosine|constant");
ABSL_FLAG(int64_t, warmup_steps, 30, "Linear warmup steps");
ABSL_FLAG(double, min_lr_ratio, 0.1, "Cosine floor as a fraction of --lr");

ABSL_FLAG(double, clip_grad_norm, 1.0, "Global gradient-norm clip; 0 = off");

ABSL_FLAG(std::string, loss_scale_mode, "", "\"\" (precision default)|dynamic|static|none");
ABSL_FLAG(double, init_scale, 0, "Initial loss scale; 0 = precision default");
ABSL_FLAG(double, growth_factor, 0, "Loss-scale growth factor; 0 = precision default");
ABSL_FLAG(double, backoff_factor, 0, "Loss-scale backoff factor; 0 = precision default");
ABSL_FLAG(int64_t, growth_interval, 0, "Clean steps before the scale grows; 0 = precision default");

ABSL_FLAG(int64_t, eval_every, 100, "Evaluate every N steps; 0 = only at the end");
ABSL_FLAG(int64_t, eval_batches, 0, "Validation batches per evaluation; 0 = all");
ABSL_FLAG(int64_t, log_every, 10, "Log every N steps");
ABSL_FLAG(uint64_t, seed, 1234, "Random seed");
ABSL_FLAG(std::string, checkpoint_dir, "", "Checkpoint directory; \"\" = no checkpoints");
ABSL_FLAG(int64_t, checkpoint_every, 0, "Checkpoint every N steps; 0 = only at the end");
ABSL_FLAG(bool, resume, false, "Resume from <checkpoint_dir>/latest if present");
ABSL_FLAG(std::string, metrics_jsonl, "", "Write metrics as JSON lines here; \"\" = none");
ABSL_FLAG(std::string, plugin_path, "", "Extra ':'-separated plugin directories");
ABSL_FLAG(std::string, progress, "auto", "auto|bar|plain|none");
ABSL_FLAG(std::string, device_loss_scaling, "auto",
          "auto|on|off: keep the dynamic loss scale, found_inf and the clip "
          "factor on the device (no host read per step); auto = on when the "
          "backend supports it");

namespace mnt {
namespace trainer {
namespace {

struct FlagBinding {
  const absl::CommandLineFlag* flag;
  void (*apply)(TrainConfig*);
};

#define MNT_BIND(name, statement)                                   \
  FlagBinding {                                                     \
    &absl::GetFlagReflectionHandle(FLAGS_##name), [](TrainConfig* c) { \
      const auto v = absl::GetFlag(FLAGS_##name);                   \
      statement;                                                    \
    }                                                               \
  }

const std::vector<FlagBinding>& Bindings() {
  static const auto* const bindings = new std::vector<FlagBinding>{
      MNT_BIND(model, c->set_model(v)),
      MNT_BIND(model_options, c->set_model_options(v)),
      MNT_BIND(precision, c->set_precision(v)),
      MNT_BIND(device, c->set_device(v)),
      MNT_BIND(backend_options, c->set_backend_options(v)),
      MNT_BIND(dataset, c->mutable_data()->set_dataset(v)),
      MNT_BIND(train_images, c->mutable_data()->set_train_images(v)),
      MNT_BIND(train_labels, c->mutable_data()->set_train_labels(v)),
      MNT_BIND(test_images, c->mutable_data()->set_test_images(v)),
      MNT_BIND(test_labels, c->mutable_data()->set_test_labels(v)),
      MNT_BIND(text_path, c->mutable_data()->set_text_path(v)),
      MNT_BIND(seq_len, c->mutable_data()->set_seq_len(v)),
      MNT_BIND(cache_dir, c->mutable_data()->set_cache_dir(v)),
      MNT_BIND(validation_fraction, c->mutable_data()->set_validation_fraction(v)),
      MNT_BIND(train_shards, c->mutable_data()->set_train_shards(v)),
      MNT_BIND(val_shards, c->mutable_data()->set_val_shards(v)),
      MNT_BIND(vocab_size, c->mutable_data()->set_vocab_size(v)),
      MNT_BIND(gradient_checkpointing, c->set_gradient_checkpointing(v)),
      MNT_BIND(batch_size, c->set_batch_size(v)),
      MNT_BIND(grad_accum_steps, c->set_grad_accum_steps(v)),
      MNT_BIND(steps, c->set_steps(v)),
      MNT_BIND(optimizer, c->mutable_optimizer()->set_name(v)),
      MNT_BIND(lr, c->mutable_optimizer()->set_lr(v)),
      MNT_BIND(weight_decay, c->mutable_optimizer()->set_weight_decay(v)),
      MNT_BIND(beta1, c->mutable_optimizer()->set_beta1(v)),
      MNT_BIND(beta2, c->mutable_optimizer()->set_beta2(v)),
      MNT_BIND(eps, c->mutable_optimizer()->set_eps(v)),
      MNT_BIND(momentum, c->mutable_optimizer()->set_momentum(v)),
      MNT_BIND(nesterov, c->mutable_optimizer()->set_nesterov(v)),
      MNT_BIND(schedule, c->mutable_schedule()->set_kind(v)),
      MNT_BIND(warmup_steps, c->mutable_schedule()->set_warmup_steps(v)),
      MNT_BIND(min_lr_ratio, c->mutable_schedule()->set_min_lr_ratio(v)),
      MNT_BIND(clip_grad_norm, c->set_clip_grad_norm(v)),
      MNT_BIND(loss_scale_mode, c->mutable_loss_scale()->set_mode(v)),
      MNT_BIND(init_scale, c->mutable_loss_scale()->set_init_scale(v)),
      MNT_BIND(growth_factor, c->mutable_loss_scale()->set_growth_factor(v)),
      MNT_BIND(backoff_factor, c->mutable_loss_scale()->set_backoff_factor(v)),
      MNT_BIND(growth_interval, c->mutable_loss_scale()->set_growth_interval(v)),
      MNT_BIND(eval_every, c->set_eval_every(v)),
      MNT_BIND(eval_batches, c->set_eval_batches(v)),
      MNT_BIND(log_every, c->set_log_every(v)),
      MNT_BIND(seed, c->set_seed(v)),
      MNT_BIND(checkpoint_dir, c->set_checkpoint_dir(v)),
      MNT_BIND(checkpoint_every, c->set_checkpoint_every(v)),
      MNT_BIND(resume, c->set_resume(v)),
      MNT_BIND(metrics_jsonl, c->set_metrics_jsonl(v)),
      MNT_BIND(plugin_path, c->set_plugin_path(v)),
      MNT_BIND(progress, c->set_progress(v)),
      MNT_BIND(device_loss_scaling, c->set_device_loss_scaling(v)),
  };
  return *bindings;
}

#undef MNT_BIND

bool SpecifiedOnCommandLine(const absl::CommandLineFlag& flag) {
  // absl keeps this bit private to its parser; the accessor is how its own
  // libraries read it.
  return absl::flags_internal::PrivateHandleAccessor::IsSpecifiedOnCommandLine(flag);
}

}  // namespace

absl::StatusOr<TrainConfig> ConfigFromFlags(
    const std::function<bool(const absl::CommandLineFlag&)>& is_set) {
  TrainConfig config = DefaultTrainConfig();
  const std::string config_path = absl::GetFlag(FLAGS_config);
  if (!config_path.empty()) {
    absl::Status s = MergeTextConfigFile(config_path, &config);
    if (!s.ok()) return s;
  }
  for (const FlagBinding& binding : Bindings()) {
    if (is_set(*binding.flag)) binding.apply(&config);
  }
  absl::Status s = ValidateTrainConfig(config);
  if (!s.ok()) {
    if (config_path.empty()) return s;
    // The bad value may come from the file: say which one was read.
    return absl::InvalidArgumentError(
        absl::StrCat(s.message(), " (config file ", config_path, " plus flags)"));
  }
  return config;
}

absl::StatusOr<TrainConfig> ConfigFromFlags() {
  return ConfigFromFlags(SpecifiedOnCommandLine);
}

std::vector<std::string> TrainConfigFlagNames() {
  std::vector<std::string> names;
  for (const FlagBinding& binding : Bindings()) {
    names.emplace_back(binding.flag->Name());
  }
  return names;
}

void ApplyAllFlags(TrainConfig* config) {
  for (const FlagBinding& binding : Bindings()) binding.apply(config);
}

bool FlagGivenOnCommandLine(const std::string& name) {
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  return flag != nullptr && SpecifiedOnCommandLine(*flag);
}

}  // namespace trainer
}  // namespace mnt
