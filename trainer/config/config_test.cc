#include "trainer/config/config.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

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

TEST(DefaultTrainConfigTest, HasDocumentedValuesAndValidates) {
  const TrainConfig c = DefaultTrainConfig();
  EXPECT_TRUE(ValidateTrainConfig(c).ok()) << ValidateTrainConfig(c);
  EXPECT_EQ(c.model(), "gpt2");
  EXPECT_EQ(c.precision(), "auto");
  EXPECT_EQ(c.device(), "auto");
  EXPECT_EQ(c.data().dataset(), "fortunes");
  EXPECT_FALSE(c.gradient_checkpointing());
  EXPECT_EQ(c.data().seq_len(), 64);
  EXPECT_DOUBLE_EQ(c.data().validation_fraction(), 0.2);
  EXPECT_EQ(c.batch_size(), 64);
  EXPECT_EQ(c.grad_accum_steps(), 1);
  EXPECT_EQ(c.steps(), 300);
  EXPECT_EQ(c.optimizer().name(), "adamw");
  EXPECT_DOUBLE_EQ(c.optimizer().lr(), 1e-3);
  EXPECT_DOUBLE_EQ(c.optimizer().weight_decay(), 0.01);
  EXPECT_DOUBLE_EQ(c.optimizer().beta1(), 0.9);
  EXPECT_DOUBLE_EQ(c.optimizer().beta2(), 0.999);
  EXPECT_DOUBLE_EQ(c.optimizer().eps(), 1e-8);
  EXPECT_DOUBLE_EQ(c.optimizer().momentum(), 0.9);
  EXPECT_EQ(c.schedule().kind(), "cosine");
  EXPECT_EQ(c.schedule().warmup_steps(), 30);
  EXPECT_DOUBLE_EQ(c.schedule().min_lr_ratio(), 0.1);
  EXPECT_DOUBLE_EQ(c.clip_grad_norm(), 1.0);
  EXPECT_EQ(c.eval_every(), 100);
  EXPECT_EQ(c.log_every(), 10);
  EXPECT_EQ(c.seed(), 1234u);
  EXPECT_EQ(c.progress(), "auto");
  EXPECT_EQ(c.loss_scale().mode(), "");
}

struct BadCase {
  std::string name;
  std::function<void(TrainConfig*)> mutate;
  std::string expected_message;  // the whole message, so wording is pinned
};

