// CRC-32C against published check values, the mask TFRecord applies, and the
// record framing byte by byte; corrupted or truncated files are refused.
#include "trainer/tensorboard/tfrecord.h"

#include <cstdint>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "trainer/tensorboard/crc32c.h"

namespace mnt::tensorboard {
namespace {

uint64_t LittleEndianAt(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(s[at + i])) << (8 * i);
  }
  return v;
}

TEST(Crc32cTest, PublishedCheckValues) {
  // The CRC catalogue's check value, and the four vectors of RFC 3720 B.4.
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, 0), down(32, 0);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<char>(i);
    down[i] = static_cast<char>(31 - i);
  }
  EXPECT_EQ(Crc32c(zeros.data(), 32), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(ones.data(), 32), 0x62A8AB43u);
  EXPECT_EQ(Crc32c(up.data(), 32), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(down.data(), 32), 0x113FDB5Cu);
}

TEST(Crc32cTest, MaskRotatesRightBy15AndAddsTheConstant) {
  EXPECT_EQ(MaskCrc(0), 0xA282EAD8u);
  EXPECT_EQ(MaskCrc(1), 0x00020000u + 0xA282EAD8u);          // bit 0 -> bit 17
  EXPECT_EQ(MaskCrc(0x8000u), 0x00000001u + 0xA282EAD8u);    // bit 15 -> bit 0
  std::mt19937 rng(std::random_device{}());
  for (int i = 0; i < 1000; ++i) {
    const uint32_t crc = rng();
    EXPECT_EQ(UnmaskCrc(MaskCrc(crc)), crc);
  }
}

TEST(TfRecordTest, FramingByteByByte) {
  std::string out;
  AppendRecord("abc", &out);
  ASSERT_EQ(out.size(), 8u + 4 + 3 + 4);
  EXPECT_EQ(LittleEndianAt(out, 0, 8), 3u);
  EXPECT_EQ(LittleEndianAt(out, 8, 4), MaskCrc(Crc32c(out.data(), 8)));
  EXPECT_EQ(out.substr(12, 3), "abc");
  EXPECT_EQ(LittleEndianAt(out, 15, 4), MaskCrc(Crc32c("abc", 3)));
  // The length header of a 3-byte record, checked against a CRC-32C computed
  // here bit by bit (independent of the table in crc32c.cc).
  uint32_t crc = 0xFFFFFFFFu;
  for (int i = 0; i < 8; ++i) {
    crc ^= static_cast<unsigned char>(out[i]);
    for (int b = 0; b < 8; ++b) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  EXPECT_EQ(LittleEndianAt(out, 8, 4), MaskCrc(~crc));
}

std::vector<std::string> RandomPayloads(std::mt19937* rng) {
  std::vector<std::string> payloads;
  const int n = 1 + (*rng)() % 8;
  for (int i = 0; i < n; ++i) {
    std::string p((*rng)() % 300, '\0');
    for (char& c : p) c = static_cast<char>((*rng)() & 0xFF);
    payloads.push_back(p);
  }
  return payloads;
}

TEST(TfRecordTest, RoundTripOfRandomRecords) {
  std::mt19937 rng(std::random_device{}());
  for (int trial = 0; trial < 20; ++trial) {
    const std::vector<std::string> payloads = RandomPayloads(&rng);
    std::string file;
    for (const std::string& p : payloads) AppendRecord(p, &file);
    auto read = ReadRecords(file);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, payloads);
  }
}

TEST(TfRecordTest, AnyFlippedBitOrTruncationIsRefused) {
  std::mt19937 rng(std::random_device{}());
  const std::vector<std::string> payloads = RandomPayloads(&rng);
  std::string file;
  for (const std::string& p : payloads) AppendRecord(p, &file);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bad = file;
    const size_t at = rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 << (rng() % 8)));
    EXPECT_FALSE(ReadRecords(bad).ok()) << "flipped a bit of byte " << at;
  }
  for (size_t cut = 1; cut < 16 && cut <= file.size(); ++cut) {
    EXPECT_FALSE(ReadRecords(file.substr(0, file.size() - cut)).ok()) << cut;
  }
  EXPECT_FALSE(ReadRecords(file + "x").ok());
}

}  // namespace
}  // namespace mnt::tensorboard
