#include "trainer/config/flags.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/flags/flag.h"
#include "absl/flags/internal/private_handle_accessor.h"
#include "absl/flags/marshalling.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "trainer/io/atomic_file.h"
#include "trainer/config/config_fields.h"
#include "trainer/config/user_path.h"

// Defaults repeat DefaultTrainConfig() so --help shows them; flags_test checks
// that the two agree.
ABSL_FLAG(std::string, config, "",
          "Text-format TrainConfig file; flags given on the command line override it");

ABSL_FLAG(std::string, model, "gpt2", "Model plugin name (loads mnt_model_<name>.so): gpt2|mlp|...");
ABSL_FLAG(std::string, model_options, "", "Options for the model plugin, e.g. preset=gpt2-124m (gpt2) or hidden=128:128 (mlp)");
ABSL_FLAG(bool, gradient_checkpointing, false, "Recompute each transformer block in backward (gpt2)");
ABSL_FLAG(std::string, precision, "auto",
          "fp32|tf32|bf16|fp16|fp8|auto. fp8: bf16 with FP8 GEMMs under delayed scaling (CUDA: "
          "sm_89 or newer; the CPU emulates it, slowly). auto measures fp32, tf32, bf16 and fp16 "
          "over the first steps and keeps the fastest within 2% of fp32's loss; it never picks "
          "fp8, which is chosen only explicitly (--precision=fp8)");
ABSL_FLAG(std::string, device, "auto", "cpu|cuda|auto");
ABSL_FLAG(std::string, backend_options, "",
          "Options for the backend plugin, e.g. threads=2 (cpu: always 2 threads; unset, each "
          "step uses the cores other processes leave free; docs/performance.md)");
ABSL_FLAG(std::string, precision_options, "",
          "Options for the precision plugin, e.g. hysteresis=2,min_scale=1 (fp16) or "
          "format=e4m3,history=16 (fp8; its keys: format=hybrid|e4m3, history=N, "
          "algo=max|most_recent, margin=M, recipe=delayed|current, fast_accumulation=0|1, "
          "calibrate=0|1; docs/plugins.md)");

ABSL_FLAG(std::string, dataset, "fortunes", "fortunes|shards|text|digits|idx");
ABSL_FLAG(std::string, train_shards, "", "Glob of llm.c token shards (--dataset=shards)");
ABSL_FLAG(std::string, val_shards, "", "Glob of validation shards; \"\" = split --validation_fraction off");
ABSL_FLAG(int64_t, vocab_size, 0, "Token vocabulary of the shards (0 = 256 or 50257 by their largest token), or the one --tokenizer=sentencepiece trains (0 = 1024)");
ABSL_FLAG(std::string, train_images, "", "IDX images file (--dataset=idx)");
ABSL_FLAG(std::string, train_labels, "", "IDX labels file (--dataset=idx)");
ABSL_FLAG(std::string, test_images, "", "IDX test images (optional; else a validation split)");
ABSL_FLAG(std::string, test_labels, "", "IDX test labels (optional; else a validation split)");
ABSL_FLAG(std::string, text_path, "",
          "Text for --dataset=text: a file, or several: a comma-separated list of files and "
          "globs ('notes/*.txt,more.txt'), read in that order (a glob's matches by name) and "
          "joined with a newline between two");
ABSL_FLAG(std::string, tokenizer, "bytes",
          "--dataset=text: bytes (every byte a token) | sentencepiece (a subword model trained "
          "on the text, kept with the checkpoints)");
ABSL_FLAG(std::string, tokenizer_type, "bpe", "--tokenizer=sentencepiece: bpe | unigram");
ABSL_FLAG(std::string, tokenizer_model, "",
          "--tokenizer=sentencepiece: a trained .model to use instead of training one");
ABSL_FLAG(int64_t, seq_len, 64, "Tokens per sequence (fortunes, shards, text)");
ABSL_FLAG(std::string, cache_dir, "", "Converted datasets go here; default $XDG_CACHE_HOME/mantissa or ~/.cache/mantissa");
ABSL_FLAG(double, validation_fraction, 0.2, "Fraction of the training set held out for validation");

