// IDX files (the MNIST format): magic 0x0000TTNN (TT element type, NN number
// of dims), NN big-endian u32 dims, then the elements big-endian, row-major.
// Supported: TT = 0x08 (u8) and 0x0D (f32).
#ifndef MANTISSA_TRAINER_DATA_IDX_H_
#define MANTISSA_TRAINER_DATA_IDX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace mnt {
namespace trainer {

inline constexpr uint8_t kIdxU8 = 0x08;
inline constexpr uint8_t kIdxF32 = 0x0D;

struct IdxArray {
  uint8_t type = kIdxU8;      // kIdxU8 or kIdxF32
  std::vector<int64_t> dims;  // 1..255 dims, each < 2^32
  std::vector<uint8_t> u8;    // elements when type == kIdxU8
  std::vector<float> f32;     // elements when type == kIdxF32
};

// Missing file, bad magic, truncated or oversized data: one line naming the file.
absl::StatusOr<IdxArray> ReadIdx(const std::string& path);

// The same on a file's bytes; `path` names it in errors (the fuzz target's
// entry, tools/fuzz).
absl::StatusOr<IdxArray> ParseIdx(const std::string& bytes, const std::string& path);

// The file's bytes; InvalidArgument if dims and element count disagree.
absl::StatusOr<std::string> EncodeIdx(const IdxArray& array);

// EncodeIdx + atomic write (a crash never leaves a half-written file).
absl::Status WriteIdx(const std::string& path, const IdxArray& array);

// Reads an images file (u8 scaled by 1/255, or f32 taken as is and required
// finite; at least 2 dims, the first counts examples) and a labels file (u8,
// 1 dim). Errors name the file: example counts that differ, a label >=
// num_classes. num_classes == 0 means max label + 1 (pass the training set's
// count when reading a test set, which may lack a class).
absl::StatusOr<ClassificationData> ReadIdxClassification(const std::string& images_path,
                                                         const std::string& labels_path,
                                                         int64_t num_classes = 0);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_IDX_H_
