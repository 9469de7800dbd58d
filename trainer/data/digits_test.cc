#include "trainer/data/digits.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "trainer/io/atomic_file.h"
#include "trainer/data/idx.h"

namespace mnt {
namespace trainer {
namespace {

struct Row {
  std::vector<int> pixels;  // 64 values 0..16
  int label;
};

class DigitsTest : public testing::Test {
 protected:
  void SetUp() override {
    const unsigned seed = std::random_device{}();
    std::cout << "seed " << seed << "\n";
    rng_.seed(seed);
    const char* base = std::getenv("TEST_TMPDIR");
    dir_ = std::string(base ? base : "/tmp") + "/digits_" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(MakeDirectories(dir_).ok());
  }

  std::vector<Row> RandomRows(int n) {
    std::vector<Row> rows(n);
    for (Row& r : rows) {
      for (int i = 0; i < 64; ++i) r.pixels.push_back(static_cast<int>(rng_() % 17));
      r.label = static_cast<int>(rng_() % 10);
    }
    rows[0].pixels[0] = 16;  // the extremes appear at least once
    rows[0].pixels[1] = 0;
    return rows;
  }

  // Writes rows as sklearn does ("5,0,...,3\n"); a few values as "5.0".
  std::string WriteCsvGz(const std::string& name, const std::vector<Row>& rows,
                         const std::string& extra_line = "") {
    std::string text;
    for (size_t r = 0; r < rows.size(); ++r) {
      for (int i = 0; i < 64; ++i) {
        text += std::to_string(rows[r].pixels[i]) + (r % 3 == 1 && i == 5 ? ".0" : "") + ",";
      }
      text += std::to_string(rows[r].label) + "\n";
    }
    text += extra_line;
    const std::string path = dir_ + "/" + name;
    gzFile f = gzopen(path.c_str(), "wb");
    EXPECT_NE(f, nullptr);
    EXPECT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
              static_cast<int>(text.size()));
    EXPECT_EQ(gzclose(f), Z_OK);
    return path;
  }

  std::mt19937_64 rng_;
  std::string dir_;
};

TEST_F(DigitsTest, ConvertsCsvGzToIdxAndLoadsExactValues) {
  const std::vector<Row> rows = RandomRows(13);
  const std::string csv = WriteCsvGz("digits.csv.gz", rows);
  absl::StatusOr<std::string> idx_dir = EnsureDigitsIdx(dir_ + "/cache", csv);
  ASSERT_TRUE(idx_dir.ok()) << idx_dir.status();
  EXPECT_EQ(*idx_dir, dir_ + "/cache/digits");

  absl::StatusOr<IdxArray> images = ReadIdx(*idx_dir + "/" + kDigitsImagesFile);
  ASSERT_TRUE(images.ok()) << images.status();
  EXPECT_EQ(images->type, kIdxF32);
  EXPECT_EQ(images->dims, (std::vector<int64_t>{13, 8, 8}));

  absl::StatusOr<ClassificationData> data = LoadDigits(dir_ + "/cache", csv);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_examples, 13);
  EXPECT_EQ(data->num_classes, 10);
  EXPECT_EQ(data->example_dims, (std::vector<int64_t>{8, 8}));
  for (int r = 0; r < 13; ++r) {
    EXPECT_EQ(data->labels[r], rows[r].label);
    for (int i = 0; i < 64; ++i) {
      const float got = data->features[r * 64 + i];
      ASSERT_TRUE(std::isfinite(got));
      ASSERT_EQ(static_cast<double>(got), rows[r].pixels[i] / 16.0) << r << "," << i;  // exact
    }
  }
  // No temp files left behind.
  struct stat st;
  EXPECT_NE(stat((*idx_dir + "/" + kDigitsLabelsFile + ".tmp." + std::to_string(getpid())).c_str(),
                 &st),
            0);
}

TEST_F(DigitsTest, ReusesCacheAndRebuildsAnIncompleteOne) {
  const std::string csv = WriteCsvGz("digits.csv.gz", RandomRows(5));
  const std::string cache = dir_ + "/cache";
  ASSERT_TRUE(EnsureDigitsIdx(cache, csv).ok());
  // With the csv gone, only the cache can satisfy the call.
  ASSERT_EQ(unlink(csv.c_str()), 0);
  absl::StatusOr<ClassificationData> data = LoadDigits(cache, csv);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_examples, 5);

