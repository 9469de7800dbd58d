#include "trainer/config/flags.h"

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

ABSL_DECLARE_FLAG(std::string, config);
ABSL_DECLARE_FLAG(double, lr);
ABSL_DECLARE_FLAG(int64_t, steps);
ABSL_DECLARE_FLAG(int64_t, batch_size);
ABSL_DECLARE_FLAG(std::string, precision);
ABSL_DECLARE_FLAG(double, clip_grad_norm);
ABSL_DECLARE_FLAG(bool, bf16);
ABSL_DECLARE_FLAG(bool, fp16);
ABSL_DECLARE_FLAG(int64_t, gradient_accumulation_steps);
ABSL_DECLARE_FLAG(double, max_grad_norm);
ABSL_DECLARE_FLAG(std::string, lr_scheduler);
ABSL_DECLARE_FLAG(double, warmup_ratio);
ABSL_DECLARE_FLAG(int64_t, warmup_steps);
ABSL_DECLARE_FLAG(std::string, lr_scheduler_type);
ABSL_DECLARE_FLAG(std::string, resume_from_checkpoint);
ABSL_DECLARE_FLAG(std::string, resume_from);
ABSL_DECLARE_FLAG(bool, resume);
ABSL_DECLARE_FLAG(double, num_train_epochs);
ABSL_DECLARE_FLAG(int64_t, max_steps);
ABSL_DECLARE_FLAG(std::string, logging_dir);

namespace mnt {
namespace trainer {
namespace {

using ::google::protobuf::util::MessageDifferencer;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

void WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  ASSERT_TRUE(out.good()) << path;
}

// Number of non-message fields in `d`, recursively: each needs its own flag.
int CountLeafFields(const google::protobuf::Descriptor* d) {
  int n = 0;
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    n += f->message_type() ? CountLeafFields(f->message_type()) : 1;
  }
  return n;
}

std::function<bool(const absl::CommandLineFlag&)> Given(std::set<std::string> names) {
  return [names](const absl::CommandLineFlag& flag) { return names.count(std::string(flag.Name())) > 0; };
}

TEST(FlagsTest, EveryFieldHasExactlyOneFlag) {
  const std::vector<std::string> names = TrainConfigFlagNames();
  const std::set<std::string> unique(names.begin(), names.end());
  EXPECT_EQ(unique.size(), names.size());
  EXPECT_EQ(static_cast<int>(names.size()), CountLeafFields(TrainConfig::descriptor()));
  for (const char* expected :
       {"model", "model_options", "precision", "device", "backend_options", "dataset",
        "train_images", "train_labels", "test_images", "test_labels", "text_path", "seq_len",
        "cache_dir", "validation_fraction", "batch_size", "grad_accum_steps", "steps",
        "optimizer", "lr", "weight_decay", "beta1", "beta2", "eps", "momentum", "nesterov",
        "schedule", "warmup_steps", "min_lr_ratio", "clip_grad_norm", "loss_scale_mode",
        "init_scale", "growth_factor", "backoff_factor", "growth_interval", "eval_every",
        "eval_batches", "log_every", "seed", "checkpoint_dir", "checkpoint_every", "resume",
        "metrics_jsonl", "plugin_path", "progress", "device_loss_scaling"}) {
    EXPECT_EQ(unique.count(expected), 1u) << expected;
  }
}

TEST(FlagsTest, FlagDefaultsEqualDefaultTrainConfig) {
  TrainConfig from_flags;
  ApplyAllFlags(&from_flags);
  std::string diff;
  MessageDifferencer differencer;
  differencer.ReportDifferencesToString(&diff);
  EXPECT_TRUE(differencer.Compare(DefaultTrainConfig(), from_flags)) << diff;
}

TEST(FlagsTest, NoFlagsGivesDefaults) {
  absl::FlagSaver saver;
  absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(MessageDifferencer::Equals(*c, DefaultTrainConfig()));
}

TEST(FlagsTest, GivenFlagsBeatFileWhichBeatsDefaults) {
  absl::FlagSaver saver;
  const std::string path = TempPath("precedence.textproto");
  WriteFile(path, "model: \"file_model\"\nsteps: 7\noptimizer { lr: 0.5 }\nbatch_size: 16\n");
  absl::SetFlag(&FLAGS_config, path);
  absl::SetFlag(&FLAGS_lr, 1e-3);        // equal to the flag's default, still wins
  absl::SetFlag(&FLAGS_batch_size, 32);  // given
  absl::SetFlag(&FLAGS_steps, 99);       // set but not "given": must not win
  absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"lr", "batch_size"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->model(), "file_model");
  EXPECT_EQ(c->steps(), 7);
  EXPECT_DOUBLE_EQ(c->optimizer().lr(), 1e-3);
  EXPECT_EQ(c->batch_size(), 32);
  EXPECT_EQ(c->precision(), "auto");  // neither file nor flag: default
}

