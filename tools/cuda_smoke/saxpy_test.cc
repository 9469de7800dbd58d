#include <cstdio>
#include <string>

#include "gtest/gtest.h"
#include "tools/cuda_smoke/saxpy.h"

namespace mantissa::cuda_smoke {
namespace {

TEST(CudaSmoke, HostMath) {
  EXPECT_FLOAT_EQ(Saxpy(2.0f, 3.0f, 1.0f), 7.0f);
  EXPECT_FLOAT_EQ(Saxpy(-1.0f, 4.0f, 4.0f), 0.0f);
}

#ifdef MANTISSA_HAVE_CUDA
TEST(CudaSmoke, Device) {
  if (DeviceCount() == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    GTEST_SKIP() << "SKIPPED: no CUDA device";
  }
  const std::string status = RunSaxpyOnDevice(1 << 20);
  std::printf("%s\n", status.c_str());
  EXPECT_EQ(status.rfind("OK", 0), 0u) << status;
}
#endif

}  // namespace
}  // namespace mantissa::cuda_smoke
