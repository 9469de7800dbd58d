#include "trainer/data/idx.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "trainer/io/atomic_file.h"

namespace mnt {
namespace trainer {
namespace {

class IdxTest : public testing::Test {
 protected:
  void SetUp() override {
    const unsigned seed = std::random_device{}();
    std::cout << "seed " << seed << "\n";
    rng_.seed(seed);
    const char* base = std::getenv("TEST_TMPDIR");
    dir_ = std::string(base ? base : "/tmp") + "/idx_" +
           testing::UnitTest::GetInstance()->current_test_info()->name();
    ASSERT_TRUE(MakeDirectories(dir_).ok());
  }

  IdxArray RandomImages(int64_t n, int64_t h, int64_t w) {
    IdxArray a;
    a.type = kIdxU8;
    a.dims = {n, h, w};
    for (int64_t i = 0; i < n * h * w; ++i) a.u8.push_back(static_cast<uint8_t>(rng_() & 0xff));
    return a;
  }

  IdxArray RandomLabels(int64_t n, int classes) {
    IdxArray a;
    a.type = kIdxU8;
    a.dims = {n};
    for (int64_t i = 0; i < n; ++i) a.u8.push_back(static_cast<uint8_t>(rng_() % classes));
    return a;
  }

  std::string Write(const std::string& name, const IdxArray& a) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteIdx(path, a).ok());
    return path;
  }

  std::string WriteRaw(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteFileAtomic(path, bytes).ok());
    return path;
  }

  std::mt19937_64 rng_;
  std::string dir_;
};

TEST_F(IdxTest, U8RoundTripAndMnistHeader) {
  const IdxArray images = RandomImages(5, 28, 28);
  const std::string path = Write("images", images);
  absl::StatusOr<IdxArray> back = ReadIdx(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->type, kIdxU8);
  EXPECT_EQ(back->dims, images.dims);
  EXPECT_EQ(back->u8, images.u8);
  std::string raw;
  ASSERT_TRUE(ReadWholeFile(path, &raw).ok());
  // The exact bytes MNIST's train-images file starts with (0x803, dims BE).
  EXPECT_EQ(raw.substr(0, 16),
            std::string("\x00\x00\x08\x03\x00\x00\x00\x05\x00\x00\x00\x1c\x00\x00\x00\x1c", 16));
  EXPECT_EQ(raw.size(), 16u + 5 * 28 * 28);
}

TEST_F(IdxTest, F32RoundTripIsBitExact) {
  IdxArray a;
  a.type = kIdxF32;
  a.dims = {3, 4, 5};
  std::uniform_real_distribution<float> u(-1e6f, 1e6f);
  for (int i = 0; i < 60; ++i) a.f32.push_back(u(rng_));
  a.f32[0] = -0.0f;
  a.f32[1] = std::nextafter(0.0f, 1.0f);  // denormal
  absl::StatusOr<IdxArray> back = ReadIdx(Write("f32", a));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->f32.size(), a.f32.size());
  EXPECT_EQ(std::memcmp(back->f32.data(), a.f32.data(), 60 * 4), 0);
  EXPECT_TRUE(std::signbit(back->f32[0]));
}

TEST_F(IdxTest, ClassificationScalesU8AndChecksLabels) {
  const IdxArray images = RandomImages(50, 4, 3);
  const IdxArray labels = RandomLabels(50, 10);
  absl::StatusOr<ClassificationData> data =
      ReadIdxClassification(Write("img", images), Write("lab", labels), 10);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_examples, 50);
  EXPECT_EQ(data->example_dims, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(data->num_classes, 10);
  ASSERT_EQ(data->features.size(), 600u);
  for (size_t i = 0; i < 600; ++i) {
    const double want = images.u8[i] / 255.0;  // float64 reference
    ASSERT_TRUE(std::isfinite(data->features[i]));
    ASSERT_NEAR(data->features[i], want, 1e-7) << i;
    ASSERT_GE(data->features[i], 0.0f);
    ASSERT_LE(data->features[i], 1.0f);
  }
  for (int i = 0; i < 50; ++i) EXPECT_EQ(data->labels[i], labels.u8[i]);
}

TEST_F(IdxTest, InfersClassCountWhenNotGiven) {
  IdxArray labels = RandomLabels(20, 4);
  labels.u8[7] = 6;
  absl::StatusOr<ClassificationData> data =
      ReadIdxClassification(Write("img", RandomImages(20, 2, 2)), Write("lab", labels));
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->num_classes, 7);
}