TEST(FlagsTest, InvalidFlagValueIsReported) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_precision, "fp/8");
  absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"precision"}));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            "--precision=fp/8 is invalid: expected one of fp32, tf32, bf16, fp16, fp8, auto, or the name of a plugin");
}

TEST(FlagsTest, FlagCanRepairABadValueFromTheFile) {
  absl::FlagSaver saver;
  const std::string path = TempPath("bad_then_fixed.textproto");
  WriteFile(path, "clip_grad_norm: -1\n");
  absl::SetFlag(&FLAGS_config, path);
  absl::StatusOr<TrainConfig> broken = ConfigFromFlags(Given({}));
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().message(),
            "--clip_grad_norm=-1 is invalid: expected a finite value >= 0 (config file " + path +
                " plus flags)");
  absl::SetFlag(&FLAGS_clip_grad_norm, 0.0);
  absl::StatusOr<TrainConfig> fixed = ConfigFromFlags(Given({"clip_grad_norm"}));
  ASSERT_TRUE(fixed.ok()) << fixed.status();
  EXPECT_EQ(fixed->clip_grad_norm(), 0.0);
}

TEST(FlagsTest, MissingConfigFileIsOneLineError) {
  absl::FlagSaver saver;
  const std::string path = TempPath("nope/missing.textproto");
  absl::SetFlag(&FLAGS_config, path);
  absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({}));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find(path), std::string::npos);
}

// The real path: absl parses argv and records which flags were on it.
TEST(FlagsTest, ParsedCommandLineOverridesFileEvenWithDefaultValue) {
  absl::FlagSaver saver;
  const std::string path = TempPath("cmdline.textproto");
  WriteFile(path, "steps: 7\noptimizer { lr: 0.5 }\nprecision: \"fp16\"\n");
  const std::string config_arg = "--config=" + path;
  std::vector<char*> argv = {const_cast<char*>("flags_test"),
                             const_cast<char*>(config_arg.c_str()),
                             const_cast<char*>("--lr=0.001"),
                             const_cast<char*>("--batch_size=8")};
  absl::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  absl::StatusOr<TrainConfig> c = ConfigFromFlags();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->optimizer().lr(), 1e-3);  // flag (= its default) beats file's 0.5
  EXPECT_EQ(c->batch_size(), 8);
  EXPECT_EQ(c->steps(), 7);             // from the file
  EXPECT_EQ(c->precision(), "fp16");    // from the file
  EXPECT_EQ(c->seed(), 1234u);          // default
}

TEST(FlagsTest, HuggingFaceAliasesSetTheirFields) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_bf16, true);
  absl::SetFlag(&FLAGS_gradient_accumulation_steps, 4);
  absl::SetFlag(&FLAGS_max_grad_norm, 0.5);
  absl::SetFlag(&FLAGS_lr_scheduler, "linear");
  absl::SetFlag(&FLAGS_warmup_ratio, 0.1);
  absl::StatusOr<TrainConfig> c = ConfigFromFlags(
      Given({"bf16", "gradient_accumulation_steps", "max_grad_norm", "lr_scheduler",
             "warmup_ratio"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->precision(), "bf16");
  EXPECT_EQ(c->grad_accum_steps(), 4);
  EXPECT_EQ(c->clip_grad_norm(), 0.5);
  EXPECT_EQ(c->schedule().kind(), "linear");
  EXPECT_EQ(c->schedule().warmup_ratio(), 0.1);
}

TEST(FlagsTest, HuggingFaceRunPlanNames) {
  {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_lr_scheduler_type, "linear");
    absl::SetFlag(&FLAGS_logging_dir, "/logs/tb");
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"lr_scheduler_type", "logging_dir"}));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->schedule().kind(), "linear");
    EXPECT_EQ(c->tensorboard_dir(), "/logs/tb");
  }
  // resume_from_checkpoint=True is Hugging Face's "the output folder's last
  // checkpoint": --resume, not a path named "True".
  for (const char* word : {"true", "True"}) {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_resume_from_checkpoint, word);
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"resume_from_checkpoint"}));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_TRUE(c->resume()) << word;
    EXPECT_EQ(c->resume_from(), "") << word;
  }
  for (const char* word : {"false", "False"}) {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_resume_from_checkpoint, word);
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"resume_from_checkpoint"}));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->resume()) << word;
    EXPECT_EQ(c->resume_from(), "") << word;
  }
  {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_resume_from_checkpoint, "/runs/a/checkpoint-3");
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"resume_from_checkpoint"}));
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->resume());
    EXPECT_EQ(c->resume_from(), "/runs/a/checkpoint-3");
  }
  {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_resume_from_checkpoint, "True");
    absl::SetFlag(&FLAGS_resume, false);
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"resume_from_checkpoint", "resume"}));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(),
              "--resume_from_checkpoint=True disagrees with --resume=false: give one of them");
  }
}

