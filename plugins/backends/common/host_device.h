// MNT_HOST_DEVICE marks per-element math that the CPU backend and the CUDA
// kernels share: __host__ __device__ under nvcc, nothing elsewhere.
#ifndef MANTISSA_PLUGINS_BACKENDS_COMMON_HOST_DEVICE_H_
#define MANTISSA_PLUGINS_BACKENDS_COMMON_HOST_DEVICE_H_

#ifdef __CUDACC__
#define MNT_HOST_DEVICE __host__ __device__
#else
#define MNT_HOST_DEVICE
#endif

#endif  // MANTISSA_PLUGINS_BACKENDS_COMMON_HOST_DEVICE_H_
