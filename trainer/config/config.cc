#include "trainer/config/config.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "trainer/io/atomic_file.h"
#include "trainer/config/optimizer_options.h"
#include "trainer/config/user_path.h"
#include "trainer/text/nearest_name.h"

namespace mnt {
namespace trainer {
namespace {

absl::Status Invalid(absl::string_view flag, absl::string_view value,
                     absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " is invalid: expected ", expected));
}

absl::Status CheckOneOf(absl::string_view flag, const std::string& value,
                        std::initializer_list<absl::string_view> allowed) {
  for (absl::string_view a : allowed) {
    if (value == a) return absl::OkStatus();
  }
  return Invalid(flag, value,
                 absl::StrCat("one of ", absl::StrJoin(allowed, ", ",
                                                       [](std::string* out, absl::string_view a) {
                                                         // Spell the empty choice so it is visible.
                                                         out->append(a.empty() ? "\"\"" : std::string(a));
                                                       })));
}

absl::Status CheckAtLeast(absl::string_view flag, int64_t value, int64_t min) {
  if (value >= min) return absl::OkStatus();
  return Invalid(flag, absl::StrCat(value), absl::StrCat("an integer >= ", min));
}

// Sizes multiply into byte counts (batch x width x 4): a bound far above any
// real run keeps every such product inside int64.
absl::Status CheckBetween(absl::string_view flag, int64_t value, int64_t min, int64_t max) {
  if (value >= min && value <= max) return absl::OkStatus();
  return Invalid(flag, absl::StrCat(value), absl::StrCat("an integer from ", min, " to ", max));
}

// Checks min <= value (or < when min_exclusive) and value < / <= max, finite.
absl::Status CheckRange(absl::string_view flag, double value, double min,
                        bool min_exclusive, double max, bool max_exclusive) {
  const bool ok = std::isfinite(value) &&
                  (min_exclusive ? value > min : value >= min) &&
                  (max_exclusive ? value < max : value <= max);
  if (ok) return absl::OkStatus();
  std::string expected = absl::StrCat("a finite value ", min_exclusive ? "> " : ">= ", min);
  if (std::isfinite(max)) {
    absl::StrAppend(&expected, " and ", max_exclusive ? "< " : "<= ", max);
  }
  return Invalid(flag, absl::StrCat(value), expected);
}

// A plugin name: it becomes part of a file name (mnt_<kind>_<name>.so).
absl::Status CheckPluginName(absl::string_view flag, const std::string& value,
                             absl::string_view builtins) {
  bool ok = !value.empty();
  for (char ch : value) {
    ok &= std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
  }
  if (ok) return absl::OkStatus();
  return Invalid(flag, value,
                 absl::StrCat("one of ", builtins, ", or the name of a plugin"));
}

constexpr double kInf = HUGE_VAL;

absl::Status ValidateData(const DataConfig& d) {
  absl::Status s = CheckOneOf("dataset", d.dataset(),
                              {"fortunes", "shards", "text", "digits", "idx"});
  if (!s.ok()) return s;
  bool has_test_set = false;
  if (d.dataset() == "idx") {
    if (d.train_images().empty() || d.train_labels().empty()) {
      return absl::InvalidArgumentError(
          "--dataset=idx needs --train_images and --train_labels (IDX file paths)");
    }
    if (d.test_images().empty() != d.test_labels().empty()) {
      return absl::InvalidArgumentError(
          "--test_images and --test_labels must be given together (or neither, "
          "to split --validation_fraction off the training set)");
    }
    has_test_set = !d.test_images().empty();
  }
  if (d.dataset() == "text") {
    if (d.text_path().empty()) {
      return absl::InvalidArgumentError(
          "--dataset=text needs --text_path (a plain text file)");
    }
    s = CheckBetween("seq_len", d.seq_len(), 1, int64_t{1} << 24);
    if (!s.ok()) return s;
  }
  if (d.dataset() == "shards") {
    if (d.train_shards().empty()) {
      return absl::InvalidArgumentError(
          "--dataset=shards needs --train_shards (a glob of llm.c token shards)");
    }
    has_test_set = !d.val_shards().empty();
  }
  if (d.dataset() == "shards" || d.dataset() == "fortunes") {
    s = CheckAtLeast("seq_len", d.seq_len(), 1);
    if (!s.ok()) return s;
    s = CheckAtLeast("vocab_size", d.vocab_size(), 0);
    if (!s.ok()) return s;
  }
  if (has_test_set) {
    // Unused, but a nonsense value is still a mistake worth reporting.
    return CheckRange("validation_fraction", d.validation_fraction(), 0, false, 1, true);
  }
  return CheckRange("validation_fraction", d.validation_fraction(), 0, true, 1, true);
}

absl::Status ValidateOptimizer(const OptimizerConfig& o) {
  absl::Status s =
      CheckOneOf("optimizer", o.name(), {"adamw", "adam", "sgd", "adamw8bit", "adafactor"});
  if (s.ok()) s = CheckRange("lr", o.lr(), 0, true, kInf, false);
  if (s.ok()) s = CheckRange("weight_decay", o.weight_decay(), 0, false, kInf, false);
  if (s.ok()) s = CheckRange("beta1", o.beta1(), 0, false, 1, true);
  if (s.ok()) s = CheckRange("beta2", o.beta2(), 0, false, 1, true);
  if (s.ok()) s = CheckRange("eps", o.eps(), 0, true, kInf, false);
  if (s.ok()) s = CheckRange("momentum", o.momentum(), 0, false, 1, true);
  // "" (a config file written before the field existed) means auto.
  if (s.ok() && !o.multi_tensor_optimizer().empty()) {
    s = CheckOneOf("multi_tensor_optimizer", o.multi_tensor_optimizer(), {"auto", "off"});
  }
  if (s.ok()) s = ParseOptimizerOptions(o).status();
  if (!s.ok()) return s;
  if (o.nesterov() && (o.name() != "sgd" || o.momentum() <= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nesterov=true is invalid with --optimizer=", o.name(), " --momentum=",
        o.momentum(), ": expected --optimizer=sgd with --momentum > 0"));
  }
  return absl::OkStatus();
}

