// The float storage dtypes as types, so that a kernel can be compiled once
// per storage type (F32Storage, F16Storage, Bf16Storage) and chosen once per
// launch, instead of switching on the dtype for every element it reads.
// Operands in two dtypes (fp32 master gradients and a bf16 working copy)
// take a pair of types (WithStoragePair); AnyStorage keeps the run-time
// switch only for what fits neither. Every type loads and stores with tensor_access.h's conversions, so
// a specialised kernel writes exactly the bits the switching one writes
// (storage_types_test.cc checks it on the CPU).
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_STORAGE_TYPES_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_STORAGE_TYPES_H_

#include <cstdint>
#include <initializer_list>

#include "plugins/abi/mnt_common.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/host_device.h"
#include "plugins/backends/common/tensor_access.h"

namespace mnt {

// Each type: Load(data, dtype, i) -> float and Store(data, dtype, i, v);
// `dtype` is only read by AnyStorage. kDType is the dtype a specialised type
// stands for (INVALID for AnyStorage); kBytes its element size (0: varies).
struct F32Storage {
  static constexpr MNT_DType kDType = MNT_DTYPE_F32;
  static constexpr int kBytes = 4;
  MNT_HOST_DEVICE static float Load(const void* data, MNT_DType, int64_t i) {
    return static_cast<const float*>(data)[i];
  }
  MNT_HOST_DEVICE static void Store(void* data, MNT_DType, int64_t i, float v) {
    static_cast<float*>(data)[i] = v;
  }
};

struct F16Storage {
  static constexpr MNT_DType kDType = MNT_DTYPE_F16;
  static constexpr int kBytes = 2;
  MNT_HOST_DEVICE static float Load(const void* data, MNT_DType, int64_t i) {
    return HalfBitsToFloat(static_cast<const uint16_t*>(data)[i]);
  }
  MNT_HOST_DEVICE static void Store(void* data, MNT_DType, int64_t i, float v) {
    static_cast<uint16_t*>(data)[i] = FloatToHalfBits(v);
  }
};

struct Bf16Storage {
  static constexpr MNT_DType kDType = MNT_DTYPE_BF16;
  static constexpr int kBytes = 2;
  MNT_HOST_DEVICE static float Load(const void* data, MNT_DType, int64_t i) {
    return Bf16BitsToFloat(static_cast<const uint16_t*>(data)[i]);
  }
  MNT_HOST_DEVICE static void Store(void* data, MNT_DType, int64_t i, float v) {
    static_cast<uint16_t*>(data)[i] = FloatToBf16Bits(v);
  }
};

struct AnyStorage {
  static constexpr MNT_DType kDType = MNT_DTYPE_INVALID;
  static constexpr int kBytes = 0;
  MNT_HOST_DEVICE static float Load(const void* data, MNT_DType dtype, int64_t i) {
    return LoadAsFloat(data, dtype, i);
  }
  MNT_HOST_DEVICE static void Store(void* data, MNT_DType dtype, int64_t i, float v) {
    StoreFromFloat(data, dtype, i, v);
  }
};

// The dtype every listed operand shares, ignoring absent ones (INVALID);
// INVALID when two differ or none is present.
inline MNT_DType CommonDType(std::initializer_list<MNT_DType> dtypes) {
  MNT_DType common = MNT_DTYPE_INVALID;
  for (MNT_DType d : dtypes) {
    if (d == MNT_DTYPE_INVALID) continue;
    if (common == MNT_DTYPE_INVALID) {
      common = d;
    } else if (d != common) {
      return MNT_DTYPE_INVALID;
    }
  }
  return common;
}

// f(StorageType{}) for `dtype`'s storage type; AnyStorage for anything else.
template <typename F>
decltype(auto) WithStorage(MNT_DType dtype, F&& f) {
  switch (dtype) {
    case MNT_DTYPE_F32: return f(F32Storage{});
    case MNT_DTYPE_F16: return f(F16Storage{});
    case MNT_DTYPE_BF16: return f(Bf16Storage{});
    default: return f(AnyStorage{});
  }
}

// f(A{}, B{}) for two operand groups whose dtypes may differ (an fp32
// master gradient and a bf16 working copy, a bf16 gradient added into fp32):
// each of the nine pairs of float storage types compiled in, so a kernel
// over mixed operands reads and writes without a per-element switch. Both
// are AnyStorage when either dtype is not a float storage dtype (never for
// operands the contract checks admitted; kept so that nothing is guessed).
template <typename F>
decltype(auto) WithStoragePair(MNT_DType a, MNT_DType b, F&& f) {
  auto with_b = [&](auto first) -> decltype(auto) {
    switch (b) {
      case MNT_DTYPE_F32: return f(first, F32Storage{});
      case MNT_DTYPE_F16: return f(first, F16Storage{});
      case MNT_DTYPE_BF16: return f(first, Bf16Storage{});
      default: return f(AnyStorage{}, AnyStorage{});
    }
  };
  switch (a) {
    case MNT_DTYPE_F32: return with_b(F32Storage{});
    case MNT_DTYPE_F16: return with_b(F16Storage{});
    case MNT_DTYPE_BF16: return with_b(Bf16Storage{});
    default: return f(AnyStorage{}, AnyStorage{});
  }
}

}  // namespace mnt

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_STORAGE_TYPES_H_
