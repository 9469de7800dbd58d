// Byte-level text: every byte of the text is one token (vocab 256). The text
// is one file or several (--text_path='notes/*.txt,more.txt').
#ifndef MANTISSA_TRAINER_DATA_TEXT_H_
#define MANTISSA_TRAINER_DATA_TEXT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace mnt {
namespace trainer {

inline constexpr int64_t kByteVocab = 256;

// The files `text_path` names: one file, or a comma-separated list whose
// items are files or globs (*, ?, [...]). The files come in the list's order,
// each glob's matches sorted by name (byte order; directories skipped); a
// file named twice is read once, where it is first named. A path that exists
// as typed is one file even if it holds a comma or a glob character; a
// leading ~ in an item is the home directory. A glob that matches no file
// is NotFound naming it.
absl::StatusOr<std::vector<std::string>> TextFiles(const std::string& text_path);

// Between two files in the joined text: one newline, so that text files
// that end with one are separated by an empty line. One file's text is that
// file's bytes, as they are.
inline constexpr char kTextFileSeparator[] = "\n";

struct JoinedText {
  std::string bytes;                // every file's bytes, kTextFileSeparator between two
  std::vector<std::string> files;   // TextFiles(text_path)
};

// Reads every file of `text_path` (at most 1 GiB in all). A missing file:
// NotFound naming it; no bytes at all: one line naming `text_path`.
absl::StatusOr<JoinedText> ReadTextFiles(const std::string& text_path);

// The joined text of `text_path`, a token per byte.
absl::StatusOr<TokenData> LoadTextBytes(const std::string& text_path);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_TEXT_H_
