#include "trainer/checkpoint/checkpoint.h"

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "plugins/abi/mnt_common.h"
#include "trainer/io/atomic_file.h"

namespace mnt {
namespace trainer {
namespace {

using ::google::protobuf::util::MessageDifferencer;

std::string TestDir(const std::string& name) {
  const char* base = std::getenv("TEST_TMPDIR");
  const std::string dir = std::string(base ? base : "/tmp") + "/ckpt_" + name;
  EXPECT_TRUE(MakeDirectories(dir).ok());
  return dir;
}

// A checkpoint with random float tensors (including NaN/Inf/-0 bit patterns,
// which must come back bit-exact), metadata and scaler/sampler state.
CheckpointData RandomCheckpoint(std::mt19937_64* rng) {
  CheckpointData d;
  d.set_model("mlp");
  d.set_model_options("hidden=32:16,activation=relu");
  d.set_precision("bf16");
  d.set_step(static_cast<int64_t>((*rng)() % 100000));
  for (int t = 0; t < 4; ++t) {
    TensorData* tensor = d.add_tensors();
    tensor->set_name("w" + std::to_string(t));
    const int64_t rows = 1 + (*rng)() % 40, cols = 1 + (*rng)() % 40;
    tensor->add_dims(rows);
    tensor->add_dims(cols);
    tensor->set_dtype(t == 3 ? MNT_DTYPE_BF16 : MNT_DTYPE_F32);
    const int64_t bytes = rows * cols * DTypeSize(tensor->dtype());
    std::string data(bytes, '\0');
    for (char& c : data) c = static_cast<char>((*rng)() & 0xff);
    if (t == 0) {
      const uint32_t specials[] = {0x7fc00001u /*NaN payload*/, 0x7f800000u /*inf*/, 0x80000000u /*-0*/};
      std::memcpy(&data[0], specials, std::min<size_t>(sizeof(specials), data.size()));
    }
    tensor->set_data(data);
  }
  (*d.mutable_metadata())["config"] = "steps: 10\n";
  (*d.mutable_metadata())["git"] = "abc123";
  d.set_rng_state(std::string("\x00\x01\xff\x7f", 4));
  d.set_sampler_seed((*rng)());
  d.set_sampler_epoch(3);
  d.set_sampler_cursor(17);
  d.set_loss_scale(32768.0f);
  d.set_loss_scale_growth_tracker(123);
  d.set_loss_scale_skipped_steps(4);
  return d;
}

CheckpointData WithVersionCleared(CheckpointData d) {
  d.set_format_version(0);
  return d;
}

class CheckpointTest : public testing::Test {
 protected:
  void SetUp() override {
    seed_ = std::random_device{}();
    rng_.seed(seed_);
    std::cout << "seed " << seed_ << "\n";
  }
  unsigned seed_ = 0;
  std::mt19937_64 rng_;
};

TEST_F(CheckpointTest, RoundTripIsBitExact) {
  const std::string path = TestDir("roundtrip") + "/latest";
  for (int trial = 0; trial < 5; ++trial) {
    CheckpointData original = RandomCheckpoint(&rng_);
    ASSERT_TRUE(WriteCheckpointAtomic(path, original).ok());
    absl::StatusOr<CheckpointData> back = ReadCheckpoint(path);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->format_version(), static_cast<int32_t>(kCheckpointFormatVersion));
    original.set_format_version(kCheckpointFormatVersion);
    ASSERT_EQ(back->tensors_size(), original.tensors_size());
    for (int i = 0; i < original.tensors_size(); ++i) {
      EXPECT_TRUE(back->tensors(i).data() == original.tensors(i).data()) << "tensor " << i;
    }
    EXPECT_TRUE(MessageDifferencer::Equals(*back, original));
    // The same bytes whether or not the caller pre-set the version.
    absl::StatusOr<std::string> unstamped = EncodeCheckpoint(WithVersionCleared(original));
    ASSERT_TRUE(unstamped.ok());
    // Deterministic encoding: re-encoding what was read gives the same file.
    std::string file;
    ASSERT_TRUE(ReadWholeFile(path, &file).ok());
    absl::StatusOr<std::string> again = EncodeCheckpoint(*back);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(*again == file);
    EXPECT_TRUE(*unstamped == file);  // not EXPECT_EQ: it would dump megabytes of binary
  }
}

TEST_F(CheckpointTest, HeaderLayoutIsAsDocumented) {
  CheckpointData d = RandomCheckpoint(&rng_);
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(d);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->substr(0, 8), std::string("MNTCKPT\0", 8));
  EXPECT_EQ(bytes->substr(8, 4), std::string("\x01\x00\x00\x00", 4));
  uint64_t length = 0;
  for (int i = 0; i < 8; ++i) length |= uint64_t{static_cast<unsigned char>((*bytes)[12 + i])} << (8 * i);
  EXPECT_EQ(length + kCheckpointHeaderBytes + 4, bytes->size());
}

TEST_F(CheckpointTest, TruncationAtAnyOffsetIsReported) {
  const std::string dir = TestDir("truncated");
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(RandomCheckpoint(&rng_));
  ASSERT_TRUE(bytes.ok());
  std::vector<size_t> cuts = {0, 3, 8, 12, 19, 20, 21, bytes->size() / 2, bytes->size() - 4,
                              bytes->size() - 1};
  for (int i = 0; i < 5; ++i) cuts.push_back(rng_() % bytes->size());
  for (size_t cut : cuts) {
    SCOPED_TRACE(cut);
    const std::string path = dir + "/cut_" + std::to_string(cut);
    ASSERT_TRUE(WriteFileAtomic(path, bytes->substr(0, cut)).ok());
    absl::StatusOr<CheckpointData> back = ReadCheckpoint(path);
    ASSERT_FALSE(back.ok());
    const std::string msg(back.status().message());
    EXPECT_EQ(msg.rfind(path + ": truncated checkpoint", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

TEST_F(CheckpointTest, TrailingGarbageIsReported) {
  const std::string path = TestDir("trailing") + "/ckpt";
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(RandomCheckpoint(&rng_));
  ASSERT_TRUE(bytes.ok());
  ASSERT_TRUE(WriteFileAtomic(path, *bytes + "xx").ok());
  absl::StatusOr<CheckpointData> back = ReadCheckpoint(path);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().message(), path + ": 2 unexpected bytes after the checkpoint's CRC");
}

TEST_F(CheckpointTest, FlippedPayloadByteIsACrcError) {
  const std::string path = TestDir("flipped") + "/ckpt";
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(RandomCheckpoint(&rng_));
  ASSERT_TRUE(bytes.ok());
  for (int i = 0; i < 10; ++i) {
    std::string corrupt = *bytes;
    // Anywhere in the payload or the stored CRC itself.
    const size_t at = kCheckpointHeaderBytes + rng_() % (corrupt.size() - kCheckpointHeaderBytes);
    corrupt[at] ^= static_cast<char>(1 << (rng_() % 8));
    ASSERT_TRUE(WriteFileAtomic(path, corrupt).ok());
    absl::StatusOr<CheckpointData> back = ReadCheckpoint(path);
    ASSERT_FALSE(back.ok()) << "flip at " << at;
    EXPECT_EQ(back.status().code(), absl::StatusCode::kDataLoss);
    EXPECT_NE(std::string(back.status().message()).find(path + ": checkpoint CRC mismatch"),
              std::string::npos)
        << back.status();
  }
}

TEST_F(CheckpointTest, BadMagicAndVersion) {
  const std::string dir = TestDir("header");
  absl::StatusOr<std::string> bytes = EncodeCheckpoint(RandomCheckpoint(&rng_));
  ASSERT_TRUE(bytes.ok());

  std::string bad_magic = *bytes;
  bad_magic[0] = 'X';
  ASSERT_TRUE(WriteFileAtomic(dir + "/magic", bad_magic).ok());
  absl::StatusOr<CheckpointData> back = ReadCheckpoint(dir + "/magic");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().message(), dir + "/magic is not a Mantissa checkpoint (bad magic)");

  ASSERT_TRUE(WriteFileAtomic(dir + "/text", "hello world, definitely not a checkpoint").ok());
  EXPECT_EQ(ReadCheckpoint(dir + "/text").status().message(),
            dir + "/text is not a Mantissa checkpoint (bad magic)");

  std::string future = *bytes;
  future[8] = 2;
  ASSERT_TRUE(WriteFileAtomic(dir + "/version", future).ok());
  back = ReadCheckpoint(dir + "/version");
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().message(),
            dir + "/version: unsupported checkpoint format version 2 (this build reads version 1)");
}

TEST_F(CheckpointTest, UnparsablePayloadWithValidCrc) {
  // Well-framed garbage: CRC matches but the bytes are no CheckpointData.
  const std::string path = TestDir("garbage") + "/ckpt";
  const std::string payload = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";
  std::string file(kCheckpointMagic, 8);
  file += std::string("\x01\x00\x00\x00", 4);
  file.push_back(static_cast<char>(payload.size()));
  file += std::string(7, '\0');
  file += payload;
  uint32_t crc = 0xffffffffu;  // bitwise CRC-32 (reflected 0xEDB88320), independent of zlib
  for (unsigned char c : payload) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc ^= 0xffffffffu;
  for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  ASSERT_TRUE(WriteFileAtomic(path, file).ok());
  absl::StatusOr<CheckpointData> back = ReadCheckpoint(path);
  ASSERT_FALSE(back.ok());
  EXPECT_EQ(back.status().message(), path + ": checkpoint payload does not parse as CheckpointData");
}

TEST_F(CheckpointTest, MissingFileIsNotFound) {
  const std::string path = TestDir("missing") + "/latest";
  absl::StatusOr<CheckpointData> back = ReadCheckpoint(path);
  EXPECT_EQ(back.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(back.status().message()).find(path), std::string::npos);
}

TEST_F(CheckpointTest, FailedWriteLeavesExistingCheckpointUntouched) {
  const std::string dir = TestDir("failed_write");
  const std::string path = dir + "/latest";
  const CheckpointData good = RandomCheckpoint(&rng_);
  ASSERT_TRUE(WriteCheckpointAtomic(path, good).ok());
  std::string before;
  ASSERT_TRUE(ReadWholeFile(path, &before).ok());

  // 1) The temp file cannot be created: a directory is squatting on its name.
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  ASSERT_TRUE(MakeDirectories(tmp).ok());
  EXPECT_FALSE(WriteCheckpointAtomic(path, RandomCheckpoint(&rng_)).ok());
  ASSERT_EQ(rmdir(tmp.c_str()), 0);

  // 2) Invalid data is refused before anything is written.
  CheckpointData inconsistent = RandomCheckpoint(&rng_);
  inconsistent.mutable_tensors(0)->mutable_data()->pop_back();
  const absl::Status s = WriteCheckpointAtomic(path, inconsistent);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("tensor 'w0' has"), std::string::npos) << s;

  // 3) A directory that does not exist.
  EXPECT_FALSE(WriteCheckpointAtomic(dir + "/nope/latest", good).ok());

  std::string after;
  ASSERT_TRUE(ReadWholeFile(path, &after).ok());
  EXPECT_EQ(after, before);
  absl::StatusOr<CheckpointData> back = ReadCheckpoint(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->step(), good.step());
}

TEST(EncodeCheckpointTest, RefusesAForeignFormatVersion) {
  CheckpointData d;
  d.set_format_version(7);
  const absl::StatusOr<std::string> bytes = EncodeCheckpoint(d);
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().message(),
            "checkpoint to write has format_version 7; this build writes 1 (leave it 0 to have it "
            "stamped)");
}

