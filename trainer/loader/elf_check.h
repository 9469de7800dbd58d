// What dlopen() takes on trust, checked first: a truncated or foreign plugin
// file makes the dynamic loader map pages past the file's end (SIGBUS) or
// fail obscurely. A file that passes has every table and segment inside it.
#ifndef MANTISSA_TRAINER_LOADER_ELF_CHECK_H_
#define MANTISSA_TRAINER_LOADER_ELF_CHECK_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace mnt::trainer {

// OK when the file at `path` is a 64-bit little-endian ELF shared object
// for this machine whose program headers, segments, section table and
// sections all lie inside the file. Otherwise InvalidArgument saying what is
// wrong (without the file name: the caller adds it).
absl::Status CheckElfSharedObject(const std::string& path);

// The same check on a whole file's bytes in memory (tests, the fuzz target).
absl::Status CheckElfBytes(absl::string_view bytes);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_LOADER_ELF_CHECK_H_
