#include "trainer/tensorboard/crc32c.h"

#include <array>

namespace mnt::tensorboard {
namespace {

// One table entry per byte value: the CRC of that byte alone, shifted
// through the reflected polynomial bit by bit. Event files are small (a
// record per metric per step), so a byte-at-a-time loop is plenty.
std::array<uint32_t, 256> MakeTable() {
  constexpr uint32_t kPolynomial = 0x82F63B78u;
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) {
      crc = (crc & 1u) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    }
    table[i] = crc;
  }
  return table;
}

}  // namespace

uint32_t Crc32c(const void* data, size_t size) {
  static const std::array<uint32_t, 256> kTable = MakeTable();
  const auto* p = static_cast<const unsigned char*>(data);
  uint32_t crc = 0xFFFFFFFFu;
  for (size_t i = 0; i < size; ++i) {
    crc = kTable[(crc ^ p[i]) & 0xFFu] ^ (crc >> 8);
  }
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace mnt::tensorboard
