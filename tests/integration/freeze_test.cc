// --freeze through the real binaries: frozen parameters keep their initial
// bits through training (MLP in fp32 and bf16; gpt2-tiny with its
// embeddings and layer norms frozen), take no gradient, master or optimizer
// state (the run's memory against //tools/memory:estimate --freeze, byte for
// byte, and against the unfrozen run), are not in the checkpoint's optimizer
// state, resume bit for bit, and bad patterns are one line.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

using testing::RunfilesRoot;
using testing::TempDir;
using testing::ReadWholeFile;
using Result = testing::SplitRun;

std::string TextFile() { return testing::WriteNumberedText(400); }

const std::string kGpt = "--model=gpt2 --model_options=n_layer=2,n_head=4,d_model=64,seq_len=64";

Result Train(const std::string& model_args, const std::string& args) {
  return testing::RunFromRunfiles("trainer/cli/train", absl::StrCat("--device=cpu --cache_dir=", TempDir(),
                                               "/cache --progress=plain --eval_every=0 ",
                                               model_args, " ", args));
}

std::map<std::string, std::string> Tensors(const std::string& path) {
  auto ckpt = ReadCheckpoint(path);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  std::map<std::string, std::string> out;
  if (!ckpt.ok()) return out;
  for (const auto& t : ckpt->tensors()) out[t.name()] = t.data();
  return out;
}

// The peak of `category` in the JSONL summary's memory_bytes.
int64_t MeasuredPeak(const std::string& jsonl, const std::string& category) {
  const size_t summary = jsonl.find("\"type\":\"summary\"");
  const size_t memory = jsonl.find("\"memory_bytes\":", summary);
  const size_t at = jsonl.find("\"" + category + "\":{", memory);
  const size_t peak = jsonl.find("\"peak\":", at);
  if (summary == std::string::npos || memory == std::string::npos ||
      at == std::string::npos || peak == std::string::npos)
    return -1;
  return std::stoll(jsonl.substr(peak + 7));
}

std::map<std::string, int64_t> EstimateRows(const std::string& model_args,
                                            const std::string& precision, int64_t batch,
                                            const std::string& freeze) {
  const Result r = testing::RunFromRunfiles("tools/memory/estimate",
                       absl::StrCat(model_args, " --format=csv --precisions=", precision,
                                    " --batch_sizes=", batch, " --freeze=", freeze));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, int64_t> rows;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f.size() == 5 && f[2] == std::to_string(batch)) rows[f[3]] = std::stoll(f[4]);
  }
  return rows;
}

struct Case {
  std::string name, model_args, train_args, freeze;
  std::vector<std::string> frozen, trained;  // parameter names
  int64_t batch;
};

std::vector<Case> Cases() {
  return {
      {"mlp", "--model=mlp", "--model=mlp --dataset=digits", "layer0.*",
       {"layer0.weight", "layer0.bias"}, {"layer1.weight"}, 32},
      {"gpt2", kGpt, kGpt + " --dataset=text --text_path=" + TextFile(), "wte,wpe,ln*",
       {"wte", "wpe", "ln1w", "ln1b", "lnfw"}, {"qkvw", "fcw", "fcprojw"}, 4},
  };
}

