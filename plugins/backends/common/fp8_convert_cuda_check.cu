// Compiles fp8_convert.h as device code (nvcc, every architecture the CUDA
// backend builds for), so the conversions stay MNT_HOST_DEVICE-clean: a
// host-only call or constant in them fails this build, not a later kernel.
// Nothing launches the kernel; fp8_convert_test checks the math on the CPU.
#include <cstdint>

#include "plugins/backends/common/fp8_convert.h"

namespace mnt {

__global__ void Fp8ConvertDeviceCheckKernel(const float* in, bool saturate, uint8_t* e4m3,
                                            uint8_t* e5m2, float* rounded, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  e4m3[i] = FloatToFp8E4M3Bits(in[i], saturate);
  e5m2[i] = FloatToFp8E5M2Bits(in[i], saturate);
  rounded[i] = Fp8E4M3BitsToFloat(e4m3[i]) + Fp8E5M2BitsToFloat(e5m2[i]) +
               RoundToFp8E4M3(in[i]) + RoundToFp8E5M2(in[i]) + kFp8E4M3Max + kFp8E5M2Max;
}

}  // namespace mnt
