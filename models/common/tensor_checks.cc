#include "models/common/tensor_checks.h"

#include "plugins/sdk/tensor.h"

namespace mnt::models {
namespace {

sdk::Status CheckPresent(const std::string& context, const std::string& what,
                         const MNT_Tensor* t) {
  if (t == nullptr) {
    return sdk::InvalidArgument(context + ": " + what + " is NULL");
  }
  if (t->struct_size < MNT_Tensor_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s has struct_size %zu, smaller than MNT_Tensor's %zu",
        context.c_str(), what.c_str(), t->struct_size,
        static_cast<size_t>(MNT_Tensor_STRUCT_SIZE)));
  }
  if (t->rank < 0 || t->rank > MNT_MAX_RANK) {
    return sdk::InvalidArgument(sdk::Format("%s: %s has rank %d",
                                            context.c_str(), what.c_str(),
                                            t->rank));
  }
  if (t->data == nullptr) {
    return sdk::InvalidArgument(context + ": " + what + " " +
                                sdk::Describe(*t) + " has NULL data");
  }
  return sdk::Status::Ok();
}

}  // namespace

std::string DescribeShape(MNT_DType dtype, const std::vector<int64_t>& dims) {
  std::string s = sdk::DTypeName(dtype);
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

sdk::Status CheckTensor(const std::string& context, const std::string& what,
                        const MNT_Tensor* t, MNT_DType dtype,
                        const std::vector<int64_t>& dims) {
  MNT_RETURN_IF_ERROR(CheckPresent(context, what, t));
  bool same = t->dtype == dtype && t->rank == static_cast<int32_t>(dims.size());
  for (int i = 0; same && i < t->rank; ++i) same = t->dims[i] == dims[i];
  if (!same) {
    return sdk::InvalidArgument(context + ": " + what + " is " +
                                sdk::Describe(*t) + ", expected " +
                                DescribeShape(dtype, dims));
  }
  return sdk::Status::Ok();
}

sdk::Status CheckScalar(const std::string& context, const std::string& what,
                        const MNT_Tensor* t, MNT_DType dtype) {
  MNT_RETURN_IF_ERROR(CheckPresent(context, what, t));
  if (t->dtype != dtype || sdk::NumElements(*t) != 1) {
    return sdk::InvalidArgument(context + ": " + what + " is " +
                                sdk::Describe(*t) + ", expected " +
                                DescribeShape(dtype, {1}));
  }
  return sdk::Status::Ok();
}

}  // namespace mnt::models
