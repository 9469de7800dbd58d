// The MLP trained through the real trainer (plugins loaded as .so files from
// the runfiles) on the cuda backend tracks the same run on the cpu backend in
// every precision: identical initial weights and batches, so the first
// step's loss must agree tightly and the later losses and the final
// evaluation within a per-precision tolerance (mixed-precision runs drift
// apart slowly through rounding differences).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"
#include "trainer/cli/load_datasets.h"
#include "trainer/config/config.h"
#include "trainer/core/metrics.h"
#include "trainer/core/trainer.h"
#include "trainer/loader/plugin_registry.h"

namespace mnt::trainer {
namespace {

std::string Runfiles() {
  const char* s = std::getenv("TEST_SRCDIR");
  return std::string(s ? s : ".");
}

class Recorder : public MetricsSink {
 public:
  void OnStep(const StepMetrics& m) override { losses.push_back(m.loss); }
  void OnEval(const EvalMetrics&) override {}
  void OnMessage(const std::string&) override {}
  std::vector<double> losses;
};

struct TrainedRun {
  std::vector<double> losses;
  double eval_loss = 0, eval_accuracy = 0;
};

TrainedRun Train(const std::string& device, const std::string& precision) {
  const std::string ws = Runfiles() + "/mantissa/";
  PluginRegistry registry({ws + "plugins/backends/cuda", ws + "plugins/backends/cpu",
                           ws + "plugins/precisions", ws + "models/mlp"});
  TrainConfig c = DefaultTrainConfig();
  c.set_model("mlp");  // the defaults are the GPT-2 main job
  c.mutable_data()->set_dataset("digits");
  c.set_device(device);
  c.set_precision(precision);
  c.set_progress("none");
  c.set_steps(150);
  const char* tmp = std::getenv("TEST_TMPDIR");
  c.mutable_data()->set_cache_dir(std::string(tmp ? tmp : "/tmp") + "/cache");
  TrainedRun run;
  auto data = LoadDatasets(c, Runfiles() + "/sklearn_digits/digits.csv.gz");
  EXPECT_TRUE(data.ok()) << data.status();
  if (!data.ok()) return run;
  auto trainer = Trainer::Create(c, &registry, std::move(data->train), std::move(data->eval));
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  if (!trainer.ok()) return run;
  Recorder rec;
  const absl::Status s = (*trainer)->Train(&rec);
  EXPECT_TRUE(s.ok()) << device << "/" << precision << ": " << s;
  run.losses = rec.losses;
  const FinalReport r = (*trainer)->Report();
  run.eval_loss = r.last_eval.loss;
  run.eval_accuracy = r.last_eval.accuracy;
  return run;
}

double MeanOfLast(const std::vector<double>& v, size_t k) {
  double s = 0;
  for (size_t i = v.size() - k; i < v.size(); ++i) s += v[i];
  return s / k;
}

struct Case {
  const char* precision;
  double first_step_rtol;  // same weights and batch: only kernel rounding
  double late_rtol;        // mean loss of the last 20 steps
};

TEST(CudaMlpTrainingTest, TracksTheCpuRunInEveryPrecision) {
  MNT_SKIP_WITHOUT_GPU();
  for (const Case& k : {Case{"fp32", 1e-5, 2e-2}, Case{"tf32", 2e-3, 5e-2},
                        Case{"bf16", 1e-2, 1e-1}, Case{"fp16", 5e-3, 1e-1}}) {
    SCOPED_TRACE(k.precision);
    const TrainedRun gpu = Train("cuda", k.precision);
    const TrainedRun cpu = Train("cpu", k.precision);
    ASSERT_EQ(gpu.losses.size(), 150u);
    ASSERT_EQ(cpu.losses.size(), 150u);
    for (double l : gpu.losses) ASSERT_TRUE(std::isfinite(l));
    std::printf("%s: first loss cuda %.6f cpu %.6f; last-20 mean cuda %.5f cpu %.5f; "
                "eval acc cuda %.4f cpu %.4f\n",
                k.precision, gpu.losses[0], cpu.losses[0], MeanOfLast(gpu.losses, 20),
                MeanOfLast(cpu.losses, 20), gpu.eval_accuracy, cpu.eval_accuracy);
    EXPECT_NEAR(gpu.losses[0], cpu.losses[0], k.first_step_rtol * cpu.losses[0]);
    EXPECT_NEAR(MeanOfLast(gpu.losses, 20), MeanOfLast(cpu.losses, 20),
                k.late_rtol * MeanOfLast(cpu.losses, 20) + 1e-3);
    EXPECT_NEAR(gpu.eval_accuracy, cpu.eval_accuracy, 0.02);
    EXPECT_GT(gpu.eval_accuracy, 0.9);
  }
}

}  // namespace
}  // namespace mnt::trainer