ABSL_FLAG(int64_t, batch_size, 64,
          "Examples per micro-batch; auto = the largest that fits --memory_limit_gb");
ABSL_FLAG(int64_t, grad_accum_steps, 1, "Micro-batches per optimizer step");
ABSL_FLAG(int64_t, global_batch_size, 0,
          "Examples per optimizer step over all ranks (batch_size x grad_accum_steps x ranks); "
          "given, it sets --batch_size per rank; 0 = that product. A resumed run keeps its "
          "own on any number of ranks");
ABSL_FLAG(int64_t, steps, 300, "Optimizer steps");
ABSL_FLAG(double, num_train_epochs, 0,
          "> 0: train this many passes over the training examples instead of --steps: "
          "ceil(epochs x examples / global batch) steps, known once the data is loaded (the "
          "run saves them as its --steps); not with --steps or --max_steps");

ABSL_FLAG(std::string, optimizer, "adamw",
          "adamw|adam|sgd|adamw8bit|adafactor; optimizer state per parameter: adamw/adam 8 "
          "bytes, sgd 4, adamw8bit about 2 (bitsandbytes' blockwise 8-bit moments; tensors "
          "under 4096 elements and embeddings keep 8, as HF Trainer's adamw_bnb_8bit), adafactor 4 / (rows + cols) per matrix element "
          "(factored second moment, no first moment unless beta1 is given); a model's "
          "stacked layers (GPT-2's [L, ...]) count as one tensor per layer");
ABSL_FLAG(std::string, optimizer_options, "",
          "key=value,... for adafactor (beta1=0, decay_rate=-0.8, clip_threshold=1, eps1=1e-30, "
          "eps2=1e-3, relative_step=0, scale_parameter=0, warmup_init=0: HF Adafactor's, as HF "
          "Trainer sets it) and adamw8bit (min_8bit_size=4096, embedding_8bit=0)");
ABSL_FLAG(double, lr, 1e-3, "Peak learning rate");
ABSL_FLAG(double, weight_decay, 0.01, "Weight decay");
ABSL_FLAG(double, beta1, 0.9, "Adam beta1");
ABSL_FLAG(double, beta2, 0.999, "Adam beta2");
ABSL_FLAG(double, eps, 1e-8, "Adam epsilon");
ABSL_FLAG(double, momentum, 0.9, "SGD momentum");
ABSL_FLAG(bool, nesterov, false, "SGD Nesterov momentum");
ABSL_FLAG(std::string, multi_tensor_optimizer, "auto",
          "auto|off: one multi-tensor optimizer op per step where the backend supports it "
          "(the same bits as one op per tensor)");
ABSL_FLAG(bool, stochastic_rounding, false,
          "Round the bf16 working weights stochastically (llm.c's; unbiased, deterministic "
          "for --seed, resumed bit for bit) instead of to nearest even; needs bf16 working "
          "weights (--precision=bf16) and a backend built against ABI >= 1.7");

ABSL_FLAG(std::string, schedule, "cosine", "cosine|linear|constant (after warmup)");
ABSL_FLAG(int64_t, warmup_steps, 30, "Linear warmup steps");
ABSL_FLAG(double, warmup_ratio, 0, "> 0: warm up for ceil(ratio x --steps) steps instead of --warmup_steps");
ABSL_FLAG(double, min_lr_ratio, 0.1,
          "Floor of the decay, as a fraction of --lr: cosine 0.1 (nanoGPT's); linear 0 "
          "(Hugging Face's: the rate ends at 0) unless given");

ABSL_FLAG(double, clip_grad_norm, 1.0, "Global gradient-norm clip; 0 = off");

ABSL_FLAG(std::string, loss_scale_mode, "", "\"\" (precision default)|dynamic|static|none");
ABSL_FLAG(double, init_scale, 0, "Initial loss scale; 0 = precision default");
ABSL_FLAG(double, growth_factor, 0, "Loss-scale growth factor; 0 = precision default");
ABSL_FLAG(double, backoff_factor, 0, "Loss-scale backoff factor; 0 = precision default");
ABSL_FLAG(int64_t, growth_interval, 0, "Clean steps before the scale grows; 0 = precision default");

