#include "plugins/backends/cuda/slow_paths.h"

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

std::string Read(FILE* f) {
  std::rewind(f);
  std::string s;
  char buf[256];
  while (std::fgets(buf, sizeof buf, f) != nullptr) s += buf;
  return s;
}

TEST(SlowPathsTest, SaidOncePerKindAndShapeAndEveryCallCounted) {
  FILE* out = std::tmpfile();
  ASSERT_NE(out, nullptr);
  SlowPaths paths;
  paths.set_output(out);
  int formatted = 0;
  auto why = [&] {
    ++formatted;
    return std::string("cuBLASLt has no algorithm");
  };
  for (int i = 0; i < 5; ++i) paths.Note("fused epilogue refused", "M=64 N=768 K=3072", why);
  paths.Note("fused epilogue refused", "M=64 N=3072 K=768", why);
  paths.Note("attention fallback", "B=8 H=12 T=1024 D=64", [] { return std::string("fp32"); });
  EXPECT_EQ(formatted, 2);  // only for the first call of each shape
  EXPECT_EQ(Read(out),
            "mantissa: cuda backend: slow path: fused epilogue refused: M=64 N=768 K=3072: "
            "cuBLASLt has no algorithm\n"
            "mantissa: cuda backend: slow path: fused epilogue refused: M=64 N=3072 K=768: "
            "cuBLASLt has no algorithm\n"
            "mantissa: cuda backend: slow path: attention fallback: B=8 H=12 T=1024 D=64: "
            "fp32\n");
  EXPECT_EQ(paths.Calls("fused epilogue refused"), 6);
  EXPECT_EQ(paths.Calls("attention fallback"), 1);
  EXPECT_EQ(paths.Calls("graph capture off"), 0);
  paths.Count("graph capture off", "step");  // said by the step session itself
  EXPECT_EQ(paths.Report(),
            "1 x attention fallback: B=8 H=12 T=1024 D=64\n"
            "1 x fused epilogue refused: M=64 N=3072 K=768\n"
            "5 x fused epilogue refused: M=64 N=768 K=3072\n"
            "1 x graph capture off: step\n");
  EXPECT_EQ(paths.Calls("graph capture off"), 1);
  EXPECT_EQ(Read(out).find("graph capture"), std::string::npos);  // counted, not said
  std::fclose(out);
}

TEST(SlowPathsTest, NothingTakenNothingSaid) {
  SlowPaths paths;
  EXPECT_EQ(paths.Report(), "");
}

}  // namespace
}  // namespace mnt::cuda
