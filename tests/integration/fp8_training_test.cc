// --precision=fp8 through the train binary (ABI 1.10): the MLP and the CNN
// train on digits with their Linear GEMMs in FP8 on the CPU backend's exact
// emulation and end near bf16; every scaled tensor's scale and amax reach
// the JSONL at --log_every; calibration changes the first step; bad
// --precision_options are one line. The GPT-2 main job's accuracy figures
// (300 and 2000 steps) are in docs/performance.md; resume_test checks that
// FP8 scales and histories cross a checkpoint bit for bit.
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace mnt::trainer {
namespace {

using testing::TempDir;

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr
  std::vector<std::string> records;
};

Result Train(const std::string& name, const std::string& flags) {
  const testing::BinaryRun run = testing::RunTrainBinary(
      TempDir() + "/fp8_" + name, "",
      "--dataset=digits --cache_dir=" + TempDir() +
          "/cache --eval_every=0 --checkpoint_dir=none --progress=none " + flags);
  Result r{run.exit_code, run.output, {}};
  std::istringstream jsonl(run.jsonl);
  for (std::string line; std::getline(jsonl, line);) r.records.push_back(line);
  return r;
}

// The number after "\"<key>\":" in a JSON line (NaN when absent).
double Number(const std::string& line, const std::string& key) {
  const size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return NAN;
  return std::strtod(line.c_str() + at + key.size() + 3, nullptr);
}

std::vector<std::string> OfType(const Result& r, const std::string& type) {
  std::vector<std::string> v;
  for (const std::string& line : r.records) {
    if (line.find("\"type\":\"" + type + "\"") != std::string::npos) v.push_back(line);
  }
  return v;
}

class Fp8TrainsLikeBf16 : public ::testing::TestWithParam<std::string> {};

// 40 steps of each model in bf16 and in fp8 from the same seed: the final
// eval loss within 2% (the bar for the main job; measured 0.3%
// for the MLP and 0.05% for the CNN), every training loss finite.
TEST_P(Fp8TrainsLikeBf16, EvalLossWithinTwoPercentAndScalesReported) {
  const std::string model = GetParam();
  const std::string flags = "--model=" + model + " --steps=40 --log_every=10";
  const Result bf16 = Train(model + "_bf16", flags + " --precision=bf16");
  const Result fp8 = Train(model + "_fp8", flags + " --precision=fp8");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  ASSERT_EQ(fp8.exit_code, 0) << fp8.output;
  const std::vector<std::string> eval_bf16 = OfType(bf16, "eval"), eval_fp8 = OfType(fp8, "eval");
  ASSERT_FALSE(eval_bf16.empty());
  ASSERT_FALSE(eval_fp8.empty());
  const double want = Number(eval_bf16.back(), "eval_loss");
  const double got = Number(eval_fp8.back(), "eval_loss");
  std::printf("%s eval loss: bf16 %.4f, fp8 %.4f\n", model.c_str(), want, got);
  EXPECT_TRUE(std::isfinite(got));
  EXPECT_NEAR(got, want, 0.02 * want);
  const std::vector<std::string> train = OfType(fp8, "train");
  ASSERT_EQ(train.size(), 40u);
  for (const std::string& line : train) {
    EXPECT_TRUE(std::isfinite(Number(line, "loss"))) << line;
    // The scales at --log_every (and step 1) only: one device read each.
    const int step = static_cast<int>(Number(line, "step"));
    if (step != 1 && step % 10 != 0) {
      EXPECT_EQ(line.find("\"fp8\""), std::string::npos) << line;
      continue;
    }
    // Every Linear's three tensors with a positive, finite scale and amax.
    const std::string weight = model == "mlp" ? "layer0.weight" : "head.weight";
    for (const char* role : {"input", "weight", "grad_output"}) {
      const std::string entry = "\"" + weight + "/" + role + "\":{\"scale\":";
      const size_t at = line.find(entry);
      ASSERT_NE(at, std::string::npos) << entry << " in " << line;
      const double scale = std::strtod(line.c_str() + at + entry.size(), nullptr);
      EXPECT_TRUE(std::isfinite(scale) && scale > 0) << line;
    }
  }
  EXPECT_EQ(bf16.records[1].find("\"fp8\""), std::string::npos) << "bf16 reports no FP8 scales";
}

INSTANTIATE_TEST_SUITE_P(Models, Fp8TrainsLikeBf16, ::testing::Values("mlp", "cnn"));

// calibrate=1 (the default) records amax on the first batch before step 1,
// so step 1 already quantizes with 448/amax: its loss differs from the
// uncalibrated step 1, which quantizes with scale 1. Both near bf16's.
TEST(Fp8Calibration, ChangesTheFirstStep) {
  const std::string flags = "--model=mlp --steps=1 --log_every=1";
  const Result on = Train("calibrated", flags + " --precision=fp8");
  const Result off = Train("uncalibrated", flags + " --precision=fp8 --precision_options=calibrate=0");
  const Result bf16 = Train("first_bf16", flags + " --precision=bf16");
  ASSERT_EQ(on.exit_code, 0) << on.output;
  ASSERT_EQ(off.exit_code, 0) << off.output;
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  const double l_on = Number(OfType(on, "train")[0], "loss");
  const double l_off = Number(OfType(off, "train")[0], "loss");
  const double l_bf16 = Number(OfType(bf16, "train")[0], "loss");
  EXPECT_NE(l_on, l_off);
  EXPECT_NEAR(l_on, l_bf16, 0.01 * l_bf16);
  EXPECT_NEAR(l_off, l_bf16, 0.01 * l_bf16);
}

// Bad options: one line naming the option, exit 1, before any step.
TEST(Fp8Options, BadOptionsAreOneLine) {
  struct Case {
    const char* options;
    const char* message;
  };
  for (const Case& c :
       {Case{"history=0", "mantissa: error: precision 'fp8': fp8 precision options: history=0 "
                          "must be in [1, 65536]"},
        Case{"format=e5m2", "mantissa: error: precision 'fp8': fp8 precision options: "
                            "format='e5m2' is not one of"},
        Case{"algo=min", "mantissa: error: precision 'fp8': fp8 precision options: algo='min'"},
        Case{"hysteresis=2", "mantissa: error: precision 'fp8': fp8 precision options: unknown "
                             "key 'hysteresis'"}}) {
    SCOPED_TRACE(c.options);
    const Result r = Train("bad", std::string("--model=mlp --steps=2 --precision=fp8 "
                                              "--precision_options=") + c.options);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("mantissa: error:"), r.output.rfind("mantissa: error:")) << r.output;
    EXPECT_TRUE(OfType(r, "train").empty());
  }
}

}  // namespace
}  // namespace mnt::trainer
