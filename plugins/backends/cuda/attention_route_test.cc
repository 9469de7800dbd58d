// Which attention implementation a call goes to (attention_route.h), on the
// CPU: 16-bit storage to cuDNN, fp32 to the GEMM path, mixed dtypes and
// attention=fallback to the fallback kernels, and only mixed dtypes are a
// fallback the option did not ask for (the one said on stderr).
#include "plugins/backends/cuda/attention_route.h"

#include "gtest/gtest.h"

namespace mnt::cuda {
namespace {

constexpr AttentionImpl kFasterPaths[] = {AttentionImpl::kAuto, AttentionImpl::kCudnn,
                                          AttentionImpl::kGemm};

TEST(AttentionRouteTest, OneDtypeGoesToItsFastPath) {
  for (AttentionImpl impl : kFasterPaths) {
    SCOPED_TRACE(AttentionImplName(impl));
    for (MNT_DType t : {MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
      const AttentionRoute r = RouteAttention(impl, {t, t, t, t});
      EXPECT_EQ(r.path, AttentionPath::kCudnn);
      EXPECT_EQ(r.reason, FallbackReason::kNone);
    }
    const AttentionRoute r = RouteAttention(impl, {MNT_DTYPE_F32, MNT_DTYPE_F32});
    EXPECT_EQ(r.path, AttentionPath::kGemm);
    EXPECT_EQ(r.reason, FallbackReason::kNone);
  }
}

TEST(AttentionRouteTest, MixedDtypesFallBackWithAReason) {
  for (AttentionImpl impl : kFasterPaths) {
    SCOPED_TRACE(AttentionImplName(impl));
    // Any operand may differ: the first, one in the middle, the last.
    for (const auto& io : {std::initializer_list<MNT_DType>{MNT_DTYPE_BF16, MNT_DTYPE_F32},
                           {MNT_DTYPE_F32, MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_F32},
                           {MNT_DTYPE_F16, MNT_DTYPE_F16, MNT_DTYPE_F16, MNT_DTYPE_BF16}}) {
      const AttentionRoute r = RouteAttention(impl, io);
      EXPECT_EQ(r.path, AttentionPath::kFallback);
      EXPECT_EQ(r.reason, FallbackReason::kMixedDtypes);
    }
  }
}

TEST(AttentionRouteTest, FallbackOptionIsChosenSilently) {
  for (MNT_DType t : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
    const AttentionRoute r = RouteAttention(AttentionImpl::kFallback, {t, t});
    EXPECT_EQ(r.path, AttentionPath::kFallback);
    EXPECT_EQ(r.reason, FallbackReason::kNone);
  }
  const AttentionRoute mixed =
      RouteAttention(AttentionImpl::kFallback, {MNT_DTYPE_F32, MNT_DTYPE_BF16});
  EXPECT_EQ(mixed.path, AttentionPath::kFallback);
  EXPECT_EQ(mixed.reason, FallbackReason::kNone);
}

}  // namespace
}  // namespace mnt::cuda