ABSL_FLAG(int64_t, eval_every, 100, "Evaluate every N steps; 0 = only at the end");
ABSL_FLAG(std::string, eval_strategy, "steps",
          "steps (every --eval_every steps and after the last) | epoch (after each epoch's "
          "last step) | no (never, not even at the end)");
ABSL_FLAG(bool, save_best, false,
          "After each evaluation with the lowest eval loss so far, save that step's "
          "checkpoint and make <checkpoint_dir>/best the same file (--save_total_limit keeps "
          "it); the best loss survives --resume");
ABSL_FLAG(int64_t, early_stopping_patience, 0,
          "> 0: stop (with a checkpoint, exit 0) after this many evaluations in a row without "
          "an eval loss below the best by more than --early_stopping_threshold; 0 = never");
ABSL_FLAG(double, early_stopping_threshold, 0,
          "How much lower than the best an eval loss must be to count as an improvement");
ABSL_FLAG(int64_t, eval_batches, 0, "Validation batches per evaluation; 0 = all");
ABSL_FLAG(int64_t, log_every, 10, "Log every N steps");
ABSL_FLAG(uint64_t, seed, 1234, "Random seed");
ABSL_FLAG(std::string, checkpoint_dir, "", "Checkpoint directory; \"\" = <cache>/runs/<run_name>, none = no checkpoints");
ABSL_FLAG(bool, overwrite_output_dir, false,
          "Let a new run replace another run's checkpoints in its folder (they are removed "
          "before the first step); without it such a folder is refused (--resume continues "
          "that run instead)");
ABSL_FLAG(std::string, run_name, "", "The run's checkpoint folder under <cache>/runs/ when --checkpoint_dir is not given; \"\" = <model>-<dataset>-<precision>");
ABSL_FLAG(int64_t, checkpoint_every, 0, "Checkpoint every N steps; 0 = only at the end");
ABSL_FLAG(bool, resume, false, "Resume from <checkpoint_dir>/latest (the run's own folder by default); an error when there is none, unless --resume=if_exists");
ABSL_FLAG(bool, resume_if_exists, false, "With --resume: start fresh when there is no checkpoint (--resume=if_exists sets both)");
ABSL_FLAG(std::string, resume_from, "", "Resume from this checkpoint file, or a checkpoint directory's latest");
ABSL_FLAG(bool, dry_run, false,
          "Print the device memory this run would take, by category (weights, master weights, "
          "gradients, optimizer state, activations, workspace, data), and exit without training "
          "or making a run folder; //tools/memory:estimate tables other batch sizes and "
          "precisions");
ABSL_FLAG(bool, auto_batch_size, false,
          "What --batch_size=auto sets: the largest batch whose estimated peak memory (the dry "
          "run's) fits --memory_limit_gb; with --global_batch_size the rest is gradient "
          "accumulation");
ABSL_FLAG(double, memory_limit_gb, 0,
          "GB (10^9 bytes) that --batch_size=auto fits the run into; 0 = the device's memory "
          "less a margin (cpu: MemAvailable less 10%, at least 1 GiB; cuda: the device's total "
          "less 10%)");
ABSL_FLAG(std::string, freeze, "",
          "Comma-separated globs over parameter names (e.g. 'wte,wpe,ln*') that train no "
          "further: no gradient, master copy or optimizer state, and their weight-gradient "
          "GEMMs are skipped; train --dry_run shows the memory, plugin_info the names");
ABSL_FLAG(std::string, lora, "",
          "LoRA adapters: r=RANK,alpha=ALPHA,dropout=0,targets=GLOB,... over the weights of "
          "Linear layers (gpt2: qkvw,attprojw,fcw,fcprojw); every other parameter is frozen, "
          "as PEFT does (e.g. --lora=r=8,alpha=16,targets=qkvw)");
ABSL_FLAG(bool, eval_only, false,
          "Evaluate the checkpoint of --resume_from (or --resume) on the validation data: loss, "
          "perplexity, accuracy; then exit, training nothing");
ABSL_FLAG(std::string, data_parallel, "auto",
          "auto|off: under mpirun -np N (or srun) with N > 1, train on N ranks, each on its "
          "part of every global batch of N x --batch_size examples (auto); off = each rank "
          "trains alone");
