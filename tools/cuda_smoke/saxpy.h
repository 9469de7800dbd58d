// Tiny CUDA smoke test for //tools:cuda.bzl. The math lives in a header as a
// __host__ __device__ function so the same code is checked on CPU-only hosts.
#ifndef MANTISSA_TOOLS_CUDA_SMOKE_SAXPY_H_
#define MANTISSA_TOOLS_CUDA_SMOKE_SAXPY_H_

#include <string>

#ifdef __CUDACC__
#define MNT_HOST_DEVICE __host__ __device__
#else
#define MNT_HOST_DEVICE
#endif

namespace mantissa::cuda_smoke {

MNT_HOST_DEVICE inline float Saxpy(float a, float x, float y) { return a * x + y; }

// Number of visible CUDA devices (0 when there is no GPU or no driver).
int DeviceCount();

// Runs y = a*x + y for n elements on the GPU and checks it against Saxpy()
// on the host. Returns "OK: ...", "SKIPPED: no CUDA device", or "FAILED: ...".
std::string RunSaxpyOnDevice(int n);

}  // namespace mantissa::cuda_smoke

#endif  // MANTISSA_TOOLS_CUDA_SMOKE_SAXPY_H_
