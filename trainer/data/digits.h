// scikit-learn's handwritten digits (1797 8x8 images, 16 grey levels, 10
// classes), converted once from Debian's digits.csv.gz into IDX files.
#ifndef MANTISSA_TRAINER_DATA_DIGITS_H_
#define MANTISSA_TRAINER_DATA_DIGITS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/data/dataset.h"

namespace mnt {
namespace trainer {

inline constexpr char kDigitsImagesFile[] = "digits-images-f32.idx";  // N x 8 x 8 f32, 0..1
inline constexpr char kDigitsLabelsFile[] = "digits-labels.idx";      // N u8
inline constexpr char kDebianDigitsCsv[] =
    "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

// $XDG_CACHE_HOME/mantissa, else $HOME/.cache/mantissa, else /tmp/mantissa-cache.
std::string DefaultCacheDir();

// First existing of: $MANTISSA_DIGITS_CSV, `explicit_path` (e.g. the
// @sklearn_digits runfile the binary passes), Debian's copy. NotFound:
// "digits dataset not found at <paths>: install Debian's python3-sklearn
// (tools/bazel does this)". `system_path` is replaceable for tests.
absl::StatusOr<std::string> FindDigitsCsv(const std::string& explicit_path = "",
                                          const std::string& system_path = kDebianDigitsCsv);

// Converts the csv.gz (rows of 64 pixel values 0..16 then the label 0..9)
// into <cache_dir>/digits/{kDigitsImagesFile, kDigitsLabelsFile} unless both
// already exist with the sizes the csv implies; returns <cache_dir>/digits.
// Files are written atomically, so concurrent or interrupted runs are safe.
absl::StatusOr<std::string> EnsureDigitsIdx(const std::string& cache_dir,
                                            const std::string& csv_gz_path);

// EnsureDigitsIdx + ReadIdxClassification (10 classes, dims {8, 8}).
absl::StatusOr<ClassificationData> LoadDigits(const std::string& cache_dir,
                                              const std::string& csv_gz_path);

}  // namespace trainer
}  // namespace mnt

#endif  // MANTISSA_TRAINER_DATA_DIGITS_H_