TEST_F(IdxTest, MissingFile) {
  const std::string path = dir_ + "/absent.idx";
  absl::StatusOr<IdxArray> r = ReadIdx(path);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(r.status().message()).find(path), std::string::npos) << r.status();
}

TEST_F(IdxTest, BadMagic) {
  for (const std::string& magic :
       {std::string("\x01\x00\x08\x01", 4), std::string("\x00\x00\x09\x01", 4),
        std::string("\x00\x00\x08\x00", 4), std::string("GIF8", 4)}) {
    const std::string path = WriteRaw("magic", magic + std::string(8, '\0'));
    absl::StatusOr<IdxArray> r = ReadIdx(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(std::string(r.status().message()).rfind(path + ": bad IDX magic 0x", 0), 0u)
        << r.status();
  }
}

TEST_F(IdxTest, TruncatedAtEveryPoint) {
  absl::StatusOr<std::string> bytes = EncodeIdx(RandomImages(3, 5, 5));
  ASSERT_TRUE(bytes.ok());
  for (size_t cut = 0; cut < bytes->size(); cut += 1 + rng_() % 7) {
    SCOPED_TRACE(cut);
    const std::string path = WriteRaw("cut", bytes->substr(0, cut));
    absl::StatusOr<IdxArray> r = ReadIdx(path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_EQ(std::string(r.status().message()).rfind(path + ": truncated IDX", 0), 0u)
        << r.status();
  }
  const std::string path = WriteRaw("long", *bytes + "zz");
  EXPECT_EQ(ReadIdx(path).status().message(),
            path + ": IDX file has 2 bytes beyond the data for dims 3x5x5");
}

TEST_F(IdxTest, HugeDimsAreTruncationNotACrash) {
  // 4 dims of 2^32-1: the element count overflows 64 bits.
  const std::string path = WriteRaw("huge", std::string("\x00\x00\x08\x04", 4) +
                                                std::string(16, '\xff') + "data");
  absl::StatusOr<IdxArray> r = ReadIdx(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("truncated IDX data"), std::string::npos);
}

TEST_F(IdxTest, ExampleCountMismatchNamesBothFiles) {
  const std::string images = Write("img", RandomImages(10, 2, 2));
  const std::string labels = Write("lab", RandomLabels(9, 3));
  absl::StatusOr<ClassificationData> r = ReadIdxClassification(images, labels, 3);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), images + " has 10 examples but " + labels + " has 9 labels");
}

TEST_F(IdxTest, LabelOutOfRangeNamesFileAndExample) {
  IdxArray labels = RandomLabels(10, 10);
  labels.u8[6] = 10;
  const std::string labels_path = Write("lab", labels);
  absl::StatusOr<ClassificationData> r =
      ReadIdxClassification(Write("img", RandomImages(10, 2, 2)), labels_path, 10);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), labels_path + ": example 6 has label 10, expected < 10 classes");
}

TEST_F(IdxTest, WrongShapesAndNonFiniteFloats) {
  const std::string labels = Write("lab", RandomLabels(4, 2));
  IdxArray flat = RandomLabels(4, 2);  // 1-D "images"
  EXPECT_FALSE(ReadIdxClassification(Write("flat", flat), labels, 2).ok());
  EXPECT_FALSE(ReadIdxClassification(Write("img", RandomImages(4, 2, 2)),
                                     Write("img2d", RandomImages(4, 1, 1)), 2)
                   .ok());  // 3-D labels
  IdxArray f;
  f.type = kIdxF32;
  f.dims = {4, 2};
  f.f32 = {0, 0.5f, 1, 0, 0, NAN, 0, 0};
  const absl::StatusOr<ClassificationData> r = ReadIdxClassification(Write("nan", f), labels, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("non-finite value in example 2"),
            std::string::npos)
      << r.status();
}

TEST_F(IdxTest, EncodeRefusesInconsistentArrays) {
  IdxArray a = RandomImages(2, 2, 2);
  a.u8.pop_back();
  EXPECT_FALSE(EncodeIdx(a).ok());
  a.dims.clear();
  EXPECT_FALSE(EncodeIdx(a).ok());
}

}  // namespace
}  // namespace trainer
}  // namespace mnt
