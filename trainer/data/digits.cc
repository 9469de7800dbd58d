#include "trainer/data/digits.h"

#include <sys/stat.h>
#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "trainer/io/atomic_file.h"
#include "trainer/data/idx.h"

namespace mnt {
namespace trainer {
namespace {

constexpr int kPixels = 64;
constexpr int kSide = 8;
constexpr int kMaxPixel = 16;
constexpr int kClasses = 10;

bool IsRegularFile(const std::string& path, int64_t* size = nullptr) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (size) *size = st.st_size;
  return true;
}

absl::Status ReadGzip(const std::string& path, std::string* out) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot open digits csv ", path, ": ", std::strerror(errno)));
  }
  char buffer[1 << 16];
  int n;
  while ((n = gzread(file, buffer, sizeof(buffer))) > 0) out->append(buffer, n);
  if (n < 0) {
    int code = 0;
    const std::string why = gzerror(file, &code);
    gzclose(file);
    return absl::DataLossError(absl::StrCat("cannot decompress ", path, ": ", why));
  }
  gzclose(file);
  return absl::OkStatus();
}

// Integer in [0, max] written as "7" or "7.0" (both appear in sklearn's files).
bool ParseSmallInt(absl::string_view text, int max, int* value) {
  double d;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &d)) return false;
  if (!(d >= 0 && d <= max) || d != static_cast<int>(d)) return false;
  *value = static_cast<int>(d);
  return true;
}

absl::Status ParseDigitsCsv(const std::string& path, const std::string& text, IdxArray* images,
                            IdxArray* labels) {
  images->type = kIdxF32;
  labels->type = kIdxU8;
  int64_t line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
    if (fields.size() != kPixels + 1) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": expected ",
                                                     kPixels + 1, " comma-separated values, got ",
                                                     fields.size()));
    }
    for (int i = 0; i < kPixels; ++i) {
      int v;
      if (!ParseSmallInt(fields[i], kMaxPixel, &v)) {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": pixel ", i,
                                                       " is '", fields[i], "', expected 0..16"));
      }
      images->f32.push_back(static_cast<float>(v) / kMaxPixel);  // exact: power of two
    }
    int label;
    if (!ParseSmallInt(fields[kPixels], kClasses - 1, &label)) {
      return absl::InvalidArgumentError(absl::StrCat(path, ":", line_number, ": label is '",
                                                     fields[kPixels], "', expected 0..9"));
    }
    labels->u8.push_back(static_cast<uint8_t>(label));
  }
  const int64_t n = static_cast<int64_t>(labels->u8.size());
  if (n == 0) return absl::InvalidArgumentError(absl::StrCat(path, ": no digits rows"));
  images->dims = {n, kSide, kSide};
  labels->dims = {n};
  return absl::OkStatus();
}

// Both cache files exist and their sizes agree on one example count.
bool CachedFilesLookComplete(const std::string& dir) {
  int64_t image_bytes = 0, label_bytes = 0;
  if (!IsRegularFile(dir + "/" + kDigitsImagesFile, &image_bytes) ||
      !IsRegularFile(dir + "/" + kDigitsLabelsFile, &label_bytes)) {
    return false;
  }
  const int64_t image_header = 4 + 3 * 4, label_header = 4 + 4;
  const int64_t n = label_bytes - label_header;
  return n > 0 && image_bytes == image_header + n * kPixels * 4;
}

}  // namespace

std::string DefaultCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return absl::StrCat(xdg, "/mantissa");
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return absl::StrCat(home, "/.cache/mantissa");
  return "/tmp/mantissa-cache";
}

absl::StatusOr<std::string> FindDigitsCsv(const std::string& explicit_path,
                                          const std::string& system_path) {
  std::vector<std::string> candidates;
  const char* env = std::getenv("MANTISSA_DIGITS_CSV");
  if (env != nullptr && env[0] != '\0') candidates.push_back(env);
  if (!explicit_path.empty()) candidates.push_back(explicit_path);
  candidates.push_back(system_path);
  for (const std::string& path : candidates) {
    if (IsRegularFile(path)) return path;
  }
  return absl::NotFoundError(absl::StrCat("digits dataset not found at ",
                                          absl::StrJoin(candidates, ", "),
                                          ": install Debian's python3-sklearn (tools/bazel does this)"));
}

absl::StatusOr<std::string> EnsureDigitsIdx(const std::string& cache_dir,
                                            const std::string& csv_gz_path) {
  const std::string dir = (cache_dir.empty() ? DefaultCacheDir() : cache_dir) + "/digits";
  if (CachedFilesLookComplete(dir)) return dir;
  std::string text;
  absl::Status s = ReadGzip(csv_gz_path, &text);
  if (!s.ok()) return s;
  IdxArray images, labels;
  s = ParseDigitsCsv(csv_gz_path, text, &images, &labels);
  if (!s.ok()) return s;
  s = MakeDirectories(dir);
  if (!s.ok()) return s;
  s = WriteIdx(dir + "/" + kDigitsImagesFile, images);
  if (!s.ok()) return s;
  // Labels last: their presence marks a complete conversion.
  s = WriteIdx(dir + "/" + kDigitsLabelsFile, labels);
  if (!s.ok()) return s;
  return dir;
}

absl::StatusOr<ClassificationData> LoadDigits(const std::string& cache_dir,
                                              const std::string& csv_gz_path) {
  absl::StatusOr<std::string> dir = EnsureDigitsIdx(cache_dir, csv_gz_path);
  if (!dir.ok()) return dir.status();
  return ReadIdxClassification(*dir + "/" + kDigitsImagesFile, *dir + "/" + kDigitsLabelsFile,
                               kClasses);
}

}  // namespace trainer
}  // namespace mnt
