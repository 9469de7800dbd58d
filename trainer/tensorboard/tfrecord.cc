#include "trainer/tensorboard/tfrecord.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "trainer/tensorboard/crc32c.h"

namespace mnt::tensorboard {
namespace {

// The format is little-endian whatever the host: bytes are written one by one.
void AppendLittleEndian(uint64_t v, int bytes, std::string* out) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

uint64_t LoadLittleEndian(absl::string_view bytes, size_t at, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) {
    v = (v << 8) | static_cast<unsigned char>(bytes[at + i]);
  }
  return v;
}

}  // namespace

void AppendRecord(absl::string_view payload, std::string* out) {
  std::string length;
  AppendLittleEndian(payload.size(), 8, &length);
  out->append(length);
  AppendLittleEndian(MaskCrc(Crc32c(length.data(), length.size())), 4, out);
  out->append(payload.data(), payload.size());
  AppendLittleEndian(MaskCrc(Crc32c(payload.data(), payload.size())), 4, out);
}

absl::StatusOr<std::vector<std::string>> ReadRecords(absl::string_view bytes) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < bytes.size()) {
    const std::string where =
        absl::StrCat("record ", records.size(), " at byte ", at);
    if (bytes.size() - at < 12) {
      return absl::DataLossError(absl::StrCat(where, ": truncated header"));
    }
    const uint64_t length = LoadLittleEndian(bytes, at, 8);
    const uint32_t length_crc = static_cast<uint32_t>(LoadLittleEndian(bytes, at + 8, 4));
    if (MaskCrc(Crc32c(bytes.data() + at, 8)) != length_crc) {
      return absl::DataLossError(absl::StrCat(where, ": length CRC mismatch"));
    }
    if (length > bytes.size() - at - 12 || bytes.size() - at - 12 - length < 4) {
      return absl::DataLossError(
          absl::StrCat(where, ": truncated payload of ", length, " bytes"));
    }
    const absl::string_view payload = bytes.substr(at + 12, length);
    const uint32_t payload_crc =
        static_cast<uint32_t>(LoadLittleEndian(bytes, at + 12 + length, 4));
    if (MaskCrc(Crc32c(payload.data(), payload.size())) != payload_crc) {
      return absl::DataLossError(absl::StrCat(where, ": payload CRC mismatch"));
    }
    records.emplace_back(payload);
    at += 12 + length + 4;
  }
  return records;
}

}  // namespace mnt::tensorboard