absl::Status ValidateSchedule(const ScheduleConfig& sc) {
  absl::Status s = CheckOneOf("schedule", sc.kind(), {"cosine", "linear", "constant"});
  if (s.ok()) s = CheckAtLeast("warmup_steps", sc.warmup_steps(), 0);
  if (s.ok()) s = CheckRange("warmup_ratio", sc.warmup_ratio(), 0, false, 1, true);
  if (s.ok()) s = CheckRange("min_lr_ratio", sc.min_lr_ratio(), 0, false, 1, false);
  return s;
}

absl::Status ValidateLossScale(const LossScaleConfig& ls) {
  // 0 means "the precision plugin's default" for every numeric field.
  absl::Status s = CheckOneOf("loss_scale_mode", ls.mode(), {"", "dynamic", "static", "none"});
  if (s.ok()) s = CheckRange("init_scale", ls.init_scale(), 0, false, kInf, false);
  if (s.ok() && ls.growth_factor() != 0) {
    s = CheckRange("growth_factor", ls.growth_factor(), 1, true, kInf, false);
    if (!s.ok()) {
      return Invalid("growth_factor", absl::StrCat(ls.growth_factor()),
                     "0 (plugin default) or a finite value > 1");
    }
  }
  if (s.ok() && ls.backoff_factor() != 0) {
    s = CheckRange("backoff_factor", ls.backoff_factor(), 0, true, 1, true);
    if (!s.ok()) {
      return Invalid("backoff_factor", absl::StrCat(ls.backoff_factor()),
                     "0 (plugin default) or a value > 0 and < 1");
    }
  }
  if (s.ok()) s = CheckAtLeast("growth_interval", ls.growth_interval(), 0);
  return s;
}

