#include "trainer/data/text.h"

#include <glob.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "trainer/io/atomic_file.h"
#include "trainer/config/user_path.h"

namespace mnt {
namespace trainer {
namespace {

// Each byte becomes an int32 token: 1 GiB of text is 4 GiB of tokens.
constexpr int64_t kMaxTextBytes = int64_t{1} << 30;

bool IsGlob(const std::string& item) {
  return item.find_first_of("*?[") != std::string::npos;
}

// The regular files (and links to them) a glob matches, sorted.
std::vector<std::string> GlobFiles(const std::string& pattern) {
  glob_t g{};
  std::vector<std::string> paths;
  // GLOB_MARK ends a directory's match with '/', to leave it out.
  if (glob(pattern.c_str(), GLOB_MARK, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      const std::string p = g.gl_pathv[i];
      if (!p.empty() && p.back() != '/') paths.push_back(p);
    }
  }
  globfree(&g);
  std::sort(paths.begin(), paths.end());
  return paths;
}

}  // namespace

absl::StatusOr<std::vector<std::string>> TextFiles(const std::string& text_path) {
  // A file that exists as typed is that file, commas and all.
  if (CheckRegularFile(text_path).ok()) return std::vector<std::string>{text_path};
  std::vector<std::string> files;
  std::set<std::string> seen;
  for (absl::string_view part : absl::StrSplit(text_path, ',', absl::SkipWhitespace())) {
    const std::string item = ExpandUserPath(std::string(absl::StripAsciiWhitespace(part)));
    std::vector<std::string> matches = {item};
    if (IsGlob(item)) {
      matches = GlobFiles(item);
      if (matches.empty()) {
        return absl::NotFoundError(
            absl::StrCat("--text_path: '", item, "' matches no file"));
      }
    }
    for (std::string& m : matches) {
      if (seen.insert(m).second) files.push_back(std::move(m));
    }
  }
  if (files.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--text_path='", text_path, "' names no file"));
  }
  return files;
}

absl::StatusOr<JoinedText> ReadTextFiles(const std::string& text_path) {
  auto files = TextFiles(text_path);
  if (!files.ok()) return files.status();
  JoinedText out;
  out.files = std::move(*files);
  for (size_t i = 0; i < out.files.size(); ++i) {
    std::string bytes;
    const int64_t room = kMaxTextBytes - static_cast<int64_t>(out.bytes.size());
    absl::Status s = ReadWholeFile(out.files[i], &bytes, std::max<int64_t>(room, 0));
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("text dataset: ", s.message()));
    if (i > 0) out.bytes += kTextFileSeparator;
    out.bytes += bytes;
  }
  if (out.bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("text dataset ", text_path, " is empty"));
  }
  return out;
}

absl::StatusOr<TokenData> LoadTextBytes(const std::string& text_path) {
  auto text = ReadTextFiles(text_path);
  if (!text.ok()) return text.status();
  const std::string& bytes = text->bytes;
  TokenData data;
  data.vocab = kByteVocab;
  data.tokens.resize(bytes.size());
  for (size_t i = 0; i < bytes.size(); ++i) {
    data.tokens[i] = static_cast<unsigned char>(bytes[i]);
  }
  return data;
}

}  // namespace trainer
}  // namespace mnt
