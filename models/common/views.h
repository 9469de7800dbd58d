// Mantissa models: MNT_Tensor views of memory a model was handed or owns.
// A view copies nothing; it names the dtype and dims a kernel should see.
#ifndef MANTISSA_MODELS_COMMON_VIEWS_H_
#define MANTISSA_MODELS_COMMON_VIEWS_H_

#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_common.h"

namespace mnt::models {

MNT_Tensor View(void* data, MNT_DType dtype, const std::vector<int64_t>& dims);

// The same bytes with other dims (same element count is the caller's duty).
MNT_Tensor Reshape(const MNT_Tensor& t, const std::vector<int64_t>& dims);

// Layer `layer` of a parameter (or gradient) stacked along a leading [L]
// dimension: [L, d...] -> [d...].
MNT_Tensor Layer(const MNT_Tensor& stacked, int64_t layer);

}  // namespace mnt::models

#endif  // MANTISSA_MODELS_COMMON_VIEWS_H_
