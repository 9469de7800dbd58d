// The main job's corpus: the English text Debian's fortunes-min package
// ships (/usr/share/games/fortunes), tokenised byte-level into llm.c token
// shards under the cache directory on first use.
#ifndef MANTISSA_TRAINER_DATA_FORTUNES_H_
#define MANTISSA_TRAINER_DATA_FORTUNES_H_

#include <string>

#include "absl/status/statusor.h"

namespace mnt {
namespace trainer {

inline constexpr char kFortunesDir[] = "/usr/share/games/fortunes";

struct ShardGlobs {
  std::string train;
  std::string validation;
};

// Reads the fortune files in `corpus_dir` (entries separated by "%" lines),
// writes <cache_dir>/fortunes/train_000.bin and val_000.bin (the last
// `validation_fraction` of the bytes) unless they exist, and returns their
// paths. A missing corpus is one line naming the package to install; a
// corpus file that is not a regular file or is over 64 MiB is refused.
absl::StatusOr<ShardGlobs> PrepareFortunesShards(const std::string& corpus_dir,
                                                 const std::string& cache_dir,
                                                 double validation_fraction);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_FORTUNES_H_
