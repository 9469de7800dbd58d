// Which tensor dtype cuDNN runs one convolution on (conv_cudnn.cc), and
// which operands it can read in place. Host-only and free of cuDNN, so the
// CPU tests it (conv_io_test.cc).
//
// cuDNN's legacy API wants x, w and y in one dtype. With a 16-bit compute
// mode the natural choice is that 16-bit format, but an output stored in
// fp32 (or in the other 16-bit format) would then be rounded to 16 bits
// and widened again: a mixed-storage convolution would lose the fp32
// accumulator's bits the CPU reference keeps. So the 16-bit format is used
// only when the output is stored in it; otherwise cuDNN runs on fp32
// tensors holding the operands rounded to the compute format. Those values
// are exact in fp32 and in TF32 (8-bit exponent, 10 mantissa bits), so
// TF32 tensor cores multiply exactly the values the 16-bit path would, and
// the fp32 result is stored once, rounded from the accumulator.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_IO_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_IO_H_

#include "plugins/abi/mnt_common.h"

namespace mnt::cuda {

// The compute mode's own 16-bit format, or F32 for the fp32/tf32 modes.
inline MNT_DType ComputeFormat(MNT_ComputeMode mode) {
  switch (mode) {
    case MNT_COMPUTE_BF16: return MNT_DTYPE_BF16;
    case MNT_COMPUTE_F16: return MNT_DTYPE_F16;
    default: return MNT_DTYPE_F32;
  }
}

// cuDNN's tensor dtype for a convolution whose output is stored as `out`.
// `bias_added`: a bias is added to cuDNN's result (the forward with a bias).
// Then the result stays fp32 until the bias is in and is rounded once, as
// the CPU reference does; a 16-bit io would round it to 16 bits, and the
// bias add would round it again.
inline MNT_DType ConvIoType(MNT_ComputeMode mode, MNT_DType out, bool bias_added = false) {
  const MNT_DType format = ComputeFormat(mode);
  return out == format && !bias_added ? format : MNT_DTYPE_F32;
}

// An operand stored as `dtype` can be handed to cuDNN as it is: already in
// `io`, and (for fp32 io under a 16-bit mode) needing no rounding to the
// compute format first. Under fp32/tf32 an fp32 operand is used as stored
// (tf32 rounding is the tensor cores', as in the GEMM).
inline bool ConvOperandInPlace(MNT_DType dtype, MNT_ComputeMode mode, MNT_DType io) {
  if (dtype != io) return false;
  return io != MNT_DTYPE_F32 || ComputeFormat(mode) == MNT_DTYPE_F32;
}

}  // namespace mnt::cuda

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_CONV_IO_H_
