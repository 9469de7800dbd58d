// EMBEDDING_FORWARD/BACKWARD: lookups, deterministic scatter-add with
// repeated ids, accumulate, bad ids.
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllCloseRelative;
using testing::BackendFixture;
using testing::DTypeTolerance;
using testing::FloatDTypes;

constexpr int64_t kV = 17, kC = 5, kN = 41;

class EmbeddingTest : public BackendFixture {};

TEST_F(EmbeddingTest, ForwardAndBackward) {
  for (MNT_DType dtype : FloatDTypes()) {
    SCOPED_TRACE(sdk::DTypeName(dtype));
    const std::vector<double> table = Stored(Random(kV * kC), dtype);
    std::vector<int32_t> ids(kN);
    for (int32_t& id : ids) id = static_cast<int32_t>(rng()() % 6);  // many repeats
    MNT_Tensor tt = Upload(table, dtype, {kV, kC});
    MNT_Tensor tid = UploadI32(ids, {kN});
    MNT_Tensor out = Empty(dtype, {kN, kC});
    ASSERT_TRUE(Run(MNT_OP_EMBEDDING_FORWARD, {tt, tid}, {out}).ok());
    std::vector<double> want(kN * kC);
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kC; ++j) want[i * kC + j] = table[ids[i] * kC + j];
    EXPECT_EQ(Download(out), want);  // a copy: exact

    const std::vector<double> g = Stored(Random(kN * kC), dtype);
    const std::vector<double> d0 = Stored(Random(kV * kC), dtype);
    MNT_Tensor tg = Upload(g, dtype, {kN, kC});
    MNT_Tensor dtable = Upload(d0, dtype, {kV, kC});
    MNT_AccumulateParams acc{MNT_AccumulateParams_STRUCT_SIZE, 1};
    ASSERT_TRUE(Run(MNT_OP_EMBEDDING_BACKWARD, {tg, tid}, {dtable}, &acc).ok());
    std::vector<double> dwant(d0);
    for (int64_t i = 0; i < kN; ++i)
      for (int64_t j = 0; j < kC; ++j) dwant[ids[i] * kC + j] += g[i * kC + j];
    EXPECT_TRUE(AllCloseRelative(Download(dtable), dwant, DTypeTolerance(dtype)));

    // NULL params: overwrite (untouched rows become 0); bit-identical reruns.
    ASSERT_TRUE(Run(MNT_OP_EMBEDDING_BACKWARD, {tg, tid}, {dtable}).ok());
    const std::vector<uint8_t> first = Bytes(dtable);
    ASSERT_TRUE(Run(MNT_OP_EMBEDDING_BACKWARD, {tg, tid}, {dtable}).ok());
    EXPECT_EQ(Bytes(dtable), first);
    for (int64_t k = 0; k < kV * kC; ++k) dwant[k] -= d0[k];
    EXPECT_TRUE(AllCloseRelative(Download(dtable), dwant, DTypeTolerance(dtype)));
    for (int64_t j = 0; j < kC; ++j) EXPECT_EQ(Download(dtable)[10 * kC + j], 0.0);
  }
}

TEST_F(EmbeddingTest, IdsOutOfRange) {
  MNT_Tensor table = Upload(Random(kV * kC), MNT_DTYPE_F32, {kV, kC});
  MNT_Tensor out = Empty(MNT_DTYPE_F32, {3, kC});
  EXPECT_EQ(Run(MNT_OP_EMBEDDING_FORWARD, {table, UploadI32({0, 17, 1}, {3})}, {out})
                .message(),
            "EMBEDDING_FORWARD: in[1] ids[1] = 17 is outside [0, V=17)");
  EXPECT_EQ(Run(MNT_OP_EMBEDDING_FORWARD, {table, UploadI32({0, 1}, {2})}, {out})
                .message(),
            "EMBEDDING_FORWARD: out[0] out is f32[3,5], expected [N=2, C=5]");
}

}  // namespace
}  // namespace mnt::cpu
