// Option parsing of the cuda backend; runs without a device (CI).
#include "plugins/backends/cuda/backend_options.h"

#include <string>

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

AttentionImpl Parsed(const char* text) {
  CudaBackendOptions o;
  o.attention = AttentionImpl::kFallback;  // proves the parser overwrites it
  const sdk::Status s = ParseCudaBackendOptions(text, &o);
  EXPECT_TRUE(s.ok()) << (text ? text : "NULL") << ": " << s.message();
  return o.attention;
}

TEST(CudaBackendOptionsTest, DefaultsToAuto) {
  EXPECT_EQ(Parsed(nullptr), AttentionImpl::kAuto);
  EXPECT_EQ(Parsed(""), AttentionImpl::kAuto);
}

TEST(CudaBackendOptionsTest, ParsesEveryAttentionValue) {
  EXPECT_EQ(Parsed("attention=auto"), AttentionImpl::kAuto);
  EXPECT_EQ(Parsed("attention=cudnn"), AttentionImpl::kCudnn);
  EXPECT_EQ(Parsed(" attention = fallback "), AttentionImpl::kFallback);
  EXPECT_STREQ(AttentionImplName(AttentionImpl::kCudnn), "cudnn");
  EXPECT_STREQ(AttentionImplName(AttentionImpl::kFallback), "fallback");
  EXPECT_STREQ(AttentionImplName(AttentionImpl::kAuto), "auto");
}

void ExpectOneLineError(const char* text, const std::string& needle) {
  CudaBackendOptions o;
  o.attention = AttentionImpl::kCudnn;
  const sdk::Status s = ParseCudaBackendOptions(text, &o);
  ASSERT_FALSE(s.ok()) << text;
  EXPECT_EQ(s.code(), MNT_ERROR_INVALID_ARGUMENT) << s.message();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_EQ(o.attention, AttentionImpl::kCudnn) << "output changed on error";
}

TEST(CudaBackendOptionsTest, BadValuesAreOneLineErrors) {
  ExpectOneLineError("attention=flash", "attention='flash' is not one of auto, cudnn, fallback");
  ExpectOneLineError("attention=", "attention='' is not one of");
  ExpectOneLineError("attention=CUDNN", "'CUDNN'");
  ExpectOneLineError("atention=cudnn", "unknown key 'atention' (known: attention)");
  ExpectOneLineError("attention=cudnn,attention=auto", "given twice");
  ExpectOneLineError("attention", "expected key=value");
}

}  // namespace
}  // namespace mnt::cuda
