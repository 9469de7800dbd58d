#include <cuda_runtime.h>

#include <cmath>
#include <string>
#include <vector>

#include "tools/cuda_smoke/saxpy.h"

namespace mantissa::cuda_smoke {
namespace {

__global__ void SaxpyKernel(int n, float a, const float* x, float* y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = Saxpy(a, x[i], y[i]);
}

std::string Failed(const char* what, cudaError_t err) {
  return std::string("FAILED: ") + what + ": " + cudaGetErrorString(err);
}

}  // namespace

int DeviceCount() {
  int count = 0;
  // No driver / no GPU is reported as an error code; both mean "no device".
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

std::string RunSaxpyOnDevice(int n) {
  if (DeviceCount() == 0) return "SKIPPED: no CUDA device";
  const float a = 2.0f;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = 0.5f * i;
    y[i] = 1.0f - i;
  }
  float *dx = nullptr, *dy = nullptr;
  cudaError_t err = cudaMalloc(&dx, n * sizeof(float));
  if (err != cudaSuccess) return Failed("cudaMalloc", err);
  err = cudaMalloc(&dy, n * sizeof(float));
  if (err != cudaSuccess) {
    cudaFree(dx);
    return Failed("cudaMalloc", err);
  }
  cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  SaxpyKernel<<<(n + 255) / 256, 256>>>(n, a, dx, dy);
  err = cudaGetLastError();
  std::vector<float> out(n);
  if (err == cudaSuccess) err = cudaMemcpy(out.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(dx);
  cudaFree(dy);
  if (err != cudaSuccess) return Failed("kernel", err);
  for (int i = 0; i < n; ++i) {
    if (std::fabs(out[i] - Saxpy(a, x[i], y[i])) > 1e-5f) return "FAILED: mismatch at " + std::to_string(i);
  }
  return "OK: saxpy on " + std::to_string(n) + " elements";
}

}  // namespace mantissa::cuda_smoke