  // A truncated cache file is not trusted: it is rebuilt from a new csv.
  const std::string labels = cache + "/digits/" + kDigitsLabelsFile;
  ASSERT_EQ(truncate(labels.c_str(), 9), 0);
  EXPECT_FALSE(EnsureDigitsIdx(cache, csv).ok());  // csv is gone: must reconvert, cannot
  WriteCsvGz("digits.csv.gz", RandomRows(7));
  data = LoadDigits(cache, csv);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_examples, 7);
}

TEST_F(DigitsTest, BadRowsNameFileAndLine) {
  std::vector<Row> rows = RandomRows(3);
  const std::string short_row = WriteCsvGz("short.csv.gz", rows, "1,2,3\n");
  absl::StatusOr<std::string> r = EnsureDigitsIdx(dir_ + "/c1", short_row);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), short_row + ":4: expected 65 comma-separated values, got 3");

  rows[1].pixels[10] = 17;
  const std::string bad_pixel = WriteCsvGz("pixel.csv.gz", rows);
  r = EnsureDigitsIdx(dir_ + "/c2", bad_pixel);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), bad_pixel + ":2: pixel 10 is '17', expected 0..16");

  rows = RandomRows(2);
  rows[1].label = 12;
  const std::string bad_label = WriteCsvGz("label.csv.gz", rows);
  r = EnsureDigitsIdx(dir_ + "/c3", bad_label);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), bad_label + ":2: label is '12', expected 0..9");

  const std::string empty = WriteCsvGz("empty.csv.gz", {});
  EXPECT_EQ(EnsureDigitsIdx(dir_ + "/c4", empty).status().message(), empty + ": no digits rows");

  const std::string missing = dir_ + "/missing.csv.gz";
  r = EnsureDigitsIdx(dir_ + "/c5", missing);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find(missing), std::string::npos) << r.status();
}

TEST_F(DigitsTest, FindDigitsCsvOrder) {
  const std::string a = WriteCsvGz("a.csv.gz", RandomRows(1));
  const std::string b = WriteCsvGz("b.csv.gz", RandomRows(1));
  const std::string none = dir_ + "/none.csv.gz";
  unsetenv("MANTISSA_DIGITS_CSV");
  EXPECT_EQ(*FindDigitsCsv(a, b), a);
  EXPECT_EQ(*FindDigitsCsv("", b), b);
  EXPECT_EQ(*FindDigitsCsv(none, b), b);
  setenv("MANTISSA_DIGITS_CSV", b.c_str(), 1);
  EXPECT_EQ(*FindDigitsCsv(a, none), b);
  setenv("MANTISSA_DIGITS_CSV", none.c_str(), 1);
  const absl::StatusOr<std::string> missing = FindDigitsCsv(none + "2", none + "3");
  unsetenv("MANTISSA_DIGITS_CSV");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "digits dataset not found at " + none + ", " + none + "2, " + none +
                "3: install Debian's python3-sklearn (tools/bazel does this)");
}

// The real data set, through the @sklearn_digits runfile.
TEST_F(DigitsTest, RealScikitLearnDigits) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  ASSERT_NE(srcdir, nullptr);
  absl::StatusOr<std::string> csv =
      FindDigitsCsv(std::string(srcdir) + "/sklearn_digits/digits.csv.gz");
  ASSERT_TRUE(csv.ok()) << csv.status();
  absl::StatusOr<ClassificationData> data = LoadDigits(dir_ + "/cache", *csv);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_examples, 1797);
  std::vector<int> per_class(10, 0);
  for (int32_t l : data->labels) ++per_class[l];
  for (int c = 0; c < 10; ++c) {
    EXPECT_GE(per_class[c], 170) << c;  // sklearn: 174..183 per class
    EXPECT_LE(per_class[c], 190) << c;
  }
  double sum = 0;
  for (float f : data->features) {
    ASSERT_TRUE(std::isfinite(f));
    ASSERT_EQ(f * 16, std::round(f * 16));  // multiples of 1/16
    sum += f;
  }
  EXPECT_GT(sum / data->features.size(), 0.1);  // not all zeros
}

}  // namespace
}  // namespace trainer
}  // namespace mnt
