// Mantissa models: one-line validation of the tensors a model is handed.
#ifndef MANTISSA_MODELS_COMMON_TENSOR_CHECKS_H_
#define MANTISSA_MODELS_COMMON_TENSOR_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/status.h"

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

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_TENSOR_CHECKS_H_