std::vector<BadCase> BadCases() {
  return {
      {"empty model", [](TrainConfig* c) { c->set_model(""); },
       "--model= is invalid: expected a model plugin name such as mlp"},
      {"model with slash", [](TrainConfig* c) { c->set_model("../x"); },
       "--model=../x is invalid: expected a plugin name of letters, digits and _"},
      {"precision", [](TrainConfig* c) { c->set_precision("fp-8"); },
       "--precision=fp-8 is invalid: expected one of fp32, tf32, bf16, fp16, fp8, auto, or the name of a plugin"},
      {"device", [](TrainConfig* c) { c->set_device("t.p.u"); },
       "--device=t.p.u is invalid: expected one of cpu, cuda, auto, or the name of a plugin"},
      {"dataset", [](TrainConfig* c) { c->mutable_data()->set_dataset("cifar"); },
       "--dataset=cifar is invalid: expected one of fortunes, shards, text, digits, idx"},
      {"idx without files", [](TrainConfig* c) { c->mutable_data()->set_dataset("idx"); },
       "--dataset=idx needs --train_images and --train_labels (IDX file paths)"},
      {"idx test images without labels",
       [](TrainConfig* c) {
         DataConfig* d = c->mutable_data();
         d->set_dataset("idx");
         d->set_train_images("a");
         d->set_train_labels("b");
         d->set_test_images("c");
       },
       "--test_images and --test_labels must be given together (or neither, to "
       "split --validation_fraction off the training set)"},
      {"idx with test set, fraction 1",
       [](TrainConfig* c) {
         DataConfig* d = c->mutable_data();
         d->set_dataset("idx");
         d->set_train_images("a");
         d->set_train_labels("b");
         d->set_test_images("c");
         d->set_test_labels("d");
         d->set_validation_fraction(1);
       },
       "--validation_fraction=1 is invalid: expected a finite value >= 0 and < 1"},
      {"text without path", [](TrainConfig* c) { c->mutable_data()->set_dataset("text"); },
       "--dataset=text needs --text_path (a plain text file)"},
      {"text seq_len 0",
       [](TrainConfig* c) {
         c->mutable_data()->set_dataset("text");
         c->mutable_data()->set_text_path("t.txt");
         c->mutable_data()->set_seq_len(0);
       },
       "--seq_len=0 is invalid: expected an integer from 1 to 16777216"},
      {"split fraction 0", [](TrainConfig* c) { c->mutable_data()->set_validation_fraction(0); },
       "--validation_fraction=0 is invalid: expected a finite value > 0 and < 1"},
      {"split fraction NaN",
       [](TrainConfig* c) { c->mutable_data()->set_validation_fraction(std::nan("")); },
       "--validation_fraction=nan is invalid: expected a finite value > 0 and < 1"},
      {"batch_size", [](TrainConfig* c) { c->set_batch_size(0); },
       "--batch_size=0 is invalid: expected an integer from 1 to 16777216"},
      {"grad_accum_steps", [](TrainConfig* c) { c->set_grad_accum_steps(-2); },
       "--grad_accum_steps=-2 is invalid: expected an integer from 1 to 16777216"},
      {"steps", [](TrainConfig* c) { c->set_steps(0); },
       "--steps=0 is invalid: expected an integer >= 1"},
      {"optimizer", [](TrainConfig* c) { c->mutable_optimizer()->set_name("lion"); },
       "--optimizer=lion is invalid: expected one of adamw, adam, sgd, adamw8bit, adafactor"},
      {"optimizer_options for adamw",
       [](TrainConfig* c) { c->mutable_optimizer()->set_optimizer_options("beta1=0.9"); },
       "--optimizer_options='beta1=0.9': --optimizer=adamw takes none (its settings are flags: "
       "--lr, --beta1, ...; options are for adafactor and adamw8bit)"},
      {"adafactor with zero_stage 1",
       [](TrainConfig* c) {
         c->mutable_optimizer()->set_name("adafactor");
         c->set_zero_stage(1);
       },
       "--optimizer=adafactor with --zero_stage=1: Adafactor's row and column means and its "
       "update clipping span whole tensors, which ZeRO-1 cuts into ranks' pieces; use "
       "--zero_stage=0 (or --optimizer=adamw8bit, whose 8-bit state ZeRO-1 shards)"},
      {"lr 0", [](TrainConfig* c) { c->mutable_optimizer()->set_lr(0); },
       "--lr=0 is invalid: expected a finite value > 0"},
      {"lr inf", [](TrainConfig* c) { c->mutable_optimizer()->set_lr(HUGE_VAL); },
       "--lr=inf is invalid: expected a finite value > 0"},
      {"weight_decay", [](TrainConfig* c) { c->mutable_optimizer()->set_weight_decay(-0.1); },
       "--weight_decay=-0.1 is invalid: expected a finite value >= 0"},
      {"beta1", [](TrainConfig* c) { c->mutable_optimizer()->set_beta1(1); },
       "--beta1=1 is invalid: expected a finite value >= 0 and < 1"},
      {"beta2", [](TrainConfig* c) { c->mutable_optimizer()->set_beta2(-0.5); },
       "--beta2=-0.5 is invalid: expected a finite value >= 0 and < 1"},
      {"eps", [](TrainConfig* c) { c->mutable_optimizer()->set_eps(0); },
       "--eps=0 is invalid: expected a finite value > 0"},
      {"momentum", [](TrainConfig* c) { c->mutable_optimizer()->set_momentum(1.5); },
       "--momentum=1.5 is invalid: expected a finite value >= 0 and < 1"},
      {"nesterov with adamw", [](TrainConfig* c) { c->mutable_optimizer()->set_nesterov(true); },
       "--nesterov=true is invalid with --optimizer=adamw --momentum=0.9: expected "
       "--optimizer=sgd with --momentum > 0"},
      {"nesterov without momentum",
       [](TrainConfig* c) {
         c->mutable_optimizer()->set_name("sgd");
         c->mutable_optimizer()->set_momentum(0);
         c->mutable_optimizer()->set_nesterov(true);
       },
       "--nesterov=true is invalid with --optimizer=sgd --momentum=0: expected "
       "--optimizer=sgd with --momentum > 0"},
      {"schedule", [](TrainConfig* c) { c->mutable_schedule()->set_kind("step"); },
       "--schedule=step is invalid: expected one of cosine, linear, constant"},
      {"warmup_ratio", [](TrainConfig* c) { c->mutable_schedule()->set_warmup_ratio(1.0); },
       "--warmup_ratio=1 is invalid: expected a finite value >= 0 and < 1"},
      {"warmup_steps", [](TrainConfig* c) { c->mutable_schedule()->set_warmup_steps(-1); },
       "--warmup_steps=-1 is invalid: expected an integer >= 0"},
      {"min_lr_ratio", [](TrainConfig* c) { c->mutable_schedule()->set_min_lr_ratio(1.5); },
       "--min_lr_ratio=1.5 is invalid: expected a finite value >= 0 and <= 1"},
      {"clip_grad_norm", [](TrainConfig* c) { c->set_clip_grad_norm(-1); },
       "--clip_grad_norm=-1 is invalid: expected a finite value >= 0"},
      {"loss_scale_mode", [](TrainConfig* c) { c->mutable_loss_scale()->set_mode("auto"); },
       "--loss_scale_mode=auto is invalid: expected one of \"\", dynamic, static, none"},
      {"init_scale", [](TrainConfig* c) { c->mutable_loss_scale()->set_init_scale(-8); },
       "--init_scale=-8 is invalid: expected a finite value >= 0"},
      {"growth_factor", [](TrainConfig* c) { c->mutable_loss_scale()->set_growth_factor(0.5); },
       "--growth_factor=0.5 is invalid: expected 0 (plugin default) or a finite value > 1"},
      {"backoff_factor", [](TrainConfig* c) { c->mutable_loss_scale()->set_backoff_factor(2); },
       "--backoff_factor=2 is invalid: expected 0 (plugin default) or a value > 0 and < 1"},
      {"growth_interval", [](TrainConfig* c) { c->mutable_loss_scale()->set_growth_interval(-5); },
       "--growth_interval=-5 is invalid: expected an integer >= 0"},
      {"eval_every", [](TrainConfig* c) { c->set_eval_every(-1); },
       "--eval_every=-1 is invalid: expected an integer >= 0"},
      {"eval_batches", [](TrainConfig* c) { c->set_eval_batches(-1); },
       "--eval_batches=-1 is invalid: expected an integer >= 0"},
      {"log_every", [](TrainConfig* c) { c->set_log_every(-1); },
       "--log_every=-1 is invalid: expected an integer >= 0"},
      {"checkpoint_every", [](TrainConfig* c) { c->set_checkpoint_every(-3); },
       "--checkpoint_every=-3 is invalid: expected an integer >= 0"},
      {"progress", [](TrainConfig* c) { c->set_progress("fancy"); },
       "--progress=fancy is invalid: expected one of auto, bar, plain, none"},
      {"device_loss_scaling", [](TrainConfig* c) { c->set_device_loss_scaling("yes"); },
       "--device_loss_scaling=yes is invalid: expected one of auto, on, off"},
      {"save_total_limit", [](TrainConfig* c) { c->set_save_total_limit(-1); },
       "--save_total_limit=-1 is invalid: expected an integer >= 0"},
  };
}