// Epochs, the evaluation strategy, reporting, the best checkpoint and early
// stopping (fields 40-45).
absl::Status ValidateRunPlan(const TrainConfig& c) {
  absl::Status s = CheckRange("num_train_epochs", c.num_train_epochs(), 0, false, kInf, false);
  if (s.ok() && !c.eval_strategy().empty())
    s = CheckOneOf("eval_strategy", c.eval_strategy(), {"no", "steps", "epoch"});
  if (s.ok())
    s = CheckOneOf("report_to", c.report_to(), {"", "none", "tensorboard", "jsonl", "all"});
  if (s.ok()) s = CheckAtLeast("early_stopping_patience", c.early_stopping_patience(), 0);
  if (s.ok()) {
    s = CheckRange("early_stopping_threshold", c.early_stopping_threshold(), 0, false, kInf,
                   false);
  }
  if (!s.ok() || c.eval_strategy() != "no") return s;
  // Both act on evaluations: with none they would silently do nothing.
  if (c.save_best()) {
    return absl::InvalidArgumentError(
        "--save_best keeps the checkpoint with the lowest eval loss, but --eval_strategy=no "
        "evaluates nothing: use --eval_strategy=steps or epoch");
  }
  if (c.early_stopping_patience() > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--early_stopping_patience=", c.early_stopping_patience(),
        " counts evaluations, but --eval_strategy=no evaluates nothing: use "
        "--eval_strategy=steps or epoch"));
  }
  return s;
}

}  // namespace

TrainConfig DefaultTrainConfig() {
  TrainConfig c;
  c.set_model("gpt2");
  c.set_precision("auto");
  c.set_device("auto");
  DataConfig* d = c.mutable_data();
  d->set_dataset("fortunes");
  d->set_seq_len(64);
  d->set_tokenizer("bytes");
  d->set_tokenizer_type("bpe");
  d->set_validation_fraction(0.2);
  c.set_batch_size(64);
  c.set_grad_accum_steps(1);
  c.set_steps(300);  // gpt2-tiny on fortunes: about a minute on 2 CPU cores
  OptimizerConfig* o = c.mutable_optimizer();
  o->set_name("adamw");
  o->set_lr(1e-3);
  o->set_weight_decay(0.01);
  o->set_beta1(0.9);
  o->set_beta2(0.999);
  o->set_eps(1e-8);
  o->set_momentum(0.9);
  o->set_nesterov(false);
  o->set_multi_tensor_optimizer("auto");
  ScheduleConfig* sc = c.mutable_schedule();
  sc->set_kind("cosine");
  sc->set_warmup_steps(30);
  sc->set_min_lr_ratio(0.1);
  c.set_clip_grad_norm(1.0);
  c.mutable_loss_scale();  // mode "" = the precision plugin's defaults
  c.set_eval_every(100);
  c.set_eval_batches(0);
  c.set_log_every(10);
  c.set_seed(1234);
  c.set_checkpoint_every(0);
  c.set_progress("auto");
  c.set_device_loss_scaling("auto");
  c.set_data_parallel("auto");
  c.set_bucket_mb(25);
  c.set_exchange_in_backward("auto");
  c.set_eval_strategy("steps");
  return c;
}

