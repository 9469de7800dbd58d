#include "trainer/data/fortunes.h"

#include <sys/stat.h>

#include <cmath>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "trainer/io/atomic_file.h"
#include "trainer/data/token_shards.h"

namespace mnt {
namespace trainer {
namespace {

// Debian's fortune files are a few MiB each; anything far larger is not a
// fortune corpus (a link to /dev/zero, a disk image) and would only exhaust
// memory before the byte tokens (4x the text) are built.
constexpr int64_t kMaxFortuneFileBytes = int64_t{64} << 20;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<ShardGlobs> PrepareFortunesShards(const std::string& corpus_dir,
                                                 const std::string& cache_dir,
                                                 double validation_fraction) {
  const std::string dir = cache_dir + "/fortunes";
  ShardGlobs out{dir + "/train_000.bin", dir + "/val_000.bin"};
  if (Exists(out.train) && Exists(out.validation)) return out;

  std::string text;
  for (const char* name : {"fortunes", "literature", "riddles"}) {
    std::string file;
    absl::Status read = ReadWholeFile(corpus_dir + "/" + name, &file, kMaxFortuneFileBytes);
    if (absl::IsNotFound(read)) continue;  // fortunes-min ships only some of them
    if (!read.ok()) {
      return absl::Status(read.code(), absl::StrCat("fortunes dataset: ", read.message()));
    }
    // Lines as std::getline gives them: blank lines kept, no empty piece
    // after the final newline.
    absl::string_view body = file;
    if (!body.empty() && body.back() == '\n') body.remove_suffix(1);
    if (body.empty() && file.empty()) continue;
    for (absl::string_view line : absl::StrSplit(body, '\n')) {
      // "%" alone separates entries; a blank line reads better for a model.
      if (line == "%") {
        text += "\n";
      } else {
        absl::StrAppend(&text, line, "\n");
      }
    }
  }
  if (text.empty()) {
    return absl::NotFoundError(absl::StrCat(
        corpus_dir, ": no fortune files found; install the Debian package "
        "fortunes-min (apt-get install fortunes-min) or pass --dataset=text "
        "--text_path=<file>"));
  }
  const size_t val = static_cast<size_t>(std::llround(validation_fraction * text.size()));
  absl::Status s = MakeDirectories(dir);
  if (!s.ok()) return s;
  s = WriteTokenShard(out.validation, ByteTokens(absl::string_view(text).substr(text.size() - val)));
  if (s.ok()) s = WriteTokenShard(out.train, ByteTokens(absl::string_view(text).substr(0, text.size() - val)));
  if (!s.ok()) return s;
  return out;
}

}  // namespace trainer
}  // namespace mnt