TEST(ValidateTrainConfigTest, EveryBadValueGetsItsOwnOneLineMessage) {
  for (const BadCase& bad : BadCases()) {
    SCOPED_TRACE(bad.name);
    TrainConfig c = DefaultTrainConfig();
    bad.mutate(&c);
    const absl::Status s = ValidateTrainConfig(c);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), bad.expected_message);
    EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos);
  }
}

TEST(ValidateTrainConfigTest, AcceptsBoundaryAndAlternativeValues) {
  TrainConfig c = DefaultTrainConfig();
  c.set_precision("bf16");
  c.set_device("cpu");
  c.set_clip_grad_norm(0);
  c.set_eval_every(0);
  c.mutable_optimizer()->set_name("sgd");
  c.mutable_optimizer()->set_nesterov(true);
  c.mutable_optimizer()->set_weight_decay(0);
  c.mutable_schedule()->set_kind("constant");
  c.mutable_schedule()->set_min_lr_ratio(1);
  c.mutable_loss_scale()->set_mode("dynamic");
  c.mutable_loss_scale()->set_init_scale(65536);
  c.mutable_loss_scale()->set_growth_factor(2);
  c.mutable_loss_scale()->set_backoff_factor(0.5);
  c.mutable_loss_scale()->set_growth_interval(2000);
  c.set_checkpoint_dir("/tmp/ckpt");
  c.set_resume(true);
  c.mutable_data()->set_dataset("text");
  c.mutable_data()->set_text_path("corpus.txt");
  EXPECT_TRUE(ValidateTrainConfig(c).ok()) << ValidateTrainConfig(c);

  c.mutable_data()->set_dataset("idx");
  c.mutable_data()->set_train_images("i");
  c.mutable_data()->set_train_labels("l");
  c.mutable_data()->set_test_images("ti");
  c.mutable_data()->set_test_labels("tl");
  c.mutable_data()->set_validation_fraction(0);  // fine: there is a test set
  EXPECT_TRUE(ValidateTrainConfig(c).ok()) << ValidateTrainConfig(c);
}

