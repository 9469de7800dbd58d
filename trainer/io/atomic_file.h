// Durable, all-or-nothing file writes (used for checkpoints and dataset caches).
#ifndef MANTISSA_TRAINER_IO_ATOMIC_FILE_H_
#define MANTISSA_TRAINER_IO_ATOMIC_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace mnt {
namespace trainer {

// Writes `contents` to `<path>.tmp.<pid>` in the same directory, fsyncs it,
// renames it over `path` and fsyncs the directory. On any failure the temp
// file is removed and an existing `path` is left as it was; the error is one
// line naming the file and the failing step.
absl::Status WriteFileAtomic(const std::string& path, absl::string_view contents);

// Like `mkdir -p`: creates `path` and missing parents (mode 0755). OK if it
// already is a directory.
absl::Status MakeDirectories(const std::string& path);

// Whole file into *contents; NotFound naming the file when it does not exist.
// Only a regular file is read: a directory, FIFO or device is refused, and so
// is a file larger than `max_bytes` (ResourceExhausted naming the limit).
inline constexpr int64_t kNoReadLimit = INT64_MAX;
absl::Status ReadWholeFile(const std::string& path, std::string* contents,
                           int64_t max_bytes = kNoReadLimit);

// OK when `path` is a regular file (following links); otherwise the error
// ReadWholeFile would give.
absl::Status CheckRegularFile(const std::string& path);

// Removes the temp files WriteFileAtomic (and the checkpoint history's link
// step) leave when a process dies mid-write: regular files in `dir` named
// `<name>.tmp.<pid>` whose pid is no longer running. Nothing else is touched.
// Returns the names removed.
std::vector<std::string> RemoveStaleTempFiles(const std::string& dir);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_IO_ATOMIC_FILE_H_
