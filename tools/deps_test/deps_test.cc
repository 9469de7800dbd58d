// Link/behaviour smoke test of the Debian-provided libraries.
#include <cblas.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/deps_test/smoke.pb.h"

ABSL_FLAG(int, smoke_steps, 3, "flag used by the smoke test");

namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2) return absl::InvalidArgumentError(absl::StrFormat("%d is odd", x));
  return x / 2;
}

TEST(Absl, FlagsStatusStrFormatHashMap) {
  char arg0[] = "deps_test";
  char arg1[] = "--smoke_steps=7";
  char* argv[] = {arg0, arg1};
  absl::ParseCommandLine(2, argv);
  EXPECT_EQ(absl::GetFlag(FLAGS_smoke_steps), 7);

  EXPECT_EQ(*Half(8), 4);
  EXPECT_THAT(std::string(Half(3).status().message()), ::testing::HasSubstr("3 is odd"));

  absl::flat_hash_map<std::string, int> m{{"a", 1}, {"b", 2}};
  EXPECT_EQ(m.at("b"), 2);
  absl::Mutex mu;
  absl::MutexLock lock(&mu);
  EXPECT_EQ(absl::FormatDuration(absl::Seconds(2)), "2s");
}

TEST(Protobuf, RoundTrip) {
  mantissa::smoke::Smoke s;
  s.set_name("x");
  s.add_values(1.5f);
  s.mutable_when()->set_seconds(42);
  mantissa::smoke::Smoke t;
  ASSERT_TRUE(t.ParseFromString(s.SerializeAsString()));
  EXPECT_EQ(t.when().seconds(), 42);
}

TEST(OpenBlas, Sgemm) {
  const float a[4] = {1, 2, 3, 4}, b[4] = {1, 0, 0, 1};
  float c[4] = {};
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.f, a, 2, b, 2, 0.f, c, 2);
  EXPECT_THAT(c, ::testing::ElementsAre(1, 2, 3, 4));
}

TEST(Zlib, DigitsCsvReadable) {
  // Runfiles path of @sklearn_digits//:digits.csv.gz relative to the test's cwd.
  const char* srcdir = std::getenv("TEST_SRCDIR");
  ASSERT_NE(srcdir, nullptr);
  std::string path = std::string(srcdir) + "/sklearn_digits/digits.csv.gz";
  gzFile f = gzopen(path.c_str(), "rb");
  ASSERT_NE(f, nullptr) << path;
  char line[4096];
  int rows = 0;
  while (gzgets(f, line, sizeof line)) ++rows;
  gzclose(f);
  EXPECT_EQ(rows, 1797);  // sklearn's digits: 1797 samples of 8x8 + label
}

}  // namespace
