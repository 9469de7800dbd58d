// The default task (MLP on scikit-learn's digits) in every precision: fp32
// reaches the accuracy the README states, tf32/bf16/fp16 reach fp32's
// accuracy within a stated tolerance, and the 16-bit modes hold activations
// in half the bytes (read from the backend allocator's statistics).
#include <cmath>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace mnt::trainer {
namespace {

using testing::InTreePluginDirs;
using testing::MakeTrainer;
using testing::RecordingSink;
using testing::TestConfig;

struct RunResult {
  double accuracy = 0;
  double final_loss = 0;
  int64_t activation_peak = 0;
  int64_t weight_bytes = 0;
  int64_t master_bytes = 0;
};

RunResult TrainDefault(const std::string& precision) {
  PluginRegistry registry(InTreePluginDirs());
  auto trainer = MakeTrainer(TestConfig(precision), &registry);
  EXPECT_TRUE(trainer.ok()) << trainer.status();
  if (!trainer.ok()) return {};
  RecordingSink sink;
  absl::Status s = (*trainer)->Train(&sink);
  EXPECT_TRUE(s.ok()) << s;
  RunResult r;
  const FinalReport report = (*trainer)->Report();
  EXPECT_TRUE(report.has_eval);
  r.accuracy = report.last_eval.accuracy;
  r.final_loss = report.last_eval.loss;
  for (const MemoryLine& m : report.memory) {
    if (m.category == "activations") r.activation_peak = m.peak_bytes;
    if (m.category == "weights") r.weight_bytes = m.peak_bytes;
    if (m.category == "master_weights") r.master_bytes = m.peak_bytes;
  }
  return r;
}

class PrecisionAccuracyTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    for (const char* p : {"fp32", "tf32", "bf16", "fp16"}) {
      (*results_)[p] = TrainDefault(p);
    }
  }
  static std::map<std::string, RunResult>* results_;
};
std::map<std::string, RunResult>* PrecisionAccuracyTest::results_ =
    new std::map<std::string, RunResult>();

// README: "the MLP reaches about 97-98% validation accuracy on digits".
TEST_F(PrecisionAccuracyTest, Fp32ReachesStatedAccuracy) {
  const RunResult& r = (*results_)["fp32"];
  EXPECT_TRUE(std::isfinite(r.final_loss));
  EXPECT_GE(r.accuracy, 0.96);
}

// Stated tolerance: within 1.5 percentage points of fp32 on 359 validation
// examples (about 5 images), for every reduced-precision mode.
TEST_F(PrecisionAccuracyTest, ReducedPrecisionsMatchFp32Accuracy) {
  const double fp32 = (*results_)["fp32"].accuracy;
  for (const char* p : {"tf32", "bf16", "fp16"}) {
    const RunResult& r = (*results_)[p];
    EXPECT_TRUE(std::isfinite(r.final_loss)) << p;
    EXPECT_NEAR(r.accuracy, fp32, 0.015) << p;
  }
}

TEST_F(PrecisionAccuracyTest, SixteenBitModesHalveActivationMemory) {
  const RunResult& fp32 = (*results_)["fp32"];
  ASSERT_GT(fp32.activation_peak, 0);
  EXPECT_EQ((*results_)["tf32"].activation_peak, fp32.activation_peak);
  for (const char* p : {"bf16", "fp16"}) {
    const RunResult& r = (*results_)[p];
    EXPECT_EQ(2 * r.activation_peak, fp32.activation_peak) << p;
  }
}

// The guide's 1.5x: 16-bit working weights plus fp32 master weights.
TEST_F(PrecisionAccuracyTest, MixedPrecisionKeepsModelInSixteenAndThirtyTwoBit) {
  const RunResult& fp32 = (*results_)["fp32"];
  EXPECT_EQ(fp32.master_bytes, 0);
  for (const char* p : {"bf16", "fp16"}) {
    const RunResult& r = (*results_)[p];
    EXPECT_EQ(2 * r.weight_bytes, fp32.weight_bytes) << p;
    EXPECT_EQ(r.master_bytes, fp32.weight_bytes) << p;
    EXPECT_EQ(2 * (r.weight_bytes + r.master_bytes), 3 * fp32.weight_bytes) << p;
  }
}

}  // namespace
}  // namespace mnt::trainer
