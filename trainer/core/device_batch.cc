#include "trainer/core/device_batch.h"

#include <algorithm>

#include "plugins/sdk/tensor.h"
#include "plugins/sdk/absl/status.h"

namespace mnt::trainer {

absl::StatusOr<std::unique_ptr<DeviceBatch>> DeviceBatch::Create(
    const sdk::BackendClient& client, const BatchSource& source,
    int64_t max_batch) {
  std::unique_ptr<DeviceBatch> b(new DeviceBatch(client));
  const size_t in_bytes = source.InputBytesPerExample() * max_batch;
  const size_t tgt_bytes = sizeof(int32_t) * max_batch *
                           std::max(1, source.spec().targets_per_example);
  for (auto [buf, bytes] :
       {std::pair{&b->inputs_, in_bytes}, {&b->targets_, tgt_bytes}}) {
    if (auto s = sdk::ToAbsl(client.Allocate(bytes, MNT_MEMORY_DATA, buf));
        !s.ok())
      return s;
  }
  return b;
}

absl::Status DeviceBatch::Upload(const BatchSource& source,
                                 const std::vector<int64_t>& indices) {
  source.Gather(indices, &host_inputs_, &host_targets_);
  if (auto s = sdk::ToAbsl(client_.ToDevice(
          inputs_.data(), host_inputs_.data(), host_inputs_.size()));
      !s.ok())
    return s;
  return sdk::ToAbsl(client_.ToDevice(targets_.data(), host_targets_.data(),
                                       host_targets_.size() * sizeof(int32_t)));
}

MNT_Tensor DeviceBatch::Inputs(const MNT_DataSpec& spec, int64_t batch) const {
  std::vector<int64_t> dims{batch};
  for (int i = 0; i < spec.input_rank; ++i) dims.push_back(spec.input_dims[i]);
  return sdk::MakeTensor(inputs_.data(), spec.input_dtype,
                         static_cast<int32_t>(dims.size()), dims.data());
}

MNT_Tensor DeviceBatch::Targets(const MNT_DataSpec& spec, int64_t batch) const {
  return sdk::MakeTensor(
      targets_.data(), MNT_DTYPE_I32,
      {batch, std::max<int64_t>(1, spec.targets_per_example)});
}

}  // namespace mnt::trainer
