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
  EXPECT_EQ(Parsed("attention=gemm"), AttentionImpl::kGemm);
  EXPECT_EQ(Parsed(" attention = fallback "), AttentionImpl::kFallback);
  EXPECT_STREQ(AttentionImplName(AttentionImpl::kCudnn), "cudnn");
  EXPECT_STREQ(AttentionImplName(AttentionImpl::kGemm), "gemm");
  EXPECT_STREQ(AttentionImplName(AttentionImpl::kFallback), "fallback");
  EXPECT_STREQ(AttentionImplName(AttentionImpl::kAuto), "auto");
}

TEST(CudaBackendOptionsTest, CudaGraphsOnByDefaultAndSwitchable) {
  CudaBackendOptions o;
  o.cuda_graphs = false;  // proves the parser overwrites it
  ASSERT_TRUE(ParseCudaBackendOptions("", &o).ok());
  EXPECT_TRUE(o.cuda_graphs);
  ASSERT_TRUE(ParseCudaBackendOptions("cuda_graphs=off", &o).ok());
  EXPECT_FALSE(o.cuda_graphs);
  EXPECT_EQ(o.attention, AttentionImpl::kAuto);
  ASSERT_TRUE(ParseCudaBackendOptions("attention=fallback, cuda_graphs = on", &o).ok());
  EXPECT_TRUE(o.cuda_graphs);
  EXPECT_EQ(o.attention, AttentionImpl::kFallback);
}

TEST(CudaBackendOptionsTest, GraphWorkspaceBound) {
  CudaBackendOptions o;
  ASSERT_TRUE(ParseCudaBackendOptions("", &o).ok());
  EXPECT_EQ(o.graph_workspace_mb, 2048);
  ASSERT_TRUE(ParseCudaBackendOptions("graph_workspace_mb=512", &o).ok());
  EXPECT_EQ(o.graph_workspace_mb, 512);
  ASSERT_TRUE(ParseCudaBackendOptions("graph_workspace_mb=0", &o).ok());
  EXPECT_EQ(o.graph_workspace_mb, 0);
}

TEST(CudaBackendOptionsTest, AttentionTf32OffByDefaultAndSwitchable) {
  CudaBackendOptions o;
  o.attention_tf32 = true;  // proves the parser overwrites it
  ASSERT_TRUE(ParseCudaBackendOptions(nullptr, &o).ok());
  EXPECT_FALSE(o.attention_tf32);
  ASSERT_TRUE(ParseCudaBackendOptions("attention=gemm,attention_tf32=on", &o).ok());
  EXPECT_TRUE(o.attention_tf32);
  EXPECT_EQ(o.attention, AttentionImpl::kGemm);
  EXPECT_TRUE(o.cuda_graphs);
  ASSERT_TRUE(ParseCudaBackendOptions("attention_tf32 = off", &o).ok());
  EXPECT_FALSE(o.attention_tf32);
  EXPECT_EQ(o.attention, AttentionImpl::kAuto);
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
  ExpectOneLineError("attention=flash",
                     "attention='flash' is not one of auto, cudnn, gemm, fallback");
  ExpectOneLineError("attention=", "attention='' is not one of");
  ExpectOneLineError("attention=CUDNN", "'CUDNN'");
  ExpectOneLineError("atention=cudnn",
                     "unknown key 'atention' (known: attention, attention_tf32, cuda_graphs, "
                     "graph_workspace_mb)");
  ExpectOneLineError("attention_tf32=yes", "attention_tf32='yes' is not one of on, off");
  ExpectOneLineError("attention_tf32=on,attention_tf32=on", "given twice");
  ExpectOneLineError("cuda_graphs=yes", "cuda_graphs='yes' is not one of on, off");
  ExpectOneLineError("cuda_graphs=ON", "'ON'");
  ExpectOneLineError("cuda_graphs=", "cuda_graphs='' is not one of on, off");
  ExpectOneLineError("cuda_graphs=on,cuda_graphs=off", "given twice");
  ExpectOneLineError("attention=cudnn,attention=auto", "given twice");
  ExpectOneLineError("attention", "expected key=value");
  ExpectOneLineError("graph_workspace_mb=-1", "graph_workspace_mb=-1 is not a size in MiB");
  ExpectOneLineError("graph_workspace_mb=lots", "graph_workspace_mb");
}

}  // namespace
}  // namespace mnt::cuda
