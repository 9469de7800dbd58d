// libFuzzer target: checkpoint file bytes -> DecodeCheckpoint (framing, CRC,
// protobuf payload, tensor sizes). Any input may be refused; none may crash,
// read out of bounds or hit undefined behaviour. The CRC is usually wrong
// for mutated input, so half the inputs get a fixed-up CRC and reach the
// protobuf parser and the tensor checks.
#include <cstddef>
#include <cstdint>
#include <string>

#include <zlib.h>

#include "trainer/checkpoint/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  (void)mnt::trainer::DecodeCheckpoint(bytes, "fuzz");
  // Same bytes with the trailing CRC made to match the payload the header
  // promises (when it fits), so the parser behind the CRC is exercised too.
  constexpr size_t kHeader = mnt::trainer::kCheckpointHeaderBytes;
  if (size >= kHeader + 4) {
    uint64_t payload = 0;
    for (int i = 0; i < 8; ++i) payload |= uint64_t{data[12 + i]} << (8 * i);
    if (payload <= size - kHeader - 4) {
      bytes.resize(kHeader + payload + 4);
      const uint32_t crc = static_cast<uint32_t>(
          crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + kHeader),
                static_cast<uInt>(payload)));
      for (int i = 0; i < 4; ++i) bytes[kHeader + payload + i] = static_cast<char>(crc >> (8 * i));
      (void)mnt::trainer::DecodeCheckpoint(bytes, "fuzz");
    }
  }
  return 0;
}
