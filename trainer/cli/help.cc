#include "trainer/cli/help.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "plugins/abi/mnt_common.h"
#include "trainer/cli/build_info.h"

namespace mnt::trainer {
namespace {

struct Topic {
  const char* title;
  std::vector<const char*> flags;
};

// Flags by topic, in the order a user meets them. A trainer flag missing
// here still shows, under "Other".
const std::vector<Topic>& Topics() {
  static const auto* const topics = new std::vector<Topic>{
      {"Model, precision, device",
       {"model", "model_options", "gradient_checkpointing", "precision", "bf16", "fp16",
        "tf32", "precision_options", "device", "backend_options"}},
      {"Data",
       {"dataset", "train_shards", "val_shards", "vocab_size", "text_path", "tokenizer",
        "tokenizer_type", "tokenizer_model",
        "train_images", "train_labels", "test_images", "test_labels", "seq_len",
        "validation_fraction", "cache_dir"}},
      {"Optimization",
       {"steps", "max_steps", "batch_size", "per_device_train_batch_size", "auto_batch_size",
        "memory_limit_gb", "freeze", "lora", "grad_accum_steps",
        "gradient_accumulation_steps", "optimizer", "optimizer_options", "lr", "learning_rate", "weight_decay",
        "beta1", "beta2", "eps", "momentum", "nesterov", "multi_tensor_optimizer", "stochastic_rounding", "schedule", "lr_scheduler",
        "lr_scheduler_type", "num_train_epochs",
        "warmup_steps", "warmup_ratio", "min_lr_ratio", "clip_grad_norm", "max_grad_norm", "seed"}},
      {"Loss scaling (fp16)",
       {"loss_scale_mode", "init_scale", "growth_factor", "backoff_factor",
        "growth_interval", "device_loss_scaling", "debug_overflow"}},
      {"Evaluation, output, checkpoints",
       {"eval_every", "eval_steps", "eval_batches", "log_every", "logging_steps", "progress",
        "eval_strategy", "save_best", "early_stopping_patience", "early_stopping_threshold",
        "report_to", "logging_dir",
        "metrics_jsonl", "tensorboard_dir", "checkpoint_dir", "output_dir", "checkpoint_every",
        "save_steps", "save_total_limit",
        "run_name", "resume", "resume_if_exists", "resume_from", "resume_from_checkpoint",
        "eval_only", "dry_run"}},
      {"Data parallel (mpirun -np N bazel-bin/trainer/cli/train ...)",
       {"data_parallel", "bucket_mb", "zero_stage", "exchange_in_backward"}},
      {"Files", {"config", "plugin_path", "verbose"}},
  };
  return *topics;
}

bool IsTrainerFlag(const absl::CommandLineFlag& flag) {
  return absl::StrContains(flag.Filename(), "trainer/");
}

std::string FlagLine(const absl::CommandLineFlag& flag) {
  std::string value = flag.DefaultValue();
  if (flag.IsOfType<std::string>() && value.empty()) value = "\"\"";
  // "  --name=default", then the help wrapped into columns 34 to 100.
  constexpr size_t kColumn = 34, kWidth = 100;
  std::string out;
  std::string line = absl::StrCat("  --", flag.Name(), "=", value);
  if (line.size() + 2 > kColumn) {
    absl::StrAppend(&out, line, "\n");
    line.clear();
  }
  line.resize(kColumn, ' ');
  bool line_empty = true;
  for (absl::string_view word : absl::StrSplit(flag.Help(), ' ', absl::SkipEmpty())) {
    if (!line_empty && line.size() + 1 + word.size() > kWidth) {
      absl::StrAppend(&out, line, "\n");
      line.assign(kColumn, ' ');
      line_empty = true;
    }
    if (!line_empty) line += ' ';
    line.append(word.data(), word.size());
    line_empty = false;
  }
  return absl::StrCat(out, line, "\n");
}

bool Matches(const absl::CommandLineFlag& flag, const std::string& match) {
  return match.empty() || absl::StrContains(flag.Name(), match) ||
         absl::StrContains(flag.Help(), match);
}

}  // namespace

std::string UsageText() {
  return absl::StrCat(
      "Trains a model in a chosen precision (Mantissa, plugin ABI ", MNT_ABI_MAJOR, ".",
      MNT_ABI_MINOR, ").\n\n"
      "usage: train [--model=gpt2|mlp|cnn] [--precision=auto|fp32|tf32|bf16|fp16|fp8]\n"
      "             [--device=auto|cpu|cuda] [--config=run.textproto] [--flag=value ...]\n\n"
      "Without flags: GPT-2 (gpt2-tiny on the CPU, gpt2-124m on a GPU) on English text.\n"
      "Flags given on the command line override --config; model and device defaults\n"
      "fill in only what neither sets. Bad input: one line `mantissa: error: ...`, exit 1.");
}

std::string FlagsHelp(bool full, const std::string& match) {
  std::map<std::string, const absl::CommandLineFlag*> trainer_flags, other_flags;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    (IsTrainerFlag(*flag) ? trainer_flags : other_flags)[std::string(name)] = flag;
  }
  std::string out;
  std::set<std::string> shown;
  auto section = [&](const std::string& title, const std::vector<std::string>& names,
                     const std::map<std::string, const absl::CommandLineFlag*>& from) {
    std::string body;
    for (const std::string& name : names) {
      auto it = from.find(name);
      if (it == from.end() || !Matches(*it->second, match)) continue;
      shown.insert(name);
      body += FlagLine(*it->second);
    }
    if (!body.empty()) absl::StrAppend(&out, "\n", title, ":\n", body);
  };
  for (const Topic& topic : Topics()) {
    section(topic.title, std::vector<std::string>(topic.flags.begin(), topic.flags.end()),
            trainer_flags);
  }
  std::vector<std::string> rest;
  for (const auto& [name, flag] : trainer_flags) {
    if (!shown.count(name)) rest.push_back(name);
  }
  section("Other", rest, trainer_flags);
  if (full) {
    std::vector<std::string> absl_names;
    for (const auto& [name, flag] : other_flags) absl_names.push_back(name);
    section("Flag handling (absl)", absl_names, other_flags);
  }
  if (out.empty()) return absl::StrCat("No flag matches \"", match, "\".\n");
  return out;
}

std::optional<int> HandleHelpFlags(int argc, char* const argv[], FILE* out) {
  for (int i = 1; i < argc; ++i) {
    const absl::string_view arg = argv[i];
    if (arg == "--") break;
    absl::string_view name = arg;
    if (!absl::ConsumePrefix(&name, "--")) absl::ConsumePrefix(&name, "-");
    if (name.size() == arg.size()) continue;  // not a flag
    std::string value;
    if (const size_t eq = name.find('='); eq != absl::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    if (name == "version") {
      std::fprintf(out, "train (Mantissa) %s, commit %s, plugin ABI %d.%d\n", MANTISSA_RELEASE,
                   MANTISSA_COMMIT, MNT_ABI_MAJOR, MNT_ABI_MINOR);
      return 0;
    }
    const bool help = name == "h" || name == "help" || name == "helpshort" ||
                      name == "helppackage";
    const bool full = name == "helpfull";
    const bool match = name == "helpmatch";
    if (!help && !full && !match) continue;
    std::fprintf(out, "%s\n%s", UsageText().c_str(),
                 FlagsHelp(full, match ? value : "").c_str());
    if (!full) {
      std::fprintf(out, "\n--helpfull also lists absl's flags (--flagfile, --fromenv, ...).\n");
    }
    return 0;
  }
  return std::nullopt;
}

}  // namespace mnt::trainer
