#include "plugins/backends/common/op_dispatch.h"

#include <optional>

#include "plugins/sdk/abi_enum.h"
#include "plugins/sdk/tensor.h"

namespace mnt::backend {

namespace {

sdk::Status CheckView(const Allocator& memory, const char* op, const char* dir,
                      size_t i, const MNT_Tensor& t) {
  if (t.struct_size < MNT_Tensor_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s[%zu].struct_size %zu is smaller than %zu", op, dir, i,
        t.struct_size, static_cast<size_t>(MNT_Tensor_STRUCT_SIZE)));
  }
  if (t.rank < 0 || t.rank > MNT_MAX_RANK) {
    return sdk::InvalidArgument(sdk::Format("%s: %s[%zu] has rank %d, expected 0..%d",
                                            op, dir, i, t.rank, MNT_MAX_RANK));
  }
  for (int d = 0; d < t.rank; ++d) {
    if (t.dims[d] < 0) {
      return sdk::InvalidArgument(sdk::Format("%s: %s[%zu] has dims[%d] = %lld < 0",
                                              op, dir, i, d, (long long)t.dims[d]));
    }
  }
  // Every later read of t.dtype (as the enum) relies on this check.
  const std::optional<MNT_DType> dtype = sdk::ReadEnum(t.dtype);
  if (!dtype || sdk::DTypeSize(*dtype) == 0) {
    return sdk::InvalidArgument(sdk::Format("%s: %s[%zu] has unknown dtype %d", op,
                                            dir, i, sdk::RawEnum(t.dtype)));
  }
  if (t.data != nullptr && !memory.Contains(t.data, sdk::SizeBytes(t))) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s[%zu] %s (%zu bytes at %p) is not inside memory allocated by "
        "this backend",
        op, dir, i, sdk::Describe(t).c_str(), sdk::SizeBytes(t), t.data));
  }
  return sdk::Status::Ok();
}

}  // namespace

sdk::Status CheckTensorViews(const Allocator& memory, const char* op_name,
                             const MNT_Backend_Run_Args& args) {
  if ((args.num_inputs > 0 && args.inputs == nullptr) ||
      (args.num_outputs > 0 && args.outputs == nullptr)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: inputs/outputs array is NULL but its count is not 0", op_name));
  }
  for (size_t i = 0; i < args.num_inputs; ++i) {
    MNT_RETURN_IF_ERROR(CheckView(memory, op_name, "in", i, args.inputs[i]));
  }
  for (size_t i = 0; i < args.num_outputs; ++i) {
    MNT_RETURN_IF_ERROR(CheckView(memory, op_name, "out", i, args.outputs[i]));
  }
  return sdk::Status::Ok();
}

}  // namespace mnt::backend
