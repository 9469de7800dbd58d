// How far an FP8 GEMM on Hopper's tensor cores may be from the exact sum,
// for the GPU test's tolerances (cuda_fp8_test) and the CPU test that checks
// the bound against an emulation of the accumulator (fp8_gemm_bound_test).
//
// What the hardware does (public sources; NVIDIA documents no figure):
//  - the FP8 tensor-core accumulator keeps about 14 significant bits, not
//    fp32's 24: DeepSeek-V3 Technical Report (arXiv 2412.19437), section
//    3.3.2, measured on H800 ("limited to retaining around 14 bits"); others
//    describe it as an e8m13 format whose extra bits are truncated;
//  - wgmma's FP8 shapes take K = 32 per instruction (PTX ISA, wgmma.mma_async
//    .e4m3/.e5m2: m64nNk32), so the accumulator is updated once per 32
//    products;
//  - cuBLASLt promotes the partial sums to a higher precision periodically
//    unless CUBLASLT_MATMUL_DESC_FAST_ACCUM is set ("intermediate results
//    will not periodically be promoted to a higher precision", cuBLAS
//    documentation); the interval is not documented.
//
// The model and the bound: products of FP8 values are exact. A step adds
// g <= 32 of them to the accumulator; the worst case truncates each of the
// g + 1 addends to the last bit kept at the largest one's exponent (each
// error below u = 2^-13 of the largest, 13 fraction bits) and then the sum
// to 14 significant bits (below u of the sum). Both the largest addend and
// the sum are at most the magnitudes summed so far, so a step errs by at
// most (g + 2) u sum |a b| over all K products, and the ceil(K/32) steps
// together, to first order, by
//   |D - exact| <= n u sum_k |a_k b_k|,  n = K + 2 ceil(K/32);
// n u / (1 - n u) covers the second-order terms. Periodic promotion only
// splits the sum into shorter ones added in fp32 (2^-24 each), which keeps
// it under the same bound, so it holds with fast accumulation on or off.
// K = 64: 8.4e-3 of sum |a b|. Random data errs far less (the truncations
// do not all meet their worst case); cuda_fp8_test prints what it measured.
#ifndef MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_FP8_GEMM_BOUND_H_
#define MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_FP8_GEMM_BOUND_H_

#include <cmath>
#include <cstdint>

namespace mnt::cuda::testing {

// Fraction bits the FP8 tensor-core accumulator keeps (14 significant).
inline constexpr int kFp8AccumulatorFractionBits = 13;
// Products per accumulator update (wgmma's K for FP8 operands).
inline constexpr int64_t kFp8MmaK = 32;

// The bound above as a fraction of sum_k |a_k b_k| for a dot product of
// length k.
inline double Fp8GemmAccumulationBound(int64_t k) {
  const double u = std::ldexp(1.0, -kFp8AccumulatorFractionBits);
  const double n = static_cast<double>(k) + 2.0 * static_cast<double>((k + kFp8MmaK - 1) / kFp8MmaK);
  return n * u / (1.0 - n * u);
}

}  // namespace mnt::cuda::testing

#endif  // MANTISSA_PLUGINS_BACKENDS_CUDA_TESTING_FP8_GEMM_BOUND_H_
