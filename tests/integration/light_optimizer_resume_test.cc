// --optimizer=adamw8bit and --optimizer=adafactor (issue #39) resume bit for
// bit on every model in every CPU precision: a run of 6 steps that saves at
// step 3 and one resumed from that checkpoint end with the same checkpoint
// (every tensor's bytes: weights, 8-bit codes and block absmax, Adafactor's
// rows and columns, loss scaler) and the same losses for steps 4-6. Through
// the train binary, as a user resumes. fp8 runs the models' GEMMs as its
// fallback does (bf16 where a model has no FP8 GEMMs).
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

using testing::RunfilesRoot;
using testing::RunTrainBinary;
using testing::TempDir;

// The "loss" of every train line of a JSONL, as written (17 digits).
std::vector<std::string> Losses(const std::string& jsonl) {
  std::vector<std::string> losses;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"train\"") == std::string::npos) continue;
    const size_t at = line.find("\"loss\":");
    if (at != std::string::npos) losses.push_back(line.substr(at, line.find(',', at) - at));
  }
  return losses;
}

std::string ModelFlags(const std::string& model) {
  if (model == "gpt2") {
    const std::string text = testing::WriteNumberedText(300);
    return "--model=gpt2 --model_options=n_layer=1,n_head=2,d_model=64,seq_len=32 "
           "--seq_len=32 --dataset=text --text_path=" + text + " --batch_size=4";
  }
  return "--model=" + model + " --dataset=digits --batch_size=16";
}

// Each optimizer with options that reach its state's every kind: adamw8bit
// with both 8-bit and small fp32 tensors (on the CNN from 2048 elements); Adafactor with a first moment on
// the CNN, the relative step on the GPT.
std::string OptimizerFlags(const std::string& optimizer, const std::string& model) {
  // The CNN's largest convolution has 2304 elements: 8 bits from 2048.
  if (optimizer == "adamw8bit" && model == "cnn") {
    return "--optimizer=adamw8bit --optimizer_options=min_8bit_size=2048";
  }
  if (optimizer == "adamw8bit") return "--optimizer=adamw8bit";
  if (model == "cnn") return "--optimizer=adafactor --optimizer_options=beta1=0.9,scale_parameter=1";
  if (model == "gpt2") return "--optimizer=adafactor --optimizer_options=relative_step=1";
  return "--optimizer=adafactor";
}

class LightOptimizerResumeTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string, std::string>> {};

TEST_P(LightOptimizerResumeTest, ResumedRunEndsWithTheUninterruptedRunsBytes) {
  const auto& [optimizer, model, precision] = GetParam();
  const std::string name = optimizer + "_" + model + "_" + precision;
  const std::string base = TempDir() + "/" + name;
  const std::string flags = ModelFlags(model) + " " + OptimizerFlags(optimizer, model) +
                            " --precision=" + precision +
                            " --device=cpu --steps=6 --checkpoint_every=3 --eval_every=0 "
                            "--log_every=1 --progress=none --cache_dir=" +
                            TempDir() + "/cache";
  const auto full = RunTrainBinary(base + "_full", "", flags + " --checkpoint_dir=" + base + "_full");
  ASSERT_EQ(full.exit_code, 0) << full.output;
  const auto resumed = RunTrainBinary(
      base + "_resumed", "",
      flags + " --checkpoint_dir=" + base + "_resumed --resume_from=" + base + "_full/checkpoint-3");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;

  // The run report names the optimizer beside its bytes per parameter.
  EXPECT_NE(full.output.find("optimizer state "), std::string::npos) << full.output;
  EXPECT_NE(full.output.find(" (" + optimizer + "); total "), std::string::npos) << full.output;
  EXPECT_NE(full.jsonl.find("\"optimizer\":\"" + optimizer + "\""), std::string::npos);
  const std::vector<std::string> all = Losses(full.jsonl);
  ASSERT_EQ(all.size(), 6u) << full.jsonl;
  const std::vector<std::string> tail = Losses(resumed.jsonl);
  EXPECT_EQ(tail, std::vector<std::string>(all.begin() + 3, all.end()));
  for (const std::string& l : all) EXPECT_EQ(l.find("nan"), std::string::npos) << l;

  auto a = ReadCheckpoint(base + "_full/checkpoint-6");
  auto b = ReadCheckpoint(base + "_resumed/checkpoint-6");
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->tensors_size(), b->tensors_size());
  int state_tensors = 0;
  for (int i = 0; i < a->tensors_size(); ++i) {
    const TensorData& x = a->tensors(i);
    const TensorData& y = b->tensors(i);
    EXPECT_EQ(x.name(), y.name());
    EXPECT_EQ(x.dtype(), y.dtype()) << x.name();
    // Exact bytes: the same bits, not merely close.
    EXPECT_TRUE(x.data() == y.data()) << x.name();
    if (x.name().rfind("opt.", 0) == 0) ++state_tensors;
  }
  EXPECT_GT(state_tensors, 0);
  // The state the optimizer keeps, by name: 8-bit codes and their absmax
  // (and fp32 moments for small tensors), or Adafactor's factored rows.
  auto has = [&](const std::string& prefix) {
    for (const TensorData& t : a->tensors()) {
      if (t.name().rfind(prefix, 0) == 0) return true;
    }
    return false;
  };
  if (optimizer == "adamw8bit") {
    EXPECT_TRUE(has("opt.m8/") && has("opt.v8_absmax/") && has("opt.state1/"));
  } else {
    EXPECT_TRUE(has("opt.row/") && has("opt.col/") && has("opt.v/"));
    EXPECT_EQ(has("opt.m/"), model == "cnn");
  }
  EXPECT_EQ(a->loss_scale(), b->loss_scale());
  EXPECT_EQ(a->loss_scale_skipped_steps(), b->loss_scale_skipped_steps());
}

INSTANTIATE_TEST_SUITE_P(
    EveryModelAndPrecision, LightOptimizerResumeTest,
    ::testing::Combine(::testing::Values("adamw8bit", "adafactor"),
                       ::testing::Values("mlp", "cnn", "gpt2"),
                       ::testing::Values("fp32", "tf32", "bf16", "fp16", "fp8")),
    [](const auto& info) {
      return std::get<0>(info.param) + "_" + std::get<1>(info.param) + "_" +
             std::get<2>(info.param);
    });

}  // namespace
}  // namespace mnt::trainer
