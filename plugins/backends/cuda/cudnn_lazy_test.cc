// The lazily loaded cuDNN (cudnn_lazy.cc), on the CPU: no GPU needed.
//  - With libcudnn.so.9 on the machine, calls reach the real library with
//    their arguments (host-only descriptor calls: a valid 4-d tensor
//    descriptor is accepted, a negative size is refused).
//  - Without it (or with a file that is not cuDNN), the plugin's process
//    still runs: cudnnGetVersion() is 0, every call returns
//    CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED and cudnnGetErrorString() says
//    why in one line. The library is loaded once per process, so these
//    cases run in a re-executed child (gtest's "threadsafe" death tests).
#include <cudnn.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace {

// Whether this machine has a loadable libcudnn.so.9 (independently of the shim).
bool SystemHasCudnn() {
  void* h = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) dlclose(h);
  return h != nullptr;
}

TEST(CudnnLazyTest, ForwardsToTheRealLibrary) {
  if (std::getenv("MANTISSA_CUDNN_LIBRARY") != nullptr) unsetenv("MANTISSA_CUDNN_LIBRARY");
  if (!SystemHasCudnn()) {
    std::printf("SKIPPED: libcudnn.so.9 is not on this machine\n");
    GTEST_SKIP() << "libcudnn.so.9 is not on this machine";
  }
  EXPECT_EQ(cudnnGetVersion() / 10000, static_cast<size_t>(CUDNN_MAJOR));
  EXPECT_STREQ(cudnnGetErrorString(CUDNN_STATUS_BAD_PARAM), "CUDNN_STATUS_BAD_PARAM");

  cudnnTensorDescriptor_t d = nullptr;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&d), CUDNN_STATUS_SUCCESS);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 3, 5, 7),
            CUDNN_STATUS_SUCCESS);
  EXPECT_NE(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, -3, 5, 7),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(cudnnDestroyTensorDescriptor(d), CUDNN_STATUS_SUCCESS);
}

// Runs in the child: every check, then exit 0 only if all held.
void ExpectUnavailable(const char* library, const std::string& reason_part) {
  setenv("MANTISSA_CUDNN_LIBRARY", library, 1);
  bool ok = cudnnGetVersion() == 0;
  cudnnHandle_t h = nullptr;
  const cudnnStatus_t st = cudnnCreate(&h);
  ok = ok && st == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED && h == nullptr;
  cudnnTensorDescriptor_t d = nullptr;
  ok = ok && cudnnCreateTensorDescriptor(&d) == CUDNN_STATUS_SUBLIBRARY_LOADING_FAILED;
  const std::string why = cudnnGetErrorString(st);
  ok = ok && why.rfind("cuDNN is not available: ", 0) == 0 &&
       why.find(reason_part) != std::string::npos && why.find('\n') == std::string::npos;
  ok = ok && std::string(cudnnGetErrorString(CUDNN_STATUS_SUCCESS)) == "CUDNN_STATUS_SUCCESS";
  std::fprintf(stderr, "child: version %zu, cudnnCreate %d, message '%s'\n", cudnnGetVersion(),
               static_cast<int>(st), why.c_str());
  std::exit(ok ? 0 : 1);
}

TEST(CudnnLazyTest, MissingLibraryIsAnErrorStatusNotACrash) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(ExpectUnavailable("/nonexistent/libcudnn.so.9", "/nonexistent/libcudnn.so.9"),
              ::testing::ExitedWithCode(0), "cuDNN is not available");
}

TEST(CudnnLazyTest, LibraryWithoutCudnnFunctionsIsRefused) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // libz is on every machine that builds Mantissa (zlib1g) and is not cuDNN.
  EXPECT_EXIT(ExpectUnavailable("libz.so.1", "libz.so.1 has no cudnnGetVersion"),
              ::testing::ExitedWithCode(0), "cuDNN is not available");
}

}  // namespace
