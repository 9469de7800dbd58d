// Reading float tensors of any storage dtype as fp32 and writing fp32 results
// back rounded to nearest-even; large tensors are converted by all threads.
// Kernels read whole operands first and write last, which also makes the
// permitted output/input aliasing safe.
#ifndef MANTISSA_PLUGINS_BACKENDS_CPU_TENSOR_IO_H_
#define MANTISSA_PLUGINS_BACKENDS_CPU_TENSOR_IO_H_

#include <cstdint>
#include <vector>

#include "plugins/abi/mnt_common.h"

namespace mnt::cpu {

// `t` must have a float storage dtype (checked by the caller).
std::vector<float> ReadF32(const MNT_Tensor& t);
void ReadF32(const MNT_Tensor& t, float* dst);
// Elements [offset, offset + n) of a float tensor, read as / written from
// fp32 (one thread: callers split work themselves).
void ReadF32Range(const MNT_Tensor& t, int64_t offset, int64_t n, float* dst);
void WriteF32Range(const float* src, const MNT_Tensor& t, int64_t offset, int64_t n);
// Writes NumElements(t) values.
void WriteF32(const float* src, const MNT_Tensor& t);
// ReadF32, each value rounded to the compute format (GEMM and convolution
// operands: what a tensor core multiplies).
std::vector<float> ReadRounded(const MNT_Tensor& t, MNT_ComputeMode mode);
void ReadRounded(const MNT_Tensor& t, MNT_ComputeMode mode, float* dst);
// Any float dtype as bf16 bits, rounded to nearest-even (the native bf16 GEMM's
// operands).
void ReadBf16(const MNT_Tensor& t, uint16_t* dst);

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_TENSOR_IO_H_
