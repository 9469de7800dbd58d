// TFRecord framing, the container of TensorBoard's event files: each record
// is
//   uint64 length        (little-endian)
//   uint32 masked CRC-32C of the 8 length bytes
//   byte   payload[length]
//   uint32 masked CRC-32C of the payload
// and records are concatenated with nothing in between.
#ifndef MANTISSA_TRAINER_TENSORBOARD_TFRECORD_H_
#define MANTISSA_TRAINER_TENSORBOARD_TFRECORD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace mnt::tensorboard {

// Appends one framed record holding `payload` to *out.
void AppendRecord(absl::string_view payload, std::string* out);

// The payloads of the records in `bytes`, in order. A truncated record, a
// length or payload whose CRC does not match, or trailing bytes are
// DataLoss errors naming the record's index and byte offset.
absl::StatusOr<std::vector<std::string>> ReadRecords(absl::string_view bytes);

}  // namespace mnt::tensorboard

#endif  // MANTISSA_TRAINER_TENSORBOARD_TFRECORD_H_
