// Mantissa models: one-line validation of the tensors a model is handed.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_TENSOR_CHECKS_H_
#define MANTISSA_PLUGINS_SDK_MODEL_TENSOR_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

// "f32[4,3]"-style text of an expected shape.
std::string DescribeShape(MNT_DType dtype, const std::vector<int64_t>& dims);

// OK when `t` is non-NULL, has a data pointer, the dtype and exactly `dims`;
// otherwise InvalidArgument "<context>: <what> is f32[2,3], expected bf16[2,4]".
sdk::Status CheckTensor(const std::string& context, const std::string& what,
                        const MNT_Tensor* t, MNT_DType dtype,
                        const std::vector<int64_t>& dims);

// OK when `t` is non-NULL with data, the dtype, and exactly one element
// (any rank, e.g. [1] or [1,1]).
sdk::Status CheckScalar(const std::string& context, const std::string& what,
                        const MNT_Tensor* t, MNT_DType dtype);

// Implementation (header-only: the SDK ships no library).

namespace detail {

inline sdk::Status CheckPresent(const std::string& context, const std::string& what,
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

}  // namespace detail

inline std::string DescribeShape(MNT_DType dtype, const std::vector<int64_t>& dims) {
  std::string s = sdk::DTypeName(dtype);
  s += "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

inline sdk::Status CheckTensor(const std::string& context, const std::string& what,
                               const MNT_Tensor* t, MNT_DType dtype,
                               const std::vector<int64_t>& dims) {
  MNT_RETURN_IF_ERROR(detail::CheckPresent(context, what, t));
  bool same = t->dtype == dtype && t->rank == static_cast<int32_t>(dims.size());
  for (int i = 0; same && i < t->rank; ++i) same = t->dims[i] == dims[i];
  if (!same) {
    return sdk::InvalidArgument(context + ": " + what + " is " +
                                sdk::Describe(*t) + ", expected " +
                                DescribeShape(dtype, dims));
  }
  return sdk::Status::Ok();
}

inline sdk::Status CheckScalar(const std::string& context, const std::string& what,
                               const MNT_Tensor* t, MNT_DType dtype) {
  MNT_RETURN_IF_ERROR(detail::CheckPresent(context, what, t));
  if (t->dtype != dtype || sdk::NumElements(*t) != 1) {
    return sdk::InvalidArgument(context + ": " + what + " is " +
                                sdk::Describe(*t) + ", expected " +
                                DescribeShape(dtype, {1}));
  }
  return sdk::Status::Ok();
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_TENSOR_CHECKS_H_
