// --lora through the real binaries (train, //tools/memory:estimate, mpirun):
// LoRA adapters on gpt2-tiny's four block GEMMs and on the MLP's layers in
// every CPU precision. The base weights keep their initial bits (every
// parameter but the adapters is frozen), both adapter matrices train and
// only they have optimizer state, the loss goes down, the run's memory is
// the estimator's byte for byte and below full fine-tuning's, a resumed run
// lands on the same bits, two data-parallel ranks land on one rank's
// result, and bad values are one line that leaves nothing on disk.
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/integration/mpi_launch.h"
#include "tests/integration/test_env.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::trainer {
namespace {

using testing::RunfilesRoot;
using testing::TempDir;
using testing::ReadWholeFile;
using Result = testing::SplitRun;

std::string TextFile() { return testing::WriteNumberedText(400); }

const char kGptOptions[] = "n_layer=2,n_head=4,d_model=64,seq_len=64";

Result Train(const std::string& model_args, const std::string& args,
             const std::string& launcher = "") {
  return testing::RunFromRunfiles("trainer/cli/train",
             absl::StrCat("--device=cpu --cache_dir=", TempDir(),
                          "/cache --progress=plain --eval_every=0 ", model_args, " ", args),
             launcher);
}

std::map<std::string, std::string> Tensors(const std::string& path) {
  auto ckpt = ReadCheckpoint(path);
  EXPECT_TRUE(ckpt.ok()) << ckpt.status();
  std::map<std::string, std::string> out;
  if (!ckpt.ok()) return out;
  for (const auto& t : ckpt->tensors()) out[t.name()] = t.data();
  return out;
}

// Every "train" record's loss, as written (17 significant digits).
std::vector<double> Losses(const std::string& jsonl) {
  std::vector<double> out;
  std::istringstream in(jsonl);
  for (std::string line; std::getline(in, line);) {
    if (line.find("\"type\":\"train\"") == std::string::npos) continue;
    const size_t at = line.find("\"loss\":");
    if (at != std::string::npos) out.push_back(std::stod(line.substr(at + 7)));
  }
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

// The estimator's rows for a model and `lora` (train's --lora value; "":
// full fine-tuning).
std::map<std::string, int64_t> EstimateRows(const std::string& model, const std::string& options,
                                            const std::string& precision, int64_t batch,
                                            const std::string& lora) {
  const Result r = testing::RunFromRunfiles("tools/memory/estimate",
                       absl::StrCat("--model=", model, " --model_options='", options,
                                    "' --format=csv --precisions=", precision,
                                    " --batch_sizes=", batch, " --lora='", lora, "'"));
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
  std::string name, model, options, data, lora;
  std::vector<std::string> adapted;  // the weights with adapters
  std::vector<std::string> precisions;
  int64_t batch;
};

std::vector<Case> Cases() {
  return {
      {"gpt2", "gpt2", kGptOptions, "--dataset=text --text_path=" + TextFile(),
       "r=8,alpha=16,targets=qkvw,attprojw,fcw,fcprojw",
       {"qkvw", "attprojw", "fcw", "fcprojw"}, {"fp32", "bf16"}, 4},
      {"mlp", "mlp", "", "--dataset=digits", "r=4,alpha=8,targets=layer*.weight",
       {"layer0.weight", "layer1.weight", "layer2.weight"}, {"fp32", "tf32", "bf16", "fp16"}, 32},
  };
}

std::string ModelArgs(const Case& c) {
  return absl::StrCat("--model=", c.model,
                      c.options.empty() ? "" : absl::StrCat(" --model_options=", c.options), " ",
                      c.data);
}

// "layer0.weight" -> "layer0", "qkvw" -> "qkvw" (lora.h's naming).
std::string LayerOf(const std::string& weight) {
  const size_t dot = weight.rfind('.');
  return dot == std::string::npos ? weight : weight.substr(0, dot);
}

TEST(LoraTest, OnlyTheAdaptersTrainAndTheyCostWhatTheEstimateSays) {
  for (const Case& c : Cases()) {
    for (const std::string& precision : c.precisions) {
      SCOPED_TRACE(c.name + " " + precision);
      const std::string base = absl::StrCat(TempDir(), "/", c.name, "_", precision);
      const std::string common = absl::StrCat("--precision=", precision, " --batch_size=",
                                              c.batch, " --seed=11 --lora=", c.lora, " ");
      // Step 1's checkpoint holds the base weights' initial values; step
      // 20's must hold the same bits.
      const Result one = Train(ModelArgs(c), common + "--steps=1 --checkpoint_dir=" + base + "_1");
      ASSERT_EQ(one.exit_code, 0) << one.err;
      const Result many = Train(ModelArgs(c), common + "--steps=20 --lr=0.01 --log_every=1 "
                                                       "--checkpoint_dir=" + base +
                                                       "_20 --metrics_jsonl=" + base + ".jsonl");
      ASSERT_EQ(many.exit_code, 0) << many.err;
      EXPECT_TRUE(absl::StrContains(many.out, "trainable parameters ")) << many.out;
      const auto t1 = Tensors(base + "_1/latest"), t20 = Tensors(base + "_20/latest");
      int adapters = 0, frozen = 0;
      for (const auto& [name, bytes] : t20) {
        if (absl::StartsWith(name, "opt.") || absl::StrContains(name, "/")) continue;
        const bool adapter = absl::StrContains(name, ".lora_");
        if (adapter) {
          ++adapters;
          EXPECT_NE(t1.at(name), bytes) << name << " did not train";
          EXPECT_EQ(t20.count("opt.state1/" + name), 1u) << name << " has no optimizer state";
        } else {
          ++frozen;
          EXPECT_EQ(t1.at(name), bytes) << name << " changed";
          EXPECT_EQ(t20.count("opt.state1/" + name), 0u) << name << " has optimizer state";
        }
      }
      EXPECT_EQ(adapters, static_cast<int>(2 * c.adapted.size()));
      for (const std::string& w : c.adapted) {
        EXPECT_EQ(t20.count(LayerOf(w) + ".lora_A"), 1u) << w;
        EXPECT_EQ(t20.count(LayerOf(w) + ".lora_B"), 1u) << w;
      }
      EXPECT_GT(frozen, 0);

      // The loss goes down: the last five steps' mean under the first's.
      const std::string jsonl = ReadWholeFile(base + ".jsonl");
      const std::vector<double> losses = Losses(jsonl);
      ASSERT_EQ(losses.size(), 20u);
      for (double l : losses) ASSERT_TRUE(std::isfinite(l));
      double tail = 0;
      for (size_t i = 15; i < 20; ++i) tail += losses[i] / 5;
      EXPECT_LT(tail, losses[0]) << "first " << losses[0] << ", last five " << tail;

      // The memory: the estimator's with the same --lora, byte for byte,
      // and less than full fine-tuning's.
      const auto est = EstimateRows(c.model, c.options, precision, c.batch, c.lora);
      const auto full = EstimateRows(c.model, c.options, precision, c.batch, "");
      ASSERT_FALSE(est.empty());
      ASSERT_FALSE(full.empty());
      EXPECT_EQ(MeasuredPeak(jsonl, "weights"), est.at("weights"));
      EXPECT_EQ(MeasuredPeak(jsonl, "master_weights"), est.at("master_weights"));
      EXPECT_EQ(MeasuredPeak(jsonl, "gradients"),
                est.at("gradients") + est.at("master_gradients"));
      EXPECT_EQ(MeasuredPeak(jsonl, "optimizer_state"), est.at("optimizer_state"));
      EXPECT_EQ(MeasuredPeak(jsonl, "activations"), est.at("activations"));
      EXPECT_EQ(MeasuredPeak(jsonl, "workspace"), est.at("workspace"));
      EXPECT_LT(est.at("gradients"), full.at("gradients"));
      EXPECT_LT(est.at("optimizer_state"), full.at("optimizer_state"));
      EXPECT_LT(est.at("total"), full.at("total"));
      // The dry run of the same command says the same.
      const Result dry = Train(ModelArgs(c), common + "--dry_run");
      ASSERT_EQ(dry.exit_code, 0) << dry.err;
      EXPECT_TRUE(absl::StrContains(dry.out, "of them frozen")) << dry.out;
    }
  }
}

TEST(LoraTest, ResumesBitForBit) {
  const Case c = Cases()[0];
  const std::string common =
      absl::StrCat("--precision=bf16 --batch_size=4 --seed=3 --lr=0.01 --lora=", c.lora, " ");
  const std::string whole = TempDir() + "/resume_whole", part = TempDir() + "/resume_part";
  ASSERT_EQ(Train(ModelArgs(c), common + "--steps=6 --checkpoint_dir=" + whole).exit_code, 0);
  ASSERT_EQ(Train(ModelArgs(c), common + "--steps=6 --checkpoint_every=3 "
                                         "--save_total_limit=0 --checkpoint_dir=" + part)
                .exit_code,
            0);
  const std::string resumed = TempDir() + "/resume_again";
  const Result r = Train(ModelArgs(c), common + "--steps=6 --resume_from=" + part +
                                           "/checkpoint-3 --checkpoint_dir=" + resumed);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto a = Tensors(whole + "/latest"), b = Tensors(resumed + "/latest");
  ASSERT_FALSE(a.empty());
  EXPECT_EQ(a.size(), b.size());
  int adapters = 0;
  for (const auto& [name, bytes] : a) {
    ASSERT_EQ(b.count(name), 1u) << name;
    EXPECT_EQ(b.at(name), bytes) << name;
    adapters += absl::StrContains(name, ".lora_") ? 1 : 0;
  }
  EXPECT_GT(adapters, 0);
}

// || a - b || / || b || over two checkpoints' f32 tensors; NaN never passes.
double RelativeDistance(const std::string& a, const std::string& b) {
  if (a.size() != b.size() || b.empty()) return INFINITY;
  const size_t n = b.size() / sizeof(float);
  const float* x = reinterpret_cast<const float*>(a.data());
  const float* y = reinterpret_cast<const float*>(b.data());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) return INFINITY;
    diff += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    norm += static_cast<double>(y[i]) * y[i];
  }
  if (norm == 0) return diff == 0 ? 0 : INFINITY;
  return std::sqrt(diff / norm);
}

