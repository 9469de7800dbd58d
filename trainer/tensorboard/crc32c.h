// CRC-32C (Castagnoli), the checksum TFRecord files (and so TensorBoard's
// event files) use, and the "masked" form they store.
#ifndef MANTISSA_TRAINER_TENSORBOARD_CRC32C_H_
#define MANTISSA_TRAINER_TENSORBOARD_CRC32C_H_

#include <cstddef>
#include <cstdint>

namespace mnt::tensorboard {

// CRC-32C of `size` bytes (reflected polynomial 0x82F63B78, initial value and
// final xor 0xFFFFFFFF): Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(const void* data, size_t size);

// TFRecord stores CRCs rotated right by 15 bits plus a constant, so that a
// CRC computed over data that itself contains CRCs is not trivially zero.
inline uint32_t MaskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline uint32_t UnmaskCrc(uint32_t masked) {
  const uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace mnt::tensorboard

#endif  // MANTISSA_TRAINER_TENSORBOARD_CRC32C_H_