TEST(CheckCompatibleTest, NamesTheMismatchedFieldAndBothValues) {
  CheckpointData d;
  d.set_model("mlp");
  d.set_model_options("hidden=64");
  d.set_precision("bf16");
  EXPECT_TRUE(CheckCompatible(d, "mlp", "hidden=64", "bf16").ok());
  EXPECT_EQ(CheckCompatible(d, "cnn", "hidden=64", "bf16").message(),
            "checkpoint is incompatible: it was written with --model=\"mlp\" but this run uses "
            "--model=\"cnn\"");
  EXPECT_EQ(CheckCompatible(d, "mlp", "hidden=128", "bf16").message(),
            "checkpoint is incompatible: it was written with --model_options=\"hidden=64\" but "
            "this run uses --model_options=\"hidden=128\"");
  const absl::Status s = CheckCompatible(d, "mlp", "hidden=64", "fp16");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(),
            "checkpoint is incompatible: it was written with --precision=\"bf16\" but this run "
            "uses --precision=\"fp16\"");
}

TEST(DTypeSizeTest, MatchesAbi) {
  EXPECT_EQ(DTypeSize(MNT_DTYPE_F32), 4);
  EXPECT_EQ(DTypeSize(MNT_DTYPE_F16), 2);
  EXPECT_EQ(DTypeSize(MNT_DTYPE_BF16), 2);
  EXPECT_EQ(DTypeSize(MNT_DTYPE_I32), 4);
  EXPECT_EQ(DTypeSize(MNT_DTYPE_U8), 1);
  EXPECT_EQ(DTypeSize(MNT_DTYPE_F64), 8);
  EXPECT_EQ(DTypeSize(MNT_DTYPE_INVALID), 0);
  EXPECT_EQ(DTypeSize(99), 0);
}

}  // namespace
}  // namespace trainer
}  // namespace mnt
