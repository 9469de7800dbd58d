// TENSOR_STATS (ABI 1.10): the smallest and largest finite |x| and the
// inf/NaN counts of a float tensor, for --debug_overflow. Each block of
// kBlock elements is one thread's (common/tensor_stats_math.h on the
// elements' fp32 bit patterns); the blocks' partial results are merged in
// block order on the calling thread. min, max and counts are exact and
// order-independent, so the bits are the same on any team.
#include <cstdint>
#include <vector>

#include "plugins/backends/common/tensor_stats_math.h"
#include "plugins/backends/cpu/backend.h"
#include "plugins/backends/cpu/parallel.h"

namespace mnt::cpu {

using sdk::Status;

namespace {

template <MNT_DType kDType>
TensorStatsPartial MeasureBlock(const void* data, int64_t offset, int64_t len) {
  TensorStatsPartial p = TensorStatsEmpty();
  for (int64_t i = offset; i < offset + len; ++i) {
    TensorStatsAddBits(&p, TensorStatsElementBits(kDType, data, i));
  }
  return p;
}

}  // namespace

Status CpuBackend::TensorStats(const backend::TensorStatsCall& c) {
  const MNT_DType dtype = c.x->dtype;
  const void* data = c.x->data;
  std::vector<TensorStatsPartial> parts(static_cast<size_t>((c.n + kBlock - 1) / kBlock));
  ForBlocks(c.n, [&](int64_t off, int64_t len) {
    TensorStatsPartial& p = parts[static_cast<size_t>(off / kBlock)];
    switch (dtype) {
      case MNT_DTYPE_F32: p = MeasureBlock<MNT_DTYPE_F32>(data, off, len); break;
      case MNT_DTYPE_F16: p = MeasureBlock<MNT_DTYPE_F16>(data, off, len); break;
      default: p = MeasureBlock<MNT_DTYPE_BF16>(data, off, len); break;  // checked: BF16
    }
  });
  TensorStatsPartial all = TensorStatsEmpty();
  for (const TensorStatsPartial& p : parts) TensorStatsMerge(&all, p);
  TensorStatsFinish(all, c.range.f32(), c.counts.i32());
  return Status::Ok();
}

}  // namespace mnt::cpu