ABSL_FLAG(bool, debug_overflow, false,
          "Trace the model's ops and stop at the first inf/NaN in forward or backward, naming "
          "the step, op, layer and parameter, with abs min/max of the last 20 ops' operands "
          "(slow: for finding where fp16 overflows)");
ABSL_FLAG(int64_t, zero_stage, 0,
          "Data parallel: 0|1; 1 = ZeRO-1, each rank keeps the fp32 master weights, "
          "optimizer state and averaged gradient of 1/N of the parameters' elements (less "
          "memory per rank, same bits)");
ABSL_FLAG(std::string, exchange_in_backward, "auto",
          "Data parallel: auto|off; auto = issue each bucket's gradient exchange as soon as "
          "backward has finished it (models that hand over finished gradients), off = after "
          "the whole backward");
ABSL_FLAG(double, bucket_mb, 25,
          "Data parallel: average gradients (ZeRO-1: reduce-scatter them) in buckets of about "
          "this many MiB; 0 = one bucket");
ABSL_FLAG(int64_t, save_total_limit, 0, "Keep only the newest N checkpoint-<step> files in --checkpoint_dir; 0 = keep all");
ABSL_FLAG(std::string, metrics_jsonl, "", "Write metrics as JSON lines here (docs/metrics.md); an existing file is kept as <file>.1 unless --resume; \"\" = none");
ABSL_FLAG(std::string, tensorboard_dir, "", "Write TensorBoard event files here (tensorboard --logdir=<dir>); \"\" = none");
ABSL_FLAG(std::string, report_to, "",
          "none|tensorboard|jsonl|all: tensorboard writes --tensorboard_dir (default "
          "<checkpoint_dir>/tensorboard), jsonl --metrics_jsonl (default "
          "<checkpoint_dir>/metrics.jsonl); none refuses both; \"\" = only the ones given");
ABSL_FLAG(std::string, plugin_path, "", "Extra ':'-separated plugin directories");
ABSL_FLAG(std::string, progress, "auto", "auto|bar|plain|none");
ABSL_FLAG(std::string, device_loss_scaling, "auto",
          "auto|on|off: keep the dynamic loss scale, found_inf and the clip "
          "factor on the device (no host read per step); auto = on when the "
          "backend supports it, and then fp32/tf32/bf16 keep their losses, "
          "clip factor and lr on the device too; off = the host path");

// Hugging Face Trainer's names for the same settings. Each maps onto one
// field above; giving an alias and its field with different values is an
// error.
ABSL_FLAG(bool, bf16, false, "Same as --precision=bf16");
ABSL_FLAG(bool, fp16, false, "Same as --precision=fp16");
ABSL_FLAG(bool, tf32, false, "Same as --precision=tf32");
ABSL_FLAG(int64_t, gradient_accumulation_steps, 1, "Same as --grad_accum_steps");
ABSL_FLAG(double, max_grad_norm, 1.0, "Same as --clip_grad_norm");
ABSL_FLAG(std::string, lr_scheduler, "cosine", "Same as --schedule: cosine|linear|constant");
ABSL_FLAG(std::string, lr_scheduler_type, "cosine", "Same as --schedule: cosine|linear|constant");
ABSL_FLAG(std::string, resume_from_checkpoint, "",
          "Same as --resume_from; true (or True) = --resume: the run folder's latest");
