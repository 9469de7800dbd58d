// The CPU backend's thread governor changes the team a step runs on while a
// run goes on (plugins/backends/cpu/thread_governor.h); that must never
// change the bits. Each model and precision trains once with a fixed pool
// of 4 threads and once with the same pool but steps cycling through teams
// of 1, 4, 2 and 3 (the backend's step_teams option): every step's loss and
// every checkpointed byte must be equal. Before GEMMs were cut into tiles
// by the pool (plugins/backends/cpu/gemm_tiles.h), oneDNN split the K sum
// of small products by the team, and fp16 gpt2-tiny's losses differed
// between 1 and 2 threads within 40 steps.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "tests/integration/trained_run.h"

namespace mnt::trainer {
namespace {

using testing::RunfilesRoot;
using testing::TempDir;
using testing::TestConfig;
using testing::TrainAndCheckpoint;
using testing::TrainedRun;

constexpr char kFixed[] = "threads=4";
constexpr char kCycling[] = "threads=4,step_teams=1:4:2:3";

class DigitsTeamTest
    : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(DigitsTeamTest, TheTeamOfEachStepDoesNotChangeTheBits) {
  const auto& [model, precision] = GetParam();
  TrainConfig c = TestConfig(precision);
  c.set_model(model);
  c.set_steps(12);
  c.set_eval_every(6);
  const std::string tag = model + "_" + precision;
  c.set_backend_options(kFixed);
  const TrainedRun fixed = TrainAndCheckpoint(c, "fixed_" + tag + ".ckpt");
  c.set_backend_options(kCycling);
  const TrainedRun cycling = TrainAndCheckpoint(c, "cycling_" + tag + ".ckpt");
  ASSERT_EQ(fixed.losses.size(), 12u);
  ASSERT_EQ(cycling.losses.size(), fixed.losses.size());
  for (size_t i = 0; i < fixed.losses.size(); ++i) {
    EXPECT_TRUE(std::isfinite(fixed.losses[i]));
    EXPECT_EQ(cycling.losses[i], fixed.losses[i]) << "step " << i + 1;
  }
  EXPECT_EQ(cycling.eval_loss, fixed.eval_loss);
  ASSERT_GT(fixed.checkpoint.tensors_size(), 0);
  ASSERT_EQ(cycling.checkpoint.tensors_size(), fixed.checkpoint.tensors_size());
  for (int i = 0; i < fixed.checkpoint.tensors_size(); ++i) {
    EXPECT_TRUE(cycling.checkpoint.tensors(i).data() == fixed.checkpoint.tensors(i).data())
        << "tensor " << fixed.checkpoint.tensors(i).name() << " differs";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Models, DigitsTeamTest,
    ::testing::Combine(::testing::Values("mlp", "cnn"),
                       ::testing::Values("fp32", "tf32", "bf16", "fp16")));

// gpt2-tiny through the train binary (attention, layer norm, fused GEMM
// epilogues): the per-step losses of its JSONL, as written (17 digits).
std::vector<std::string> GptLosses(const std::string& precision, const std::string& options) {
  const std::string dir = TempDir() + "/gpt_" + precision + "_" + std::to_string(options.size());
  const std::string text = testing::WriteNumberedText(400);
  const std::string jsonl = dir + ".jsonl";
  const std::string cmd =
      RunfilesRoot() + "/mantissa/trainer/cli/train --model=gpt2 "
      "--model_options=n_layer=2,n_head=4,d_model=64,seq_len=64 --dataset=text --text_path=" +
      text + " --cache_dir=" + TempDir() + "/cache --steps=10 --log_every=1 --eval_every=0 "
      "--progress=none --checkpoint_dir=none --precision=" + precision +
      " --backend_options=" + options + " --metrics_jsonl=" + jsonl + " > " + dir +
      ".log 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::vector<std::string> losses;
  std::ifstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"train\"") == std::string::npos) continue;
    const size_t at = line.find("\"loss\":");
    if (at != std::string::npos) losses.push_back(line.substr(at, line.find(',', at) - at));
  }
  return losses;
}

class GptTeamTest : public ::testing::TestWithParam<std::string> {};

TEST_P(GptTeamTest, TheTeamOfEachStepDoesNotChangeTheLosses) {
  const std::vector<std::string> fixed = GptLosses(GetParam(), kFixed);
  const std::vector<std::string> cycling = GptLosses(GetParam(), kCycling);
  ASSERT_EQ(fixed.size(), 10u);
  EXPECT_EQ(cycling, fixed);
  for (const std::string& l : fixed) EXPECT_EQ(l.find("nan"), std::string::npos) << l;
}

INSTANTIATE_TEST_SUITE_P(Precisions, GptTeamTest,
                         ::testing::Values("fp32", "bf16", "fp16"));

}  // namespace
}  // namespace mnt::trainer