TEST(LoadTextConfigTest, FileOverridesOnlyTheFieldsItNames) {
  const std::string path = TempPath("partial.textproto");
  WriteFile(path,
            "# comment\n"
            "precision: \"bf16\"\n"
            "steps: 25\n"
            "clip_grad_norm: 0\n"
            "optimizer { lr: 0.05 }\n");
  absl::StatusOr<TrainConfig> c = LoadTextConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->precision(), "bf16");
  EXPECT_EQ(c->steps(), 25);
  EXPECT_EQ(c->clip_grad_norm(), 0.0);  // explicit zero beats the default 1.0
  EXPECT_DOUBLE_EQ(c->optimizer().lr(), 0.05);
  // Untouched fields keep the defaults, also inside a message the file names.
  EXPECT_EQ(c->optimizer().name(), "adamw");
  EXPECT_DOUBLE_EQ(c->optimizer().beta2(), 0.999);
  EXPECT_EQ(c->batch_size(), 64);
}

TEST(LoadTextConfigTest, UnknownFieldNamesFieldAndLine) {
  const std::string path = TempPath("unknown.textproto");
  WriteFile(path, "steps: 3\nlearning_rate: 0.1\n");
  absl::StatusOr<TrainConfig> c = LoadTextConfig(path);
  ASSERT_FALSE(c.ok());
  const std::string msg(c.status().message());
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("learning_rate"), std::string::npos) << msg;
}

TEST(LoadTextConfigTest, TypoGetsASuggestionInItsOwnMessage) {
  TrainConfig c;
  absl::Status s = MergeTextConfig("stpes: 3\n", "typo", &c);
  EXPECT_EQ(s.message(),
            "typo:1:6: Message type \"mantissa.TrainConfig\" has no field named \"stpes\". "
            "(did you mean 'steps'?)");
  // Nested messages use their own fields.
  s = MergeTextConfig("optimizer { betta1: 0.9 }\n", "nested", &c);
  EXPECT_NE(s.message().find("(did you mean 'beta1'?)"), std::string::npos) << s.message();
  // Not a typo of anything: no suggestion.
  s = MergeTextConfig("completely_unrelated_name: 1\n", "other", &c);
  EXPECT_EQ(s.message().find("did you mean"), std::string::npos) << s.message();
}

TEST(LoadTextConfigTest, TypeErrorNamesLine) {
  const std::string path = TempPath("badtype.textproto");
  WriteFile(path, "model: \"mlp\"\n\nbatch_size: \"many\"\n");
  absl::StatusOr<TrainConfig> c = LoadTextConfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(std::string(c.status().message()).find(path + ":3:"), std::string::npos)
      << c.status();
}

TEST(LoadTextConfigTest, InvalidValueInFileIsReportedWithPath) {
  const std::string path = TempPath("invalid.textproto");
  WriteFile(path, "precision: \"fp 8\"\n");
  absl::StatusOr<TrainConfig> c = LoadTextConfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(),
            path + ": --precision=fp 8 is invalid: expected one of fp32, tf32, bf16, fp16, fp8, auto, or the name of a plugin");
}

TEST(LoadTextConfigTest, MissingFileIsNotFoundNamingPath) {
  const std::string path = TempPath("does_not_exist.textproto");
  absl::StatusOr<TrainConfig> c = LoadTextConfig(path);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(c.status().message()).find(path), std::string::npos);
}

TEST(MergeTextConfigTest, FailedParseLeavesConfigUntouched) {
  TrainConfig c = DefaultTrainConfig();
  const TrainConfig before = c;
  EXPECT_FALSE(MergeTextConfig("steps: 5\nbogus: 1\n", "inline", &c).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(c, before));
}

TEST(ConfigToTextTest, RoundTripsRandomConfigsIncludingZeros) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  for (int trial = 0; trial < 20; ++trial) {
    TrainConfig c = DefaultTrainConfig();
    c.set_model_options("hidden=" + std::to_string(rng() % 512) + ",activation=\"relu\"\n");
    c.set_steps(1 + rng() % 100000);
    c.set_seed(rng());  // full 64-bit range
    c.mutable_optimizer()->set_lr(unit(rng) * 1e-2 + 1e-12);  // non-short decimals
    c.mutable_optimizer()->set_beta2(unit(rng));
    c.mutable_data()->set_cache_dir("/tmp/dir with spaces/\xc3\xa9");
    // Zeros that differ from the defaults must survive being read on top of them.
    if (trial % 2) {
      c.set_clip_grad_norm(0);
      c.set_eval_every(0);
      c.set_log_every(0);
      c.mutable_optimizer()->set_weight_decay(0);
      c.mutable_schedule()->set_warmup_steps(0);
    }
    TrainConfig back = DefaultTrainConfig();
    ASSERT_TRUE(MergeTextConfig(ConfigToText(c), "round trip", &back).ok());
    std::string diff;
    MessageDifferencer differencer;
    differencer.ReportDifferencesToString(&diff);
    EXPECT_TRUE(differencer.Compare(c, back)) << diff << "\n" << ConfigToText(c);
  }
}

}  // namespace
}  // namespace trainer
}  // namespace mnt
