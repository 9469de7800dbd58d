// Mantissa models: MNT_Tensor views of memory a model was handed or owns.
// A view copies nothing; it names the dtype and dims a kernel should see.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_VIEWS_H_
#define MANTISSA_PLUGINS_SDK_MODEL_VIEWS_H_

#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

MNT_Tensor View(void* data, MNT_DType dtype, const std::vector<int64_t>& dims);

// The same bytes with other dims (same element count is the caller's duty).
MNT_Tensor Reshape(const MNT_Tensor& t, const std::vector<int64_t>& dims);

// Layer `layer` of a parameter (or gradient) stacked along a leading [L]
// dimension: [L, d...] -> [d...].
MNT_Tensor Layer(const MNT_Tensor& stacked, int64_t layer);

// Implementation (header-only: the SDK ships no library).

inline MNT_Tensor View(void* data, MNT_DType dtype, const std::vector<int64_t>& dims) {
  return sdk::MakeTensor(data, dtype, static_cast<int32_t>(dims.size()),
                         dims.data());
}

inline MNT_Tensor Reshape(const MNT_Tensor& t, const std::vector<int64_t>& dims) {
  return View(t.data, t.dtype, dims);
}

inline MNT_Tensor Layer(const MNT_Tensor& stacked, int64_t layer) {
  const std::vector<int64_t> dims(stacked.dims + 1,
                                  stacked.dims + stacked.rank);
  int64_t per_layer = 1;
  for (int64_t d : dims) per_layer *= d;
  // A frozen parameter's gradient (ABI 1.13) has no memory: NULL stays NULL.
  if (stacked.data == nullptr) return View(nullptr, stacked.dtype, dims);
  // Pointer arithmetic only: device memory is never dereferenced here.
  char* base = static_cast<char*>(stacked.data) +
               layer * per_layer * sdk::DTypeSize(stacked.dtype);
  return View(base, stacked.dtype, dims);
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_VIEWS_H_
