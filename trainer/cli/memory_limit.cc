#include "trainer/cli/memory_limit.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "trainer/text/byte_size.h"

namespace mnt::trainer {

int64_t MemoryMargin(int64_t available) {
  return std::max<int64_t>(available / 10, int64_t{1} << 30);
}

int64_t MemAvailableBytes(const std::string& meminfo) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    if (!absl::ConsumePrefix(&line, "MemAvailable:")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (!absl::ConsumeSuffix(&line, "kB")) return -1;
    int64_t kib = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib) || kib < 0) return -1;
    return kib * 1024;
  }
  return -1;
}

absl::StatusOr<MemoryLimit> ResolveMemoryLimit(double limit_gb, bool host_addressable,
                                               int64_t device_total_bytes) {
  if (limit_gb > 0) {
    return MemoryLimit{static_cast<int64_t>(std::llround(limit_gb * 1e9)),
                       absl::StrCat("--memory_limit_gb=", limit_gb)};
  }
  int64_t available = -1;
  std::string what;
  if (host_addressable) {
    std::ifstream f("/proc/meminfo");
    available = MemAvailableBytes(std::string(std::istreambuf_iterator<char>(f), {}));
    what = "available RAM (MemAvailable)";
  } else if (device_total_bytes > 0) {
    available = device_total_bytes;
    what = "the device's memory";
  }
  if (available <= 0) {
    return absl::FailedPreconditionError(
        "--batch_size=auto: the backend does not say how much memory its device has; give "
        "--memory_limit_gb");
  }
  const int64_t margin = MemoryMargin(available);
  if (available <= margin) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--batch_size=auto: ", what, " is ", FormatBytes(available),
        ", no more than the margin of ", FormatBytes(margin),
        " the default leaves; give --memory_limit_gb"));
  }
  return MemoryLimit{available - margin,
                     absl::StrCat(what, " ", FormatBytes(available), " less a margin of ",
                                  FormatBytes(margin), " (10%, at least 1 GiB; "
                                  "--memory_limit_gb sets it)")};
}

}  // namespace mnt::trainer