ABSL_FLAG(std::string, logging_dir, "", "Same as --tensorboard_dir");
ABSL_FLAG(double, learning_rate, 0, "Same as --lr");
ABSL_FLAG(int64_t, max_steps, 0, "Same as --steps");
ABSL_FLAG(int64_t, per_device_train_batch_size, 0, "Same as --batch_size");
ABSL_FLAG(std::string, output_dir, "", "Same as --checkpoint_dir (checkpoint-<step> files go there, as Hugging Face's do)");
ABSL_FLAG(int64_t, logging_steps, 0, "Same as --log_every");
ABSL_FLAG(int64_t, save_steps, 0, "Same as --checkpoint_every");
ABSL_FLAG(int64_t, eval_steps, 0, "Same as --eval_every");

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
      MNT_BIND(precision_options, c->set_precision_options(v)),
      MNT_BIND(dataset, c->mutable_data()->set_dataset(v)),
      MNT_BIND(train_images, c->mutable_data()->set_train_images(v)),
      MNT_BIND(train_labels, c->mutable_data()->set_train_labels(v)),
      MNT_BIND(test_images, c->mutable_data()->set_test_images(v)),
      MNT_BIND(test_labels, c->mutable_data()->set_test_labels(v)),
      MNT_BIND(text_path, c->mutable_data()->set_text_path(v)),
      MNT_BIND(tokenizer, c->mutable_data()->set_tokenizer(v)),
      MNT_BIND(tokenizer_type, c->mutable_data()->set_tokenizer_type(v)),
      MNT_BIND(tokenizer_model, c->mutable_data()->set_tokenizer_model(v)),
      MNT_BIND(seq_len, c->mutable_data()->set_seq_len(v)),
      MNT_BIND(cache_dir, c->mutable_data()->set_cache_dir(v)),
      MNT_BIND(validation_fraction, c->mutable_data()->set_validation_fraction(v)),
      MNT_BIND(train_shards, c->mutable_data()->set_train_shards(v)),
      MNT_BIND(val_shards, c->mutable_data()->set_val_shards(v)),
      MNT_BIND(vocab_size, c->mutable_data()->set_vocab_size(v)),
      MNT_BIND(gradient_checkpointing, c->set_gradient_checkpointing(v)),
      MNT_BIND(batch_size, c->set_batch_size(v)),
      MNT_BIND(grad_accum_steps, c->set_grad_accum_steps(v)),
      MNT_BIND(global_batch_size, c->set_global_batch_size(v)),
      MNT_BIND(steps, c->set_steps(v)),
      MNT_BIND(num_train_epochs, c->set_num_train_epochs(v)),
      MNT_BIND(optimizer, c->mutable_optimizer()->set_name(v)),
      MNT_BIND(lr, c->mutable_optimizer()->set_lr(v)),
      MNT_BIND(weight_decay, c->mutable_optimizer()->set_weight_decay(v)),
      MNT_BIND(beta1, c->mutable_optimizer()->set_beta1(v)),
      MNT_BIND(beta2, c->mutable_optimizer()->set_beta2(v)),
      MNT_BIND(eps, c->mutable_optimizer()->set_eps(v)),
      MNT_BIND(momentum, c->mutable_optimizer()->set_momentum(v)),
      MNT_BIND(nesterov, c->mutable_optimizer()->set_nesterov(v)),
      MNT_BIND(multi_tensor_optimizer, c->mutable_optimizer()->set_multi_tensor_optimizer(v)),
      MNT_BIND(stochastic_rounding, c->mutable_optimizer()->set_stochastic_rounding(v)),
      MNT_BIND(optimizer_options, c->mutable_optimizer()->set_optimizer_options(v)),
      MNT_BIND(schedule, c->mutable_schedule()->set_kind(v)),
      MNT_BIND(warmup_steps, c->mutable_schedule()->set_warmup_steps(v)),
      MNT_BIND(warmup_ratio, c->mutable_schedule()->set_warmup_ratio(v)),
      MNT_BIND(min_lr_ratio, c->mutable_schedule()->set_min_lr_ratio(v)),
      MNT_BIND(clip_grad_norm, c->set_clip_grad_norm(v)),
      MNT_BIND(loss_scale_mode, c->mutable_loss_scale()->set_mode(v)),
      MNT_BIND(init_scale, c->mutable_loss_scale()->set_init_scale(v)),
      MNT_BIND(growth_factor, c->mutable_loss_scale()->set_growth_factor(v)),
      MNT_BIND(backoff_factor, c->mutable_loss_scale()->set_backoff_factor(v)),
      MNT_BIND(growth_interval, c->mutable_loss_scale()->set_growth_interval(v)),
      MNT_BIND(eval_every, c->set_eval_every(v)),
      MNT_BIND(eval_strategy, c->set_eval_strategy(v)),
      MNT_BIND(save_best, c->set_save_best(v)),
      MNT_BIND(early_stopping_patience, c->set_early_stopping_patience(v)),
      MNT_BIND(early_stopping_threshold, c->set_early_stopping_threshold(v)),
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
      MNT_BIND(tensorboard_dir, c->set_tensorboard_dir(v)),
      MNT_BIND(report_to, c->set_report_to(v)),
      MNT_BIND(save_total_limit, c->set_save_total_limit(v)),
      MNT_BIND(resume_from, c->set_resume_from(v)),
      MNT_BIND(run_name, c->set_run_name(v)),
      MNT_BIND(overwrite_output_dir, c->set_overwrite_output_dir(v)),
      MNT_BIND(resume_if_exists, c->set_resume_if_exists(v)),
      MNT_BIND(eval_only, c->set_eval_only(v)),
      MNT_BIND(dry_run, c->set_dry_run(v)),
      MNT_BIND(auto_batch_size, c->set_auto_batch_size(v)),
      MNT_BIND(memory_limit_gb, c->set_memory_limit_gb(v)),
      MNT_BIND(freeze, c->set_freeze(v)),
      MNT_BIND(lora, c->set_lora(v)),
      MNT_BIND(data_parallel, c->set_data_parallel(v)),
      MNT_BIND(bucket_mb, c->set_bucket_mb(v)),
      MNT_BIND(zero_stage, c->set_zero_stage(v)),
      MNT_BIND(exchange_in_backward, c->set_exchange_in_backward(v)),
      MNT_BIND(debug_overflow, c->set_debug_overflow(v)),
  };
  return *bindings;
}

