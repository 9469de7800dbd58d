// Byte counts as the run report, the dry run and the memory estimate print
// them ("637.3 KiB", "26.68 MiB", "105.96 GiB"): one format, so their
// figures compare as text.
#ifndef MANTISSA_TRAINER_TEXT_BYTE_SIZE_H_
#define MANTISSA_TRAINER_TEXT_BYTE_SIZE_H_

#include <cstdint>
#include <string>

namespace mnt::trainer {

// Binary units: B below 1 KiB, then KiB (one decimal), MiB and GiB (two).
std::string FormatBytes(int64_t bytes);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_TEXT_BYTE_SIZE_H_