// Two ranks with batch b land where one rank with 2b does (the data
// parallel test's fp32 tolerance, 1e-6 relative, per loss and per tensor:
// only the order of the fp32 sums differs), the adapters' gradients going
// through the bucketed exchange like any other parameter's.
TEST(LoraTest, TwoDataParallelRanksMatchOneRank) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const int64_t b = c.batch;
    const std::string common = absl::StrCat("--precision=fp32 --seed=5 --lr=0.01 --steps=8 "
                                            "--log_every=1 --lora=", c.lora, " ");
    const std::string one = TempDir() + "/dp1_" + c.name, two = TempDir() + "/dp2_" + c.name;
    const Result r1 = Train(ModelArgs(c), absl::StrCat(common, "--batch_size=", 2 * b,
                                                       " --checkpoint_dir=", one,
                                                       " --metrics_jsonl=", one, ".jsonl"));
    ASSERT_EQ(r1.exit_code, 0) << r1.err;
    const Result r2 = Train(ModelArgs(c),
                            absl::StrCat(common, "--batch_size=", b, " --checkpoint_dir=", two,
                                         " --metrics_jsonl=", two, ".jsonl"),
                            mnt::testing::Mpirun(2));
    ASSERT_EQ(r2.exit_code, 0) << r2.err << r2.out;
    const std::vector<double> l1 = Losses(ReadWholeFile(one + ".jsonl")), l2 = Losses(ReadWholeFile(two + ".jsonl"));
    ASSERT_EQ(l1.size(), 8u);
    ASSERT_EQ(l2.size(), l1.size());
    for (size_t i = 0; i < l1.size(); ++i) {
      EXPECT_LE(std::abs(l2[i] - l1[i]), 1e-6 * std::abs(l1[i])) << "step " << i + 1;
    }
    const auto a = Tensors(one + "/latest"), t = Tensors(two + "/latest");
    ASSERT_EQ(a.size(), t.size());
    for (const auto& [name, bytes] : a) {
      if (!absl::StrContains(name, ".lora_")) {
        EXPECT_EQ(t.at(name), bytes) << name;  // frozen: the initial bits on both
        continue;
      }
      EXPECT_LE(RelativeDistance(t.at(name), bytes), 1e-6) << name;
    }
  }
}

TEST(LoraTest, BadValuesAreOneLineAndWriteNothing) {
  const Case gpt = Cases()[0];
  for (const auto& [args, needle] : std::vector<std::pair<std::string, std::string>>{
           {"--lora=r=8,dropout=0.1,targets=qkvw",
            "--lora: dropout=0.1: dropout on the adapters' input is not implemented"},
           {"--lora=r=8", "--lora needs r and targets"},
           {"--lora=r=8,targets=nosuch*", "LoRA target 'nosuch*' matches no weight matrix"},
           {"--lora=r=8,targets=ln1w", "LoRA target 'ln1w' is no Linear layer's weight"},
           {"--lora=r=8,targets=qkvw --precision=fp8",
            "LoRA adapters with FP8 GEMMs are not implemented"}}) {
    SCOPED_TRACE(args);
    const std::string dir = TempDir() + "/bad_" + std::to_string(std::hash<std::string>()(args));
    const Result r = Train(ModelArgs(gpt), "--batch_size=4 --steps=2 --checkpoint_dir=" + dir +
                                               " " + args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(absl::StartsWith(r.err, "mantissa: error: ")) << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, needle)) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir + "/latest")) << dir;
  }
}

}  // namespace
}  // namespace mnt::trainer