#undef MNT_BIND

// An alias flag: the value it gives its canonical flag, spelled as that
// flag's --name=value would be, or "" when it sets nothing (--bf16=false).
struct FlagAlias {
  const absl::CommandLineFlag* flag;
  const char* canonical;
  std::string (*value)();
};

// Python's spellings of a bool, as Hugging Face's argument parser takes them.
bool IsTrueWord(const std::string& v) { return v == "true" || v == "True"; }
bool IsFalseWord(const std::string& v) { return v == "false" || v == "False"; }

template <typename T>
std::string Unparsed(const absl::Flag<T>& flag) {
  return absl::UnparseFlag(absl::GetFlag(flag));
}

const std::vector<FlagAlias>& Aliases() {
  static const auto* const aliases = new std::vector<FlagAlias>{
      {&absl::GetFlagReflectionHandle(FLAGS_bf16), "precision",
       [] { return std::string(absl::GetFlag(FLAGS_bf16) ? "bf16" : ""); }},
      {&absl::GetFlagReflectionHandle(FLAGS_fp16), "precision",
       [] { return std::string(absl::GetFlag(FLAGS_fp16) ? "fp16" : ""); }},
      {&absl::GetFlagReflectionHandle(FLAGS_tf32), "precision",
       [] { return std::string(absl::GetFlag(FLAGS_tf32) ? "tf32" : ""); }},
      {&absl::GetFlagReflectionHandle(FLAGS_gradient_accumulation_steps),
       "grad_accum_steps", [] { return Unparsed(FLAGS_gradient_accumulation_steps); }},
      {&absl::GetFlagReflectionHandle(FLAGS_max_grad_norm), "clip_grad_norm",
       [] { return Unparsed(FLAGS_max_grad_norm); }},
      {&absl::GetFlagReflectionHandle(FLAGS_lr_scheduler), "schedule",
       [] { return Unparsed(FLAGS_lr_scheduler); }},
      {&absl::GetFlagReflectionHandle(FLAGS_lr_scheduler_type), "schedule",
       [] { return Unparsed(FLAGS_lr_scheduler_type); }},
      // Hugging Face's resume_from_checkpoint=True resumes the output
      // folder's last checkpoint: --resume; any other value is a path.
      {&absl::GetFlagReflectionHandle(FLAGS_resume_from_checkpoint), "resume_from",
       [] {
         const std::string v = absl::GetFlag(FLAGS_resume_from_checkpoint);
         return IsTrueWord(v) || IsFalseWord(v) ? std::string() : v;
       }},
      {&absl::GetFlagReflectionHandle(FLAGS_resume_from_checkpoint), "resume",
       [] {
         return std::string(IsTrueWord(absl::GetFlag(FLAGS_resume_from_checkpoint)) ? "true"
                                                                                      : "");
       }},
      {&absl::GetFlagReflectionHandle(FLAGS_logging_dir), "tensorboard_dir",
       [] { return absl::GetFlag(FLAGS_logging_dir); }},
      {&absl::GetFlagReflectionHandle(FLAGS_learning_rate), "lr",
       [] { return Unparsed(FLAGS_learning_rate); }},
      {&absl::GetFlagReflectionHandle(FLAGS_max_steps), "steps",
       [] { return Unparsed(FLAGS_max_steps); }},
      {&absl::GetFlagReflectionHandle(FLAGS_per_device_train_batch_size), "batch_size",
       [] { return Unparsed(FLAGS_per_device_train_batch_size); }},
      {&absl::GetFlagReflectionHandle(FLAGS_output_dir), "checkpoint_dir",
       [] { return absl::GetFlag(FLAGS_output_dir); }},
      {&absl::GetFlagReflectionHandle(FLAGS_logging_steps), "log_every",
       [] { return Unparsed(FLAGS_logging_steps); }},
      {&absl::GetFlagReflectionHandle(FLAGS_save_steps), "checkpoint_every",
       [] { return Unparsed(FLAGS_save_steps); }},
      {&absl::GetFlagReflectionHandle(FLAGS_eval_steps), "eval_every",
       [] { return Unparsed(FLAGS_eval_steps); }},
  };
  return *aliases;
}

