#include "models/common/views.h"

#include "plugins/sdk/tensor.h"

namespace mnt::models {

MNT_Tensor View(void* data, MNT_DType dtype, const std::vector<int64_t>& dims) {
  return sdk::MakeTensor(data, dtype, static_cast<int32_t>(dims.size()),
                         dims.data());
}

MNT_Tensor Reshape(const MNT_Tensor& t, const std::vector<int64_t>& dims) {
  return View(t.data, t.dtype, dims);
}

MNT_Tensor Layer(const MNT_Tensor& stacked, int64_t layer) {
  const std::vector<int64_t> dims(stacked.dims + 1,
                                  stacked.dims + stacked.rank);
  int64_t per_layer = 1;
  for (int64_t d : dims) per_layer *= d;
  // Pointer arithmetic only: device memory is never dereferenced here.
  char* base = static_cast<char*>(stacked.data) +
               layer * per_layer * sdk::DTypeSize(stacked.dtype);
  return View(base, stacked.dtype, dims);
}

}  // namespace mnt::models
