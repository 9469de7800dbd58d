// NCCL loaded at run time, on the CPU (no device needed): a missing library
// and a library without NCCL's functions are one line each; the toolkit's
// libnccl.so.2, where this machine has one, loads and reports its version.
#include "plugins/backends/cuda/nccl_api.h"

#include <unistd.h>

#include <cstdio>
#include <string>

#include "gtest/gtest.h"

namespace mnt::cuda::nccl {
namespace {

TEST(NcclApiTest, MissingLibraryIsOneLine) {
  std::string why;
  EXPECT_EQ(LoadFrom("/nonexistent/libnccl.so.2", &why), nullptr);
  EXPECT_EQ(why.rfind("NCCL is not available: /nonexistent/libnccl.so.2", 0), 0u) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << why;
}

TEST(NcclApiTest, LibraryWithoutNcclNamesTheMissingFunction) {
  std::string why;
  EXPECT_EQ(LoadFrom("libc.so.6", &why), nullptr);
  EXPECT_EQ(why, "NCCL is not available: libc.so.6 has no ncclGetVersion (NCCL 2.4 or later "
                 "needed)");
}

TEST(NcclApiTest, VersionStrings) {
  EXPECT_EQ(VersionString(2804), "2.8.4");
  EXPECT_EQ(VersionString(20903), "2.9.3");
  EXPECT_EQ(VersionString(21000), "2.10.0");
  EXPECT_EQ(VersionString(22809), "2.28.9");
  EXPECT_EQ(VersionString(NCCL_VERSION_CODE),
            std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." +
                std::to_string(NCCL_PATCH));
  EXPECT_GE(NCCL_VERSION(2, 10, 0), kAvgSinceVersion);
  EXPECT_LT(NCCL_VERSION(2, 9, 9), kAvgSinceVersion);
}

// The toolkit's copy (this is what the plugin finds on a machine whose
// loader path holds it); skipped where the toolkit has none.
TEST(NcclApiTest, ToolkitLibraryLoads) {
  const std::string file = "/usr/local/cuda/lib64/libnccl.so.2";
  if (access(file.c_str(), R_OK) != 0) {
    std::printf("SKIPPED: %s is not on this machine\n", file.c_str());
    GTEST_SKIP() << file << " is not on this machine";
  }
  std::string why;
  const auto api = LoadFrom(file, &why);
  ASSERT_NE(api, nullptr) << why;
  EXPECT_EQ(api->file, file);
  EXPECT_GE(api->version, NCCL_VERSION(2, 4, 0));
  std::printf("loaded %s: NCCL %s\n", file.c_str(), VersionString(api->version).c_str());
  EXPECT_NE(api->ncclAllReduce, nullptr);
  EXPECT_NE(api->ncclGetLastError, nullptr);  // 2.13 and later
  // Error text: the status string and its name, one line.
  const std::string text = ErrorText(*api, "ncclAllReduce", ncclInvalidArgument);
  EXPECT_EQ(text.rfind("ncclAllReduce: ", 0), 0u) << text;
  EXPECT_NE(text.find("(ncclInvalidArgument"), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << text;
  EXPECT_EQ(ErrorText(*api, "ncclAllReduce", ncclSuccess), "");
}

// Load() gives the same answer every time: the library, or the reason.
TEST(NcclApiTest, ProcessTableIsLoadedOnce) {
  std::string why1, why2;
  const Api* a = Load(&why1);
  const Api* b = Load(&why2);
  EXPECT_EQ(a, b);
  EXPECT_EQ(why1, why2);
  if (a == nullptr) {
    std::printf("NCCL is not on the loader path here: %s\n", why1.c_str());
    EXPECT_EQ(why1.rfind("NCCL is not available: ", 0), 0u) << why1;
  } else {
    std::printf("Load(): %s, NCCL %s\n", a->file.c_str(), VersionString(a->version).c_str());
  }
}

}  // namespace
}  // namespace mnt::cuda::nccl