absl::Status ValidateTrainConfig(const TrainConfig& c) {
  if (c.model().empty()) {
    return absl::InvalidArgumentError(
        "--model= is invalid: expected a model plugin name such as mlp");
  }
  for (char ch : c.model()) {
    // The name becomes part of a file name: mnt_model_<name>.so.
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) {
      return Invalid("model", c.model(), "a plugin name of letters, digits and _");
    }
  }
  // Besides the built-in names, any plugin name is accepted so third-party
  // precision and backend plugins can be chosen; the plugin registry then
  // refuses names it cannot find, listing what is available.
  absl::Status s = CheckPluginName("precision", c.precision(), "fp32, tf32, bf16, fp16, fp8, auto");
  if (s.ok()) s = CheckPluginName("device", c.device(), "cpu, cuda, auto");
  if (s.ok()) s = ValidateData(c.data());
  if (s.ok()) s = CheckBetween("batch_size", c.batch_size(), 1, int64_t{1} << 24);
  if (s.ok()) s = CheckBetween("grad_accum_steps", c.grad_accum_steps(), 1, int64_t{1} << 24);
  if (s.ok()) s = CheckAtLeast("steps", c.steps(), 1);
  if (s.ok()) s = CheckAtLeast("global_batch_size", c.global_batch_size(), 0);
  if (s.ok()) s = ValidateOptimizer(c.optimizer());
  if (s.ok()) s = ValidateSchedule(c.schedule());
  if (s.ok()) s = CheckRange("clip_grad_norm", c.clip_grad_norm(), 0, false, kInf, false);
  if (s.ok()) s = ValidateLossScale(c.loss_scale());
  if (s.ok()) s = CheckAtLeast("eval_every", c.eval_every(), 0);
  if (s.ok()) s = CheckAtLeast("eval_batches", c.eval_batches(), 0);
  if (s.ok()) s = CheckAtLeast("log_every", c.log_every(), 0);
  if (s.ok()) s = CheckAtLeast("checkpoint_every", c.checkpoint_every(), 0);
  if (s.ok()) s = CheckOneOf("progress", c.progress(), {"auto", "bar", "plain", "none"});
  if (s.ok() && !c.device_loss_scaling().empty())
    s = CheckOneOf("device_loss_scaling", c.device_loss_scaling(), {"auto", "on", "off"});
  if (s.ok()) s = CheckAtLeast("save_total_limit", c.save_total_limit(), 0);
  if (s.ok() && !c.data_parallel().empty())
    s = CheckOneOf("data_parallel", c.data_parallel(), {"auto", "off"});
  if (s.ok()) s = CheckRange("bucket_mb", c.bucket_mb(), 0, false, kInf, false);
  if (s.ok() && !c.exchange_in_backward().empty())
    s = CheckOneOf("exchange_in_backward", c.exchange_in_backward(), {"auto", "off"});
  if (s.ok() && c.zero_stage() != 0 && c.zero_stage() != 1) {
    s = absl::InvalidArgumentError(
        absl::StrCat("--zero_stage=", c.zero_stage(), ": expected 0 or 1"));
  }
  if (s.ok() && c.zero_stage() == 1 && c.optimizer().name() == "adafactor") {
    // ZeRO-1 steps element ranges of parameters; Adafactor's factored
    // second moment and update clipping are sums over whole tensors.
    s = absl::InvalidArgumentError(
        "--optimizer=adafactor with --zero_stage=1: Adafactor's row and column means and its "
        "update clipping span whole tensors, which ZeRO-1 cuts into ranks' pieces; use "
        "--zero_stage=0 (or --optimizer=adamw8bit, whose 8-bit state ZeRO-1 shards)");
  }
  if (s.ok()) s = CheckRange("memory_limit_gb", c.memory_limit_gb(), 0, false, kInf, false);
  if (s.ok()) s = ValidateRunPlan(c);
  if (s.ok() && (c.run_name() == "." || c.run_name() == ".." ||
                 c.run_name().find('/') != std::string::npos)) {
    s = absl::InvalidArgumentError(absl::StrCat(
        "--run_name='", c.run_name(), "' must be a folder name (no '/'), not a path; "
        "use --checkpoint_dir=PATH for a folder elsewhere"));
  }
  // --resume with nothing to resume is judged by the command line, once the
  // run's folder is known (trainer/cli).
  return s;
}

namespace {

// Keeps the first parse error as "<source>:<line>:<column>: <message>".
class FirstErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(std::string source) : source_(std::move(source)) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!first_error_.empty()) return;
    // The parser counts from 0; editors count from 1.
    first_error_ = absl::StrCat(source_, ":", line + 1, ":", column + 1, ": ", message,
                                Suggestion(message));
  }
  void AddWarning(int, google::protobuf::io::ColumnNumber,
                  const std::string&) override {}

  const std::string& first_error() const { return first_error_; }

 private:
  // " (did you mean 'steps'?)" for protobuf's 'Message type "mantissa.X"
  // has no field named "stpes".' when a field of X is a typo away; else "".
  static std::string Suggestion(const std::string& message) {
    std::string type_name, field_name;
    if (!UnknownField(message, &type_name, &field_name)) return "";
    const google::protobuf::Descriptor* type =
        TrainConfig::descriptor()->file()->pool()->FindMessageTypeByName(type_name);
    if (type == nullptr) return "";
    std::vector<std::string> fields;
    for (int i = 0; i < type->field_count(); ++i) fields.push_back(type->field(i)->name());
    const std::string nearest = NearestName(field_name, fields);
    return nearest.empty() ? "" : absl::StrCat(" (did you mean '", nearest, "'?)");
  }

  // The message type and the field of 'Message type "T" has no field named
  // "F"', or false. A string search, not std::regex: GCC 12 warns
  // (-Wmaybe-uninitialized, falsely) inside libstdc++'s regex compiler.
  static bool UnknownField(absl::string_view message, std::string* type, std::string* field) {
    constexpr absl::string_view kType = "Message type \"";
    constexpr absl::string_view kField = "\" has no field named \"";
    const size_t t = message.find(kType);
    if (t == absl::string_view::npos) return false;
    const size_t type_begin = t + kType.size();
    const size_t f = message.find(kField, type_begin);
    if (f == absl::string_view::npos) return false;
    const size_t field_begin = f + kField.size();
    const size_t end = message.find('"', field_begin);
    if (end == absl::string_view::npos) return false;
    *type = std::string(message.substr(type_begin, f - type_begin));
    *field = std::string(message.substr(field_begin, end - field_begin));
    return !type->empty() && !field->empty();
  }

  std::string source_;
  std::string first_error_;
};

}  // namespace

