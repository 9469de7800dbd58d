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
// Where a kernel writes an fp32 result for `t`: t itself when it is fp32 and
// overwritten, else *buf (then StoreResult).
float* ResultTarget(const MNT_Tensor& t, bool accumulate, std::vector<float>* buf);
// Moves a result from ResultTarget's buffer into t: stored, or added to t's
// values in fp32 and rounded once (*tmp: scratch for a 16-bit t).
void StoreResult(const float* result, const MNT_Tensor& t, bool accumulate,
                 std::vector<float>* tmp);
// ReadF32, each value rounded to the compute format (GEMM and convolution
// operands: what a tensor core multiplies).
std::vector<float> ReadRounded(const MNT_Tensor& t, MNT_ComputeMode mode);
void ReadRounded(const MNT_Tensor& t, MNT_ComputeMode mode, float* dst);
// Any float dtype as bf16 bits, rounded to nearest-even (the native bf16 GEMM's
// operands).
void ReadBf16(const MNT_Tensor& t, uint16_t* dst);

// Blocked access for kernels that work on the tensors' own memory: an fp32
// tensor's elements [offset, offset + n) are used in place; any other float
// dtype goes through `scratch` (n floats, the caller's stack), one block at a
// time. An output block is computed into OutBlock's pointer and stored with
// StoreBlock (a no-op for fp32).
inline const float* InBlock(const MNT_Tensor& t, int64_t offset, int64_t n, float* scratch) {
  if (t.dtype == MNT_DTYPE_F32) return static_cast<const float*>(t.data) + offset;
  ReadF32Range(t, offset, n, scratch);
  return scratch;
}
inline float* OutBlock(const MNT_Tensor& t, int64_t offset, float* scratch) {
  return t.dtype == MNT_DTYPE_F32 ? static_cast<float*>(t.data) + offset : scratch;
}
inline void StoreBlock(const float* values, const MNT_Tensor& t, int64_t offset, int64_t n) {
  if (t.dtype != MNT_DTYPE_F32) WriteF32Range(values, t, offset, n);
}
// The same for row r of a [rows, width] tensor, with a growable per-thread
// buffer for rows too long for the stack.
inline const float* InRow(const MNT_Tensor& t, int64_t r, int64_t width,
                          std::vector<float>* buf) {
  if (t.dtype == MNT_DTYPE_F32) return static_cast<const float*>(t.data) + r * width;
  buf->resize(static_cast<size_t>(width));
  ReadF32Range(t, r * width, width, buf->data());
  return buf->data();
}
inline float* OutRow(const MNT_Tensor& t, int64_t r, int64_t width, std::vector<float>* buf) {
  if (t.dtype == MNT_DTYPE_F32) return static_cast<float*>(t.data) + r * width;
  buf->resize(static_cast<size_t>(width));
  return buf->data();
}

}  // namespace mnt::cpu

#endif  // MANTISSA_PLUGINS_BACKENDS_CPU_TENSOR_IO_H_
