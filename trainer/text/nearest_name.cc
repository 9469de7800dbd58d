#include "trainer/text/nearest_name.h"

#include <algorithm>
#include <cstdint>

#include "absl/strings/ascii.h"

namespace mnt::trainer {
namespace {

// Insertions, deletions, substitutions and swaps of two neighbours count one
// edit each (optimal string alignment): "gtp2" is one edit from "gpt2".
size_t EditDistance(absl::string_view a, absl::string_view b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[n][m];
}

}  // namespace

std::string NearestName(absl::string_view name, const std::vector<std::string>& candidates) {
  // Case is no edit: --model=GPT2 means gpt2 as surely as --precision=BF16
  // means bf16, though one is 3 substitutions away and the other 2.
  const std::string lower = absl::AsciiStrToLower(name);
  std::string best;
  size_t best_distance = SIZE_MAX;
  for (const std::string& candidate : candidates) {
    const size_t d = EditDistance(lower, absl::AsciiStrToLower(candidate));
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  // A third of the name may be wrong (--precison, --learning_rat, gtp2); more
  // is a different word, not a typo.
  const size_t allowed = std::max<size_t>(2, name.size() / 3);
  return best_distance <= allowed ? best : "";
}

}  // namespace mnt::trainer