absl::Status MergeTextConfig(const std::string& text,
                             const std::string& source_name,
                             TrainConfig* config) {
  FirstErrorCollector errors(source_name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  // Parse into a copy so a failed parse leaves *config as it was.
  TrainConfig merged = *config;
  if (!parser.MergeFromString(text, &merged)) {
    return absl::InvalidArgumentError(
        errors.first_error().empty()
            ? absl::StrCat(source_name, ": not a valid TrainConfig text proto")
            : errors.first_error());
  }
  *config = std::move(merged);
  return absl::OkStatus();
}

absl::Status MergeTextConfigFile(const std::string& path, TrainConfig* config) {
  std::string text;
  if (absl::Status s = ReadWholeFile(path, &text, kMaxConfigBytes); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("config file: ", s.message()));
  }
  return MergeTextConfig(text, path, config);
}

absl::StatusOr<TrainConfig> LoadTextConfig(const std::string& path) {
  TrainConfig config = DefaultTrainConfig();
  absl::Status s = MergeTextConfigFile(path, &config);
  if (!s.ok()) return s;
  s = ValidateTrainConfig(config);
  if (!s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": ", s.message()));
  }
  return config;
}

namespace {

// Writes every singular field of `message`, zero values included, as text.
void PrintAllFields(const google::protobuf::Message& message, int indent,
                    std::string* out) {
  const google::protobuf::Descriptor* descriptor = message.GetDescriptor();
  const google::protobuf::Reflection* reflection = message.GetReflection();
  const std::string pad(indent * 2, ' ');
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* field = descriptor->field(i);
    if (field->is_repeated()) continue;  // TrainConfig has none
    if (field->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_MESSAGE) {
      absl::StrAppend(out, pad, field->name(), " {\n");
      PrintAllFields(reflection->GetMessage(message, field), indent + 1, out);
      absl::StrAppend(out, pad, "}\n");
      continue;
    }
    std::string value;
    google::protobuf::TextFormat::PrintFieldValueToString(message, field, -1, &value);
    absl::StrAppend(out, pad, field->name(), ": ", value, "\n");
  }
}

}  // namespace

void ExpandUserPaths(TrainConfig* c) {
  DataConfig& d = *c->mutable_data();
  for (std::string* p :
       {d.mutable_train_images(), d.mutable_train_labels(), d.mutable_test_images(),
        d.mutable_test_labels(), d.mutable_text_path(), d.mutable_cache_dir(),
        d.mutable_train_shards(), d.mutable_val_shards(), d.mutable_tokenizer_model(),
        c->mutable_checkpoint_dir(), c->mutable_resume_from(), c->mutable_metrics_jsonl(),
        c->mutable_tensorboard_dir()}) {
    *p = ExpandUserPath(*p);
  }
  std::vector<std::string> dirs = absl::StrSplit(c->plugin_path(), ':');
  for (std::string& dir : dirs) dir = ExpandUserPath(dir);
  c->set_plugin_path(absl::StrJoin(dirs, ":"));
}

std::string ConfigToText(const TrainConfig& config) {
  // Zero values are written out too: reading the text back on top of the
  // defaults must not resurrect a default in place of an explicit 0.
  std::string out;
  PrintAllFields(config, 0, &out);
  return out;
}

}  // namespace trainer
}  // namespace mnt