const FlagBinding* BindingFor(absl::string_view name) {
  for (const FlagBinding& b : Bindings()) {
    if (b.flag->Name() == name) return &b;
  }
  return nullptr;
}

// Applies every alias given (per is_set) by setting its canonical flag's
// value and binding. Refuses an alias that disagrees with its canonical flag
// or with another alias of it.
absl::Status ApplyAliases(const std::function<bool(const absl::CommandLineFlag&)>& is_set,
                          TrainConfig* config) {
  std::map<std::string, std::string> chosen;  // canonical -> "--alias=value"
  for (const FlagAlias& alias : Aliases()) {
    if (!is_set(*alias.flag)) continue;
    const std::string value = alias.value();
    if (value.empty()) continue;
    const std::string spelled = absl::StrCat("--", alias.flag->Name(), "=",
                                             alias.flag->CurrentValue());
    const FlagBinding* canonical = BindingFor(alias.canonical);
    if (is_set(*canonical->flag) && canonical->flag->CurrentValue() != value) {
      return absl::InvalidArgumentError(absl::StrCat(
          spelled, " disagrees with --", alias.canonical, "=",
          canonical->flag->CurrentValue(), ": give one of them"));
    }
    auto [it, inserted] = chosen.emplace(alias.canonical, spelled);
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat(
          it->second, " and ", spelled, " both set --", alias.canonical,
          ": give one of them"));
    }
    // Parse through the canonical flag: the same checks and the same value
    // as if it had been given itself.
    std::string error;
    absl::CommandLineFlag* target = absl::FindCommandLineFlag(alias.canonical);
    if (!target->ParseFrom(value, &error)) {
      return absl::InvalidArgumentError(
          absl::StrCat(spelled, " is invalid: ", error));
    }
    canonical->apply(config);
  }
  return absl::OkStatus();
}

// --num_train_epochs and --steps (or --max_steps) both give the run's length:
// on the command line together they are refused; a command line that gives
// steps overrides a --config file's epochs.
absl::Status CheckOneRunLength(const std::function<bool(const absl::CommandLineFlag&)>& is_set,
                               TrainConfig* config) {
  const bool steps = is_set(absl::GetFlagReflectionHandle(FLAGS_steps));
  const bool max_steps = is_set(absl::GetFlagReflectionHandle(FLAGS_max_steps));
  if (!steps && !max_steps) return absl::OkStatus();
  if (is_set(absl::GetFlagReflectionHandle(FLAGS_num_train_epochs))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--num_train_epochs and --", steps ? "steps" : "max_steps",
        " both set the run's length: give one of them"));
  }
  config->set_num_train_epochs(0);
  return absl::OkStatus();
}

bool SpecifiedOnCommandLine(const absl::CommandLineFlag& flag) {
  // absl keeps this bit private to its parser; the accessor is how its own
  // libraries read it.
  return absl::flags_internal::PrivateHandleAccessor::IsSpecifiedOnCommandLine(flag);
}

