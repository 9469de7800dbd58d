// Checkpoint files: framed, checksummed CheckpointData written atomically.
//
// Layout (little-endian):
//   8 bytes  magic "MNTCKPT\0"
//   u32      format version (kCheckpointFormatVersion)
//   u64      payload length N
//   N bytes  payload: serialized mantissa.CheckpointData
//   u32      CRC-32 (zlib) of the payload
#ifndef MANTISSA_TRAINER_CHECKPOINT_CHECKPOINT_H_
#define MANTISSA_TRAINER_CHECKPOINT_CHECKPOINT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "trainer/checkpoint/checkpoint.pb.h"

namespace mnt {
namespace trainer {

using ::mantissa::CheckpointData;
using ::mantissa::TensorData;

inline constexpr uint32_t kCheckpointFormatVersion = 1;
inline constexpr char kCheckpointMagic[8] = {'M', 'N', 'T', 'C', 'K', 'P', 'T', '\0'};
inline constexpr size_t kCheckpointHeaderBytes = 8 + 4 + 8;

// The file resume reads: "<checkpoint_dir>/latest".
std::string LatestCheckpointPath(const std::string& checkpoint_dir);

// The framed bytes of `data` (format_version stamped; deterministic
// serialization, so equal data gives equal bytes). Checks tensor sizes.
absl::StatusOr<std::string> EncodeCheckpoint(const CheckpointData& data);

// Parses framed bytes; `source` names the file in error messages.
absl::StatusOr<CheckpointData> DecodeCheckpoint(const std::string& bytes,
                                                const std::string& source);

// EncodeCheckpoint + WriteFileAtomic: on failure an existing `path` is untouched.
absl::Status WriteCheckpointAtomic(const std::string& path, const CheckpointData& data);

// Reads and verifies a checkpoint. Missing file (NotFound), bad magic,
// unsupported version, truncation, CRC mismatch, unparsable payload, or a
// tensor whose byte size disagrees with its dims: one line naming the file.
absl::StatusOr<CheckpointData> ReadCheckpoint(const std::string& path);

// OK when the checkpoint was written for the same model, model options and
// precision; otherwise FailedPrecondition naming the field and both values.
absl::Status CheckCompatible(const CheckpointData& data, const std::string& model,
                             const std::string& model_options, const std::string& precision);

// Bytes per element of an MNT_DType value; 0 for an unknown one.
int64_t DTypeSize(int32_t dtype);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_CHECKPOINT_CHECKPOINT_H_
