// PickToken: greedy is the argmax; top-k never leaves the k largest; with a
// temperature the draw frequencies follow softmax(logits / T).
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tools/gpt2/sampler.h"

namespace mnt::gpt2 {
namespace {

std::vector<float> RandomLogits(std::mt19937& rng, int n) {
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

class PickTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const unsigned seed = std::random_device{}();
    std::printf("seed = %u\n", seed);
    rng_.seed(seed);
  }
  std::mt19937 rng_;
};

TEST_F(PickTokenTest, GreedyAndTopOneAreTheArgmax) {
  const std::vector<float> l = RandomLogits(rng_, 50);
  const int64_t argmax = std::max_element(l.begin(), l.end()) - l.begin();
  for (double u : {0.0, 0.3, 0.999}) {
    EXPECT_EQ(PickToken(l, 0.0f, 0, u), argmax);
    EXPECT_EQ(PickToken(l, 1.0f, 1, u), argmax);
  }
}

TEST_F(PickTokenTest, TopKStaysAmongTheKLargest) {
  const std::vector<float> l = RandomLogits(rng_, 50);
  std::vector<float> sorted = l;
  std::sort(sorted.rbegin(), sorted.rend());
  for (int i = 0; i < 1000; ++i) {
    const int64_t t = PickToken(l, 5.0f, 5, (i + 0.5) / 1000.0);
    EXPECT_GE(l[t], sorted[4]);
  }
}

TEST_F(PickTokenTest, FrequenciesFollowTheTemperedSoftmax) {
  const std::vector<float> l = RandomLogits(rng_, 8);
  const float temperature = 0.7f;
  std::vector<double> want(l.size());
  double sum = 0;
  for (size_t i = 0; i < l.size(); ++i) sum += want[i] = std::exp(l[i] / temperature);
  std::vector<double> got(l.size(), 0.0);
  const int n = 100000;  // evenly spaced uniforms: error <= 8/n per class
  for (int i = 0; i < n; ++i) got[PickToken(l, temperature, 0, (i + 0.5) / n)] += 1.0 / n;
  for (size_t i = 0; i < l.size(); ++i) EXPECT_NEAR(got[i], want[i] / sum, 1e-3) << i;
}

}  // namespace
}  // namespace mnt::gpt2