TEST(FreezeTest, FrozenWeightsKeepTheirBitsAndCostNothing) {
  for (const Case& c : Cases()) {
    for (const std::string precision : {"fp32", "bf16"}) {
      SCOPED_TRACE(c.name + " " + precision);
      const std::string base = absl::StrCat(TempDir(), "/", c.name, "_", precision);
      const std::string common =
          absl::StrCat("--precision=", precision, " --batch_size=", c.batch, " --seed=7 ");
      // Step 1's checkpoint holds the initial values of frozen parameters
      // (nothing trains them); step 6's must hold the same bits.
      const Result one = Train(c.train_args, common + "--steps=1 --freeze=" + c.freeze +
                                                 " --checkpoint_dir=" + base + "_1");
      ASSERT_EQ(one.exit_code, 0) << one.err;
      const Result six =
          Train(c.train_args, common + "--steps=6 --lr=0.01 --freeze=" + c.freeze +
                                  " --checkpoint_dir=" + base + "_6 --metrics_jsonl=" + base +
                                  "_6.jsonl");
      ASSERT_EQ(six.exit_code, 0) << six.err;
      const auto t1 = Tensors(base + "_1/latest"), t6 = Tensors(base + "_6/latest");
      for (const std::string& name : c.frozen) {
        ASSERT_EQ(t1.count(name), 1u) << name;
        EXPECT_EQ(t1.at(name), t6.at(name)) << name << " changed";
        EXPECT_EQ(t6.count("opt.state1/" + name), 0u) << name << " has optimizer state";
      }
      for (const std::string& name : c.trained) {
        EXPECT_NE(t1.at(name), t6.at(name)) << name << " did not train";
        EXPECT_EQ(t6.count("opt.state1/" + name), 1u) << name;
      }
      // The memory: the estimator's with --freeze, byte for byte, and less
      // than without it.
      const std::string jsonl = ReadWholeFile(base + "_6.jsonl");
      const auto est = EstimateRows(c.model_args, precision, c.batch, c.freeze);
      const auto full = EstimateRows(c.model_args, precision, c.batch, "");
      EXPECT_EQ(MeasuredPeak(jsonl, "weights"), est.at("weights"));
      EXPECT_EQ(MeasuredPeak(jsonl, "master_weights"), est.at("master_weights"));
      EXPECT_EQ(MeasuredPeak(jsonl, "gradients"),
                est.at("gradients") + est.at("master_gradients"));
      EXPECT_EQ(MeasuredPeak(jsonl, "optimizer_state"), est.at("optimizer_state"));
      EXPECT_EQ(MeasuredPeak(jsonl, "activations"), est.at("activations"));
      EXPECT_EQ(MeasuredPeak(jsonl, "workspace"), est.at("workspace"));
      EXPECT_LT(est.at("gradients"), full.at("gradients"));
      EXPECT_LT(est.at("optimizer_state"), full.at("optimizer_state"));
      EXPECT_EQ(est.at("weights"), full.at("weights"));
      // The dry run says it.
      const Result dry = Train(c.train_args, common + "--freeze=" + c.freeze + " --dry_run");
      ASSERT_EQ(dry.exit_code, 0) << dry.err;
      EXPECT_TRUE(absl::StrContains(dry.out, "of them frozen")) << dry.out;
    }
  }
}

TEST(FreezeTest, ResumesBitForBit) {
  const Case c = Cases()[1];
  const std::string common = "--precision=bf16 --batch_size=4 --seed=3 --lr=0.01 --freeze=" +
                             c.freeze + " ";
  const std::string whole = TempDir() + "/resume_whole", part = TempDir() + "/resume_part";
  ASSERT_EQ(Train(c.train_args, common + "--steps=6 --checkpoint_dir=" + whole).exit_code, 0);
  ASSERT_EQ(Train(c.train_args, common + "--steps=6 --checkpoint_every=3 "
                                         "--save_total_limit=0 --checkpoint_dir=" + part)
                .exit_code,
            0);
  // Resume part's step-3 checkpoint into a fresh folder and go on to 6.
  const std::string resumed = TempDir() + "/resume_again";
  const Result r = Train(c.train_args, common + "--steps=6 --resume_from=" + part +
                                           "/checkpoint-3 --checkpoint_dir=" + resumed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = Tensors(whole + "/latest"), b = Tensors(resumed + "/latest");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.size(), b.size());
  for (const auto& [name, bytes] : a) EXPECT_EQ(b.at(name), bytes) << name;
}

TEST(FreezeTest, BadPatternsAreOneLine) {
  for (const auto& [freeze, needle] : std::vector<std::pair<std::string, std::string>>{
           {"nosuch*", "'nosuch*' matches no parameter of the model (its parameters: layer0"},
           {"'*'", "--freeze leaves no parameter to train"}}) {
    const Result r = Train("--model=mlp --dataset=digits", "--steps=1 --freeze=" + freeze +
                                                               " --checkpoint_dir=none");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(absl::StartsWith(r.err, "mantissa: error: ")) << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, needle)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace mnt::trainer
