// The no-fma check's canary: a * b + c written plainly, which nvcc
// contracts into one fma.rn.f32 by default. kernel_checks.py no-fma fails
// unless it finds that fma here, so it cannot pass for want of seeing one.
__global__ void FmaCanaryKernel(const float* a, const float* b, const float* c, float* out) {
  const int i = threadIdx.x;
  out[i] = a[i] * b[i] + c[i];
}
