// GPT-2 tiny (attention through ABI 1.2) and the CNN (convolutions, pooling,
// batch norm through ABI 1.3) trained through the real trainer on the cuda
// backend track the same runs on the cpu backend in every precision:
// identical initial weights and batches, so the first step's loss agrees
// tightly (only kernel rounding differs) and the mean of the last 10 losses
// within a per-precision tolerance (mixed-precision runs drift slowly).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"
#include "tests/gpu/training_harness.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/core/metrics.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {
namespace {

using gpu_testing::Runfiles;
using gpu_testing::TmpDir;
using Recorder = gpu_testing::LossRecorder;

constexpr size_t kSteps = 60;

std::string WriteCorpus() {
  // A small deterministic English-like corpus for byte-level GPT-2.
  return gpu_testing::WriteWordCorpus("corpus.txt",
                                      {"the", "cat", "sat", "on", "a", "mat", "while", "dogs",
                                       "ran", "past", "quickly", "and", "birds", "sang"},
                                      12345);
}

std::vector<double> Train(const std::string& model, const std::string& device,
                          const std::string& precision) {
  const std::string ws = Runfiles() + "/mantissa/";
  PluginRegistry registry({ws + "plugins/backends/cuda", ws + "plugins/backends/cpu",
                           ws + "plugins/precisions", ws + "models/gpt2",
                           ws + "models/cnn"});
  TrainConfig c = DefaultTrainConfig();
  c.set_device(device);
  c.set_precision(precision);
  c.set_progress("none");
  c.set_model(model);
  c.set_eval_every(0);
  c.mutable_data()->set_cache_dir(TmpDir() + "/cache");
  std::string digits;
  if (model == "gpt2") {
    c.set_model_options("preset=gpt2-tiny,seq_len=32");
    c.mutable_data()->set_dataset("text");
    c.mutable_data()->set_text_path(WriteCorpus());
    c.mutable_data()->set_seq_len(31);  // odd T through the attention kernels
    c.set_batch_size(8);
  } else {
    c.set_model_options("depth=2,width=16");
    c.mutable_data()->set_dataset("digits");
    c.set_batch_size(32);
    c.mutable_optimizer()->set_lr(3e-3);
    digits = Runfiles() + "/sklearn_digits/digits.csv.gz";
  }
  c.set_steps(kSteps);
  std::vector<double> losses;
  auto data = LoadDatasets(c, digits);
  EXPECT_TRUE(data.ok()) << data.status();
  if (!data.ok()) return losses;
  auto trainer = Trainer::Create(c, &registry, std::move(data->train), std::move(data->eval));
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  if (!trainer.ok()) return losses;
  Recorder rec;
  const absl::Status s = (*trainer)->Train(&rec);
  EXPECT_TRUE(s.ok()) << model << " " << device << "/" << precision << ": " << s;
  return rec.losses;
}

double MeanOfLast(const std::vector<double>& v, size_t k) {
  double s = 0;
  for (size_t i = v.size() - k; i < v.size(); ++i) s += v[i];
  return s / k;
}

struct Case {
  const char* precision;
  double first_step_rtol;
  double late_rtol;
};

void ExpectTracksCpu(const std::string& model) {
  for (const Case& k : {Case{"fp32", 1e-4, 2e-2}, Case{"tf32", 3e-3, 5e-2},
                        Case{"bf16", 2e-2, 1e-1}, Case{"fp16", 1e-2, 1e-1}}) {
    SCOPED_TRACE(model + " " + k.precision);
    const std::vector<double> gpu = Train(model, "cuda", k.precision);
    const std::vector<double> cpu = Train(model, "cpu", k.precision);
    ASSERT_EQ(gpu.size(), kSteps);
    ASSERT_EQ(cpu.size(), kSteps);
    for (double l : gpu) ASSERT_TRUE(std::isfinite(l));
    std::printf("%s %s: first loss cuda %.6f cpu %.6f; last-10 mean cuda %.5f cpu %.5f\n",
                model.c_str(), k.precision, gpu[0], cpu[0], MeanOfLast(gpu, 10),
                MeanOfLast(cpu, 10));
    EXPECT_NEAR(gpu[0], cpu[0], k.first_step_rtol * cpu[0]);
    EXPECT_NEAR(MeanOfLast(gpu, 10), MeanOfLast(cpu, 10),
                k.late_rtol * MeanOfLast(cpu, 10) + 1e-3);
    EXPECT_LT(MeanOfLast(gpu, 10), gpu[0]);  // it learned
  }
}

TEST(CudaModelTrainingTest, Gpt2TinyTracksTheCpuRun) {
  MNT_SKIP_WITHOUT_GPU();
  ExpectTracksCpu("gpt2");
}

TEST(CudaModelTrainingTest, CnnTracksTheCpuRun) {
  MNT_SKIP_WITHOUT_GPU();
  ExpectTracksCpu("cnn");
}

}  // namespace
}  // namespace mnt::trainer
