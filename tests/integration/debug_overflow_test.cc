// Where an overflow is, through the train binary: --debug_overflow stops at
// the first op that makes an inf/NaN and names it, its layer and parameters,
// with the last ops' operand ranges; without the flag, every skipped fp16
// step names the parameters whose gradients held inf/NaN (console and
// JSONL). Layers are made to overflow on purpose by filling their weights
// (MANTISSA_FAULT_FILL_WEIGHTS) or their gradient
// (MANTISSA_FAULT_INF_GRADIENT): trainer/parallel/fault_injection.h.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace mnt::trainer {
namespace {

using testing::TempDir;

using Result = testing::BinaryRun;

Result Train(const std::string& name, const std::string& env, const std::string& flags) {
  return testing::RunTrainBinary(TempDir() + "/" + name, env,
                                 "--model=mlp --dataset=digits --cache_dir=" + TempDir() +
                                     "/cache --steps=6 --eval_every=0 --log_every=1 "
                                     "--checkpoint_dir=none " + flags);
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class DebugOverflowNamesTheLayer : public ::testing::TestWithParam<std::string> {};

TEST_P(DebugOverflowNamesTheLayer, FirstOpThatOverflows) {
  // Weights of 30000 in one fp16 layer: its GEMM's output passes 65504.
  const std::string layer = GetParam();
  const Result r = Train("fill_" + layer, "MANTISSA_FAULT_FILL_WEIGHTS=" + layer + ".weight:30000:3",
                         "--precision=fp16 --progress=none --debug_overflow");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string line = "mantissa: error: step 3: --debug_overflow: in forward, op #";
  ASSERT_NE(r.output.find(line), std::string::npos) << r.output;
  const std::string error = r.output.substr(r.output.find(line));
  EXPECT_NE(error.find("GEMM in layer '" + layer + "' (parameters " + layer + ".weight"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("made inf/NaN: out[0] (activation:"), std::string::npos) << error;
  EXPECT_EQ(Count(r.output, "mantissa: error:"), 1u) << r.output;
  // The report: at most 20 ops, the last the one named, with the filled
  // weights' range.
  EXPECT_NE(r.output.find("--debug_overflow: the last 20 ops"), std::string::npos) << r.output;
  EXPECT_LE(Count(r.output, "\n  #"), 20u) << r.output;
  EXPECT_NE(r.output.find(layer + ".weight                abs min 3e+04 max 3e+04"),
            std::string::npos)
      << r.output;
  // The JSONL's last record says so too.
  EXPECT_NE(r.jsonl.find("\"type\":\"error\""), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Layers, DebugOverflowNamesTheLayer, ::testing::Values("layer0", "layer1"));

TEST(DebugOverflow, ChangesNothingWhenNothingOverflows) {
  // The tracer only reads: the same losses, to the last digit.
  const Result traced = Train("traced", "", "--precision=fp16 --progress=none --debug_overflow");
  const Result plain = Train("plain", "", "--precision=fp16 --progress=none");
  ASSERT_EQ(traced.exit_code, 0) << traced.output;
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  auto losses = [](const std::string& jsonl) {
    std::vector<std::string> out;
    std::istringstream in(jsonl);
    for (std::string l; std::getline(in, l);) {
      const size_t at = l.find("\"loss\":");
      if (l.find("\"type\":\"train\"") != std::string::npos && at != std::string::npos) {
        out.push_back(l.substr(at, l.find(',', at) - at));
      }
    }
    return out;
  };
  ASSERT_EQ(losses(plain.jsonl).size(), 6u);
  EXPECT_EQ(losses(traced.jsonl), losses(plain.jsonl));
}

TEST(SkippedSteps, NameTheParametersWhoseGradientsOverflowed) {
  // An inf in the first parameter's gradient at step 3: that step skips
  // and names it, on the console and in the JSONL; other steps name none.
  const Result r = Train("inf_grad", "MANTISSA_FAULT_INF_GRADIENT=0:3",
                         "--precision=fp16 --progress=plain");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("step 3 skipped: inf/NaN in the gradient of layer0.weight;"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.jsonl.find("\"step\":3,"), std::string::npos);
  EXPECT_EQ(Count(r.jsonl, "\"nonfinite_params\":[\"layer0.weight\"]"), 1u) << r.jsonl;
  EXPECT_EQ(Count(r.jsonl, "\"nonfinite_params\":[]"), 5u) << r.jsonl;
}

TEST(SkippedSteps, ANaturalOverflowNamesTheLastLayersFirst) {
  // A loss scale of 2^40: the first backward overflows in fp16 from the
  // last layer's gradients on; backward reaches the model's last first.
  const Result r = Train("big_scale", "", "--precision=fp16 --progress=none --init_scale=1099511627776");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const size_t at = r.jsonl.find("\"nonfinite_params\":[\"");
  ASSERT_NE(at, std::string::npos) << r.jsonl;
  const std::string first = r.jsonl.substr(at + 21, r.jsonl.find('"', at + 21) - at - 21);
  EXPECT_EQ(first.rfind("layer", 0), 0u) << first;
  EXPECT_NE(first, "layer0.weight") << "backward reaches the first layer last";
}

}  // namespace
}  // namespace mnt::trainer