// base <- the --config file <- the flags given; not validated.
absl::StatusOr<TrainConfig> MergeFlags(
    const std::function<bool(const absl::CommandLineFlag&)>& is_set, const TrainConfig& base) {
  TrainConfig config = base;
  const std::string config_path = ExpandUserPath(absl::GetFlag(FLAGS_config));
  if (!config_path.empty()) {
    absl::Status s = MergeTextConfigFile(config_path, &config);
    if (!s.ok()) return s;
  }
  for (const FlagBinding& binding : Bindings()) {
    if (is_set(*binding.flag)) binding.apply(&config);
  }
  if (absl::Status s = ApplyAliases(is_set, &config); !s.ok()) return s;
  if (is_set(absl::GetFlagReflectionHandle(FLAGS_warmup_ratio)) &&
      is_set(absl::GetFlagReflectionHandle(FLAGS_warmup_steps))) {
    return absl::InvalidArgumentError(
        "--warmup_ratio and --warmup_steps both set the warmup: give one of them");
  }
  if (absl::Status s = CheckOneRunLength(is_set, &config); !s.ok()) return s;
  ExpandUserPaths(&config);
  return config;
}

}  // namespace

absl::StatusOr<TrainConfig> ConfigFromFlags(
    const std::function<bool(const absl::CommandLineFlag&)>& is_set, const TrainConfig& base) {
  absl::StatusOr<TrainConfig> merged = MergeFlags(is_set, base);
  if (!merged.ok()) return merged.status();
  TrainConfig config = *std::move(merged);
  const std::string config_path = ExpandUserPath(absl::GetFlag(FLAGS_config));
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

absl::StatusOr<TrainConfig> ConfigFromFlagsOver(const TrainConfig& base) {
  return ConfigFromFlags(SpecifiedOnCommandLine, base);
}

absl::StatusOr<TrainConfig> UncheckedConfigFromFlags() {
  return MergeFlags(SpecifiedOnCommandLine, DefaultTrainConfig());
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
  if (flag != nullptr && SpecifiedOnCommandLine(*flag)) return true;
  for (const FlagAlias& alias : Aliases()) {
    if (alias.canonical == name && SpecifiedOnCommandLine(*alias.flag) &&
        !alias.value().empty()) {
      return true;
    }
  }
  return false;
}

std::vector<std::pair<std::string, std::string>> FlagAliasNames() {
  std::vector<std::pair<std::string, std::string>> names;
  for (const FlagAlias& alias : Aliases()) {
    names.emplace_back(alias.flag->Name(), alias.canonical);
  }
  return names;
}

std::string FieldPathOfFlag(const std::string& name) {
  // Flags are named after their field, except these.
  static const auto* const renamed = new std::map<std::string, std::string>{
      {"optimizer", "optimizer.name"},
      {"schedule", "schedule.kind"},
      {"loss_scale_mode", "loss_scale.mode"},
  };
  if (auto it = renamed->find(name); it != renamed->end()) return it->second;
  const google::protobuf::Descriptor* root = TrainConfig::descriptor();
  if (root->FindFieldByName(name) != nullptr) return name;
  for (int i = 0; i < root->field_count(); ++i) {
    const google::protobuf::Descriptor* nested = root->field(i)->message_type();
    if (nested != nullptr && nested->FindFieldByName(name) != nullptr) {
      return absl::StrCat(root->field(i)->name(), ".", name);
    }
  }
  return "";
}

bool FieldChosenByUser(const std::string& name) {
  if (FlagGivenOnCommandLine(name)) return true;
  const std::string path = ExpandUserPath(absl::GetFlag(FLAGS_config));
  if (path.empty()) return false;
  // Read again (a few calls per run): ConfigFromFlags has read and checked
  // this file already.
  std::string text;
  if (!ReadWholeFile(path, &text, kMaxConfigBytes).ok()) return false;
  auto paths = FieldPathsInTextConfig(text);
  return paths.ok() && paths->count(FieldPathOfFlag(name)) > 0;
}

}  // namespace trainer
}  // namespace mnt
