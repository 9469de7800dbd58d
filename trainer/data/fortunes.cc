#include "trainer/data/fortunes.h"

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "trainer/data/token_shards.h"

namespace mnt {
namespace trainer {
namespace {

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

absl::Status MakeDirs(const std::string& path) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos == path.size() || path[pos] == '/') {
      const std::string prefix = path.substr(0, pos);
      if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::PermissionDeniedError(
            absl::StrCat(prefix, ": cannot create the cache directory"));
      }
    }
  }
  return absl::OkStatus();
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
    std::ifstream in(corpus_dir + "/" + name);
    if (!in) continue;
    std::string line;
    while (std::getline(in, line)) {
      // "%" alone separates entries; a blank line reads better for a model.
      text += line == "%" ? "\n" : line + "\n";
    }
  }
  if (text.empty()) {
    return absl::NotFoundError(absl::StrCat(
        corpus_dir, ": no fortune files found; install the Debian package "
        "fortunes-min (apt-get install fortunes-min) or pass --dataset=text "
        "--text_path=<file>"));
  }
  const size_t val = static_cast<size_t>(std::llround(validation_fraction * text.size()));
  absl::Status s = MakeDirs(dir);
  if (!s.ok()) return s;
  s = WriteTokenShard(out.validation, ByteTokens(absl::string_view(text).substr(text.size() - val)));
  if (s.ok()) s = WriteTokenShard(out.train, ByteTokens(absl::string_view(text).substr(0, text.size() - val)));
  if (!s.ok()) return s;
  return out;
}

}  // namespace trainer
}  // namespace mnt