TEST(FlagsTest, EpochsOrStepsNotBoth) {
  for (const char* steps_flag : {"steps", "max_steps"}) {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_num_train_epochs, 3.0);
    absl::SetFlag(&FLAGS_steps, 50);
    absl::SetFlag(&FLAGS_max_steps, 50);
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"num_train_epochs", steps_flag}));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(), std::string("--num_train_epochs and --") + steps_flag +
                                        " both set the run's length: give one of them");
  }
  // A file's epochs yield to the command line's steps, and the other way.
  absl::FlagSaver saver;
  const std::string path = TempPath("epochs.textproto");
  WriteFile(path, "num_train_epochs: 2\nsteps: 40\n");
  absl::SetFlag(&FLAGS_config, path);
  absl::SetFlag(&FLAGS_steps, 70);
  absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"steps"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_train_epochs(), 0);
  EXPECT_EQ(c->steps(), 70);
  absl::SetFlag(&FLAGS_num_train_epochs, 5.0);
  c = ConfigFromFlags(Given({"num_train_epochs"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->num_train_epochs(), 5);
}

TEST(FlagsTest, AliasSetToFalseSetsNothing) {
  absl::FlagSaver saver;
  absl::SetFlag(&FLAGS_fp16, false);
  absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"fp16"}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->precision(), "auto");
}

TEST(FlagsTest, AliasesThatDisagreeAreRefused) {
  {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_fp16, true);
    absl::SetFlag(&FLAGS_precision, "bf16");
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"fp16", "precision"}));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(),
              "--fp16=true disagrees with --precision=bf16: give one of them");
  }
  {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_fp16, true);
    absl::SetFlag(&FLAGS_bf16, true);
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"fp16", "bf16"}));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(),
              "--bf16=true and --fp16=true both set --precision: give one of them");
  }
  {
    // Agreeing is fine.
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_max_grad_norm, 0.25);
    absl::SetFlag(&FLAGS_clip_grad_norm, 0.25);
    EXPECT_TRUE(ConfigFromFlags(Given({"max_grad_norm", "clip_grad_norm"})).ok());
    absl::SetFlag(&FLAGS_clip_grad_norm, 0.5);
    EXPECT_FALSE(ConfigFromFlags(Given({"max_grad_norm", "clip_grad_norm"})).ok());
  }
  {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_lr_scheduler, "step");
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"lr_scheduler"}));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(),
              "--schedule=step is invalid: expected one of cosine, linear, constant");
  }
  {
    absl::FlagSaver saver;
    absl::SetFlag(&FLAGS_warmup_ratio, 0.1);
    absl::SetFlag(&FLAGS_warmup_steps, 10);
    absl::StatusOr<TrainConfig> c = ConfigFromFlags(Given({"warmup_ratio", "warmup_steps"}));
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().message(),
              "--warmup_ratio and --warmup_steps both set the warmup: give one of them");
  }
}

TEST(FlagsTest, EveryFlagNamesItsField) {
  std::set<std::string> paths;
  for (const std::string& name : TrainConfigFlagNames()) {
    const std::string path = FieldPathOfFlag(name);
    ASSERT_FALSE(path.empty()) << name;
    // The path leads to a field, and to a different one for every flag.
    const google::protobuf::Descriptor* d = TrainConfig::descriptor();
    const google::protobuf::FieldDescriptor* f = nullptr;
    for (absl::string_view part : absl::StrSplit(path, '.')) {
      ASSERT_NE(d, nullptr) << path;
      f = d->FindFieldByName(std::string(part));
      ASSERT_NE(f, nullptr) << path;
      d = f->message_type();
    }
    EXPECT_EQ(f->message_type(), nullptr) << path;
    EXPECT_TRUE(paths.insert(path).second) << path;
  }
  for (const auto& [alias, canonical] : FlagAliasNames()) {
    EXPECT_FALSE(FieldPathOfFlag(canonical).empty()) << alias;
  }
}

// After the parse test above: the command line now holds --config, --lr and
// --batch_size.
TEST(FlagsTest, FieldsChosenInTheFileOrOnTheCommandLine) {
  absl::FlagSaver saver;
  const std::string path = TempPath("chosen.textproto");
  WriteFile(path, "model: \"mlp\"\nsteps: 0\ndata { seq_len: 9 }\n");
  const std::string config_arg = "--config=" + path;
  std::vector<char*> argv = {const_cast<char*>("flags_test"),
                             const_cast<char*>(config_arg.c_str()),
                             const_cast<char*>("--fp16")};
  absl::ParseCommandLine(static_cast<int>(argv.size()), argv.data());
  EXPECT_TRUE(FieldChosenByUser("model"));
  EXPECT_TRUE(FieldChosenByUser("steps"));  // even at 0
  EXPECT_TRUE(FieldChosenByUser("seq_len"));
  EXPECT_TRUE(FieldChosenByUser("precision"));  // through --fp16
  EXPECT_FALSE(FieldChosenByUser("dataset"));
  EXPECT_FALSE(FieldChosenByUser("lr"));
}

}  // namespace
}  // namespace trainer
}  // namespace mnt
