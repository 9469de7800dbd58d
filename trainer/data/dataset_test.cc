#include "trainer/data/dataset.h"

#include <cmath>
#include <iostream>
#include <random>
#include <set>

#include "gtest/gtest.h"
#include "trainer/data/sampler.h"

namespace mnt {
namespace trainer {
namespace {

// Example i has label i % classes and features i*10 + k, so every example is
// recognisable after a split or gather.
ClassificationData Numbered(int64_t n, int64_t classes) {
  ClassificationData d;
  d.num_examples = n;
  d.example_dims = {2, 3};
  d.num_classes = classes;
  for (int64_t i = 0; i < n; ++i) {
    for (int k = 0; k < 6; ++k) d.features.push_back(static_cast<float>(i * 10 + k));
    d.labels.push_back(static_cast<int32_t>(i % classes));
  }
  return d;
}

int64_t IdOf(const ClassificationData& d, int64_t row) {
  return static_cast<int64_t>(d.features[row * d.example_size()]) / 10;
}

TEST(SplitTrainValidationTest, PartitionsDeterministically) {
  const uint64_t seed = std::random_device{}();
  std::cout << "seed " << seed << "\n";
  const ClassificationData data = Numbered(101, 7);
  absl::StatusOr<ClassificationSplit> split = SplitTrainValidation(data, 0.2, seed);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(split->validation.num_examples, 20);  // round(20.2)
  EXPECT_EQ(split->train.num_examples, 81);
  EXPECT_EQ(split->train.example_dims, data.example_dims);
  EXPECT_EQ(split->validation.num_classes, 7);
  std::set<int64_t> seen;
  for (const ClassificationData* part : {&split->train, &split->validation}) {
    ASSERT_EQ(part->features.size(), static_cast<size_t>(part->num_examples * 6));
    ASSERT_EQ(part->labels.size(), static_cast<size_t>(part->num_examples));
    for (int64_t r = 0; r < part->num_examples; ++r) {
      const int64_t id = IdOf(*part, r);
      EXPECT_TRUE(seen.insert(id).second) << "example " << id << " twice";
      EXPECT_EQ(part->labels[r], id % 7);  // label travelled with its features
      for (int k = 0; k < 6; ++k) EXPECT_EQ(part->features[r * 6 + k], id * 10 + k);
    }
  }
  EXPECT_EQ(seen.size(), 101u);

  absl::StatusOr<ClassificationSplit> again = SplitTrainValidation(data, 0.2, seed);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->validation.features, split->validation.features);
  absl::StatusOr<ClassificationSplit> other = SplitTrainValidation(data, 0.2, seed + 1);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->validation.features, split->validation.features);
}

TEST(SplitTrainValidationTest, RefusesSplitsWithAnEmptyPart) {
  const ClassificationData data = Numbered(3, 2);
  EXPECT_FALSE(SplitTrainValidation(data, 0.1, 1).ok());  // round(0.3) = 0
  EXPECT_FALSE(SplitTrainValidation(data, 0.9, 1).ok());  // round(2.7) = 3
  EXPECT_FALSE(SplitTrainValidation(data, 0.0, 1).ok());
  EXPECT_FALSE(SplitTrainValidation(data, std::nan(""), 1).ok());
  const absl::StatusOr<ClassificationSplit> bad = SplitTrainValidation(data, 1.0, 1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "--validation_fraction=1 cannot split 3 examples: both the training and the "
            "validation part need at least one");
  EXPECT_TRUE(SplitTrainValidation(data, 0.5, 1).ok());
}

TEST(GatherExamplesTest, CopiesRequestedRows) {
  const ClassificationData data = Numbered(10, 3);
  std::vector<float> features;
  std::vector<int32_t> labels;
  GatherExamples(data, {9, 0, 9, 4}, &features, &labels);
  ASSERT_EQ(features.size(), 24u);
  EXPECT_EQ(labels, (std::vector<int32_t>{0, 0, 0, 1}));
  const int64_t ids[] = {9, 0, 9, 4};
  for (int b = 0; b < 4; ++b) {
    for (int k = 0; k < 6; ++k) EXPECT_EQ(features[b * 6 + k], ids[b] * 10 + k);
  }
}

TEST(SplitTokensTest, KeepsOrderAndChecksMinimum) {
  TokenData data;
  data.vocab = 256;
  for (int i = 0; i < 100; ++i) data.tokens.push_back(i);
  absl::StatusOr<TokenSplit> split = SplitTokens(data, 0.25, 5);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->train.tokens.size(), 75u);
  ASSERT_EQ(split->validation.tokens.size(), 25u);
  EXPECT_EQ(split->train.tokens.front(), 0);
  EXPECT_EQ(split->validation.tokens.front(), 75);
  EXPECT_EQ(split->validation.vocab, 256);
  EXPECT_FALSE(SplitTokens(data, 0.25, 26).ok());
  EXPECT_FALSE(SplitTokens(data, 0.9, 11).ok());
}

TEST(GatherTextWindowsTest, InputsAndShiftedTargets) {
  TokenData data;
  data.vocab = 256;
  for (int i = 0; i < 13; ++i) data.tokens.push_back(100 + i);
  const int64_t seq_len = 4;
  ASSERT_EQ(NumTextWindows(13, seq_len), 3);
  std::vector<int32_t> inputs, targets;
  GatherTextWindows(data, seq_len, {2, 0}, &inputs, &targets);
  EXPECT_EQ(inputs, (std::vector<int32_t>{108, 109, 110, 111, 100, 101, 102, 103}));
  EXPECT_EQ(targets, (std::vector<int32_t>{109, 110, 111, 112, 101, 102, 103, 104}));
}

}  // namespace
}  // namespace trainer
}  // namespace mnt
