// Mantissa plugin SDK: building and inspecting MNT_Tensor views.
#ifndef MANTISSA_PLUGINS_SDK_TENSOR_H_
#define MANTISSA_PLUGINS_SDK_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "plugins/abi/mnt_common.h"

namespace mnt::sdk {

inline size_t DTypeSize(MNT_DType t) {
  switch (t) {
    case MNT_DTYPE_F32: return 4;
    case MNT_DTYPE_F16: return 2;
    case MNT_DTYPE_BF16: return 2;
    case MNT_DTYPE_I32: return 4;
    case MNT_DTYPE_U8: return 1;
    case MNT_DTYPE_F64: return 8;
    default: return 0;
  }
}

inline const char* DTypeName(MNT_DType t) {
  switch (t) {
    case MNT_DTYPE_F32: return "f32";
    case MNT_DTYPE_F16: return "f16";
    case MNT_DTYPE_BF16: return "bf16";
    case MNT_DTYPE_I32: return "i32";
    case MNT_DTYPE_U8: return "u8";
    case MNT_DTYPE_F64: return "f64";
    default: return "invalid";
  }
}

inline bool IsFloatStorage(MNT_DType t) {
  return t == MNT_DTYPE_F32 || t == MNT_DTYPE_F16 || t == MNT_DTYPE_BF16;
}

inline int64_t NumElements(const MNT_Tensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.dims[i];
  return n;
}

inline size_t SizeBytes(const MNT_Tensor& t) {
  return static_cast<size_t>(NumElements(t)) * DTypeSize(t.dtype);
}

inline MNT_Tensor MakeTensor(void* data, MNT_DType dtype,
                             std::initializer_list<int64_t> dims) {
  MNT_Tensor t{};
  t.struct_size = MNT_Tensor_STRUCT_SIZE;
  t.data = data;
  t.dtype = dtype;
  t.rank = 0;
  for (int64_t d : dims) {
    if (t.rank < MNT_MAX_RANK) t.dims[t.rank++] = d;
  }
  return t;
}

inline MNT_Tensor MakeTensor(void* data, MNT_DType dtype, int32_t rank,
                             const int64_t* dims) {
  MNT_Tensor t{};
  t.struct_size = MNT_Tensor_STRUCT_SIZE;
  t.data = data;
  t.dtype = dtype;
  t.rank = rank;
  for (int i = 0; i < rank && i < MNT_MAX_RANK; ++i) t.dims[i] = dims[i];
  return t;
}

// "f32[4,3]" for error messages.
inline std::string Describe(const MNT_Tensor& t) {
  std::string s = DTypeName(t.dtype);
  s += "[";
  for (int i = 0; i < t.rank; ++i) {
    if (i) s += ",";
    s += std::to_string(t.dims[i]);
  }
  return s + "]";
}

}  // namespace mnt::sdk

#endif  // MANTISSA_PLUGINS_SDK_TENSOR_H_
