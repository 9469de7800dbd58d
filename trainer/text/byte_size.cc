#include "trainer/text/byte_size.h"

#include "absl/strings/str_format.h"

namespace mnt::trainer {

std::string FormatBytes(int64_t b) {
  if (b >= (int64_t{1} << 30)) return absl::StrFormat("%.2f GiB", b / 1073741824.0);
  if (b >= (int64_t{1} << 20)) return absl::StrFormat("%.2f MiB", b / 1048576.0);
  if (b >= 1024) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrFormat("%d B", b);
}

}  // namespace mnt::trainer
