// The FP8 ops (ABI 1.9) on the cuda backend: SCALED_CAST in both directions
// (every x dtype and FP8 format, saturation, infinities, NaN, signed zeros,
// all 256 codes; the optional amax, NaN-propagating) and SCALED_GEMM (every
// trans_a/trans_b, a shape cuBLASLt takes as it is and one that needs the
// padded path, every D dtype and operand pairing, alpha, beta, bias in each
// dtype, fast accumulation, amax). Each op is checked against a float64
// host reference built from common/fp8_convert.h (bit-exact for SCALED_CAST)
// and, where the CPU backend runs the op (Backend_GetOpSupport), against the
// CPU backend on the same inputs. Skips without a GPU; the SCALED_GEMM part
// skips below sm_89 after checking that the op is refused there in one line.
// FP8_SCALE_UPDATE (ABI 1.10, any GPU): fresh random histories, amax with
// zeros, infinities and NaN, every amax_algo, history_length, margins into
// and past fp32's subnormals, several steps in a row: history, scale and
// scale_inv bit for bit against a float64 reference written from the ABI
// text and against the CPU backend.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/backends/common/fp8_convert.h"
#include "plugins/backends/cuda/testing/fp8_gemm_bound.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"
#include "plugins/sdk/tensor.h"

namespace mnt::cuda {
namespace {

using testing::DualBackend;
using testing::DualBackendTest;
using testing::Pair;

int32_t OpSupported(const sdk::BackendClient& c, MNT_Op op) {
  MNT_Backend_GetOpSupport_Args a{};
  a.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
  a.backend = c.backend();
  a.op = op;
  const sdk::Status s = sdk::StatusFromPluginError(c.plugin(), c.api()->Backend_GetOpSupport(&a));
  EXPECT_TRUE(s.ok()) << s.message();
  return a.supported;
}

int DeviceSm() {
  int device = 0, major = 0, minor = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    return 0;
  }
  return major * 10 + minor;
}

uint8_t Encode(MNT_DType fp8, float v) {
  return fp8 == MNT_DTYPE_F8_E5M2 ? FloatToFp8E5M2Bits(v) : FloatToFp8E4M3Bits(v);
}
float Decode(MNT_DType fp8, uint8_t b) {
  return fp8 == MNT_DTYPE_F8_E5M2 ? Fp8E5M2BitsToFloat(b) : Fp8E4M3BitsToFloat(b);
}

// What `dtype` stores for v (fp32: v itself), as fp32.
float RoundTo(MNT_DType dtype, float v) {
  switch (dtype) {
    case MNT_DTYPE_F16: return HalfBitsToFloat(FloatToHalfBits(v));
    case MNT_DTYPE_BF16: return Bf16BitsToFloat(FloatToBf16Bits(v));
    default: return v;
  }
}

// Same value, or both NaN (the sign of zero counts).
bool SameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  uint32_t x, y;
  std::memcpy(&x, &a, 4);
  std::memcpy(&y, &b, 4);
  return x == y;
}

class CudaFp8Test : public DualBackendTest {
 protected:
  // Whether the CPU backend runs `op` (it may not yet): said once per op.
  bool CpuRuns(MNT_Op op) {
    const bool runs = OpSupported(d_.cpu(), op) != 0;
    if (!runs) {
      std::printf("NOTE: the cpu backend does not run %s; compared with the float64 host "
                  "reference only\n",
                  sdk::OpName(op));
    }
    return runs;
  }
  // Runs on cuda (and on cpu when `with_cpu`); the cuda status.
  sdk::Status Run(bool with_cpu, MNT_Op op, const std::vector<const Pair*>& in,
                  const std::vector<const Pair*>& out, const void* params = nullptr) {
    if (with_cpu) return d_.RunBoth(op, in, out, params);
    sdk::Status s = d_.RunCuda(op, in, out, params);
    if (s.ok()) s = d_.cuda().Synchronize();
    return s;
  }
  float Amax(const Pair& p, bool from_cuda) { return d_.Download(p, from_cuda)[0]; }
};

TEST_F(CudaFp8Test, OpSupport) {
  EXPECT_EQ(OpSupported(d_.cuda(), MNT_OP_SCALED_CAST), 1);
  EXPECT_EQ(OpSupported(d_.cuda(), MNT_OP_FP8_SCALE_UPDATE), 1);
  EXPECT_EQ(OpSupported(d_.cuda(), MNT_OP_SCALED_GEMM), DeviceSm() >= 89 ? 1 : 0)
      << "sm_" << DeviceSm();
}

// ---- SCALED_CAST -----------------------------------------------------------------

TEST_F(CudaFp8Test, QuantizeMatchesFp8ConvertBitForBit) {
  const bool cpu = CpuRuns(MNT_OP_SCALED_CAST);
  const int64_t n = 10007;  // not a multiple of anything
  const float scale = 37.5f;
  std::vector<float> x = Random(n, 4.0f);
  // Specials: overflow (saturates), infinities (saturate), signed zeros,
  // values that round to zero, ties near the top of each format.
  const float specials[] = {0.0f,    -0.0f,   1e-9f,    -1e-9f,  464.0f / scale,
                            1e4f,    -1e4f,   INFINITY, -INFINITY, 61440.0f / scale,
                            -448.0f / scale,  1e30f,   -1e30f};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); ++i) x[i * 7] = specials[i];
  for (MNT_DType xd : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
    for (MNT_DType fp8 : {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E5M2}) {
      for (bool with_amax : {true, false}) {
        SCOPED_TRACE(std::string(sdk::DTypeName(xd)) + " -> " + sdk::DTypeName(fp8) +
                     (with_amax ? " with amax" : ""));
        const std::vector<float> xs = testing::RoundedTo(x, xd);
        auto xp = d_.Upload(x, xd, {n});
        auto sp = d_.Upload({scale}, MNT_DTYPE_F32, {1});
        auto yp = d_.UploadRaw(std::vector<uint8_t>(n, 0x55), fp8, {n});
        auto amax = d_.Poisoned(MNT_DTYPE_F32, {1});
        std::vector<const Pair*> outs = {yp.get()};
        if (with_amax) outs.push_back(amax.get());
        const sdk::Status s = Run(cpu, MNT_OP_SCALED_CAST, {xp.get(), sp.get()}, outs);
        ASSERT_TRUE(s.ok()) << s.message();
        const std::vector<uint8_t> got = d_.Bytes(*yp, true);
        float want_amax = 0.0f;
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          const uint8_t want = Encode(fp8, xs[i] * scale);
          if (got[i] != want && bad++ < 5) {
            ADD_FAILURE() << "element " << i << ": x " << xs[i] << " -> 0x" << std::hex
                          << int(got[i]) << ", want 0x" << int(want);
          }
          want_amax = std::max(want_amax, std::fabs(xs[i]));
        }
        EXPECT_EQ(bad, 0);
        if (cpu) {
          EXPECT_EQ(got, d_.Bytes(*yp, false)) << "cuda vs cpu";
        }
        if (with_amax) {
          EXPECT_TRUE(SameFloat(Amax(*amax, true), want_amax))
              << Amax(*amax, true) << " vs " << want_amax;
          if (cpu) {
            EXPECT_TRUE(SameFloat(Amax(*amax, true), Amax(*amax, false)));
          }
        }
      }
    }
  }
}

TEST_F(CudaFp8Test, DequantizeEveryCode) {
  const bool cpu = CpuRuns(MNT_OP_SCALED_CAST);
  const float scale_inv = 1.0f / 37.5f;
  for (MNT_DType fp8 : {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E5M2}) {
    // Every code 40 times, shuffled; then without the NaN codes (amax a
    // number, or +inf for E5M2's infinities).
    for (bool with_nan : {true, false}) {
      std::vector<uint8_t> codes;
      for (int rep = 0; rep < 40; ++rep) {
        for (int c = 0; c < 256; ++c) {
          if (!with_nan && std::isnan(Decode(fp8, static_cast<uint8_t>(c)))) continue;
          codes.push_back(static_cast<uint8_t>(c));
        }
      }
      std::shuffle(codes.begin(), codes.end(), rng_);
      const int64_t n = static_cast<int64_t>(codes.size());
      for (MNT_DType yd : {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16}) {
        SCOPED_TRACE(std::string(sdk::DTypeName(fp8)) + " -> " + sdk::DTypeName(yd) +
                     (with_nan ? " with NaN codes" : ""));
        auto xp = d_.UploadRaw(codes, fp8, {n});
        auto sp = d_.Upload({scale_inv}, MNT_DTYPE_F32, {1});
        auto yp = d_.Poisoned(yd, {n});
        auto amax = d_.Poisoned(MNT_DTYPE_F32, {1});
        const sdk::Status s =
            Run(cpu, MNT_OP_SCALED_CAST, {xp.get(), sp.get()}, {yp.get(), amax.get()});
        ASSERT_TRUE(s.ok()) << s.message();
        const std::vector<float> got = d_.Download(*yp, true);
        float want_amax = 0.0f;
        bool amax_nan = false;
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          const float v = Decode(fp8, codes[i]);
          const float want = RoundTo(yd, v * scale_inv);
          if (!SameFloat(got[i], want) && bad++ < 5) {
            ADD_FAILURE() << "code 0x" << std::hex << int(codes[i]) << std::dec << ": got "
                          << got[i] << ", want " << want;
          }
          if (std::isnan(v)) amax_nan = true;
          else want_amax = std::max(want_amax, std::fabs(v));
        }
        EXPECT_EQ(bad, 0);
        if (cpu) {
          EXPECT_EQ(d_.Bytes(*yp, true), d_.Bytes(*yp, false)) << "cuda vs cpu";
        }
        const float got_amax = Amax(*amax, true);
        if (amax_nan) {
          EXPECT_TRUE(std::isnan(got_amax)) << got_amax;
        } else {
          EXPECT_EQ(got_amax, want_amax);
        }
        if (cpu) {
          EXPECT_TRUE(SameFloat(got_amax, Amax(*amax, false)));
        }
      }
    }
  }
}

TEST_F(CudaFp8Test, QuantizeNanStaysNanAndMakesAmaxNan) {
  const bool cpu = CpuRuns(MNT_OP_SCALED_CAST);
  const int64_t n = 70001;  // several blocks: the NaN is in one of them
  std::vector<float> x = Random(n);
  x[n - 3] = -NAN;
  x[12345] = NAN;
  for (MNT_DType fp8 : {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E5M2}) {
    auto xp = d_.Upload(x, MNT_DTYPE_F32, {n});
    auto sp = d_.Upload({1000.0f}, MNT_DTYPE_F32, {1});
    auto yp = d_.UploadRaw(std::vector<uint8_t>(n, 0), fp8, {n});
    auto amax = d_.Poisoned(MNT_DTYPE_F32, {1});
    ASSERT_TRUE(
        Run(cpu, MNT_OP_SCALED_CAST, {xp.get(), sp.get()}, {yp.get(), amax.get()}).ok());
    const std::vector<uint8_t> got = d_.Bytes(*yp, true);
    EXPECT_TRUE(std::isnan(Decode(fp8, got[n - 3])));
    EXPECT_TRUE(std::isnan(Decode(fp8, got[12345])));
    // NaN keeps its sign (0x7F / 0xFF), as fp8_convert.h and the CPU give.
    EXPECT_EQ(got[12345], Encode(fp8, NAN));
    EXPECT_EQ(got[n - 3], Encode(fp8, -NAN));
    if (cpu) {
      EXPECT_EQ(got, d_.Bytes(*yp, false)) << "cuda vs cpu";
    }
    EXPECT_TRUE(std::isnan(Amax(*amax, true))) << Amax(*amax, true);
  }
}

// ---- SCALED_GEMM ----------------------------------------------------------------

struct GemmCase {
  int64_t m, n, k;
  bool trans_a, trans_b;
  MNT_DType a_type, b_type, d_type;
  MNT_DType bias_type;  // INVALID: no bias
  float alpha, beta;
  bool fast, amax;
};

std::string Describe(const GemmCase& c) {
  return sdk::Format("M=%lld N=%lld K=%lld trans_a=%d trans_b=%d A %s B %s D %s bias %s "
                     "alpha %g beta %g fast %d amax %d",
                     (long long)c.m, (long long)c.n, (long long)c.k, c.trans_a, c.trans_b,
                     sdk::DTypeName(c.a_type), sdk::DTypeName(c.b_type),
                     sdk::DTypeName(c.d_type),
                     c.bias_type == MNT_DTYPE_INVALID ? "none" : sdk::DTypeName(c.bias_type),
                     c.alpha, c.beta, c.fast, c.amax);
}

class CudaFp8GemmTest : public CudaFp8Test {
 protected:
  void SetUp() override {
    CudaFp8Test::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    sm_ = DeviceSm();
    if (sm_ < 89) {
      // The refusal itself is what this GPU can check.
      auto a = d_.UploadRaw(std::vector<uint8_t>(16 * 16, 0x38), MNT_DTYPE_F8_E4M3, {16, 16});
      auto b = d_.UploadRaw(std::vector<uint8_t>(16 * 16, 0x38), MNT_DTYPE_F8_E4M3, {16, 16});
      auto s = d_.Upload({1.0f}, MNT_DTYPE_F32, {1});
      auto dd = d_.Poisoned(MNT_DTYPE_F32, {16, 16});
      MNT_ScaledGemmParams p{};
      p.struct_size = MNT_ScaledGemmParams_STRUCT_SIZE;
      p.trans_b = 1;
      p.alpha = 1.0f;
      const sdk::Status st = d_.RunCuda(MNT_OP_SCALED_GEMM, {a.get(), b.get(), s.get(), s.get()},
                                        {dd.get()}, &p);
      EXPECT_FALSE(st.ok());
      EXPECT_NE(st.message().find("SCALED_GEMM needs FP8 tensor cores (sm_89 or newer); this "
                                  "GPU is sm_" + std::to_string(sm_)),
                std::string::npos)
          << st.message();
      std::printf("SKIPPED: SCALED_GEMM needs FP8 tensor cores (sm_89 or newer); this GPU is "
                  "sm_%d (its one-line refusal checked)\n",
                  sm_);
      GTEST_SKIP() << "SCALED_GEMM needs sm_89 or newer; this GPU is sm_" << sm_;
    }
  }

  void Check(const GemmCase& c, bool cpu) {
    SCOPED_TRACE(Describe(c));
    const int64_t m = c.m, n = c.n, k = c.k;
    // FP8 operands: N(0, 1) values quantized with a scale (what a recipe
    // does), and the matching inverse scales.
    const float sa = 16.0f, sb = 64.0f;
    auto quantize = [&](MNT_DType t, int64_t count, float scale) {
      std::vector<uint8_t> q(count);
      for (auto& e : q) e = Encode(t, std::normal_distribution<float>(0.0f, 1.0f)(rng_) * scale);
      return q;
    };
    const std::vector<uint8_t> aq = quantize(c.a_type, m * k, sa);
    const std::vector<uint8_t> bq = quantize(c.b_type, k * n, sb);
    auto a = d_.UploadRaw(aq, c.a_type,
                          c.trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k});
    auto b = d_.UploadRaw(bq, c.b_type,
                          c.trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n});
    auto inv_a = d_.Upload({1.0f / sa}, MNT_DTYPE_F32, {1});
    auto inv_b = d_.Upload({1.0f / sb}, MNT_DTYPE_F32, {1});
    const std::vector<float> d0 =
        c.beta != 0.0f ? testing::RoundedTo(Random(m * n), c.d_type)
                       : std::vector<float>(m * n, NAN);  // beta 0: never read
    auto d = d_.Upload(d0, c.d_type, {m, n});
    std::vector<float> bias_v;
    std::unique_ptr<Pair> bias;
    if (c.bias_type != MNT_DTYPE_INVALID) {
      bias_v = testing::RoundedTo(Random(n), c.bias_type);
      bias = d_.Upload(bias_v, c.bias_type, {n});
    }
    auto amax = d_.Poisoned(MNT_DTYPE_F32, {1});
    MNT_ScaledGemmParams p{};
    p.struct_size = MNT_ScaledGemmParams_STRUCT_SIZE;
    p.trans_a = c.trans_a;
    p.trans_b = c.trans_b;
    p.alpha = c.alpha;
    p.beta = c.beta;
    p.fast_accumulation = c.fast;
    std::vector<const Pair*> in = {a.get(), b.get(), inv_a.get(), inv_b.get()};
    if (bias) in.push_back(bias.get());
    std::vector<const Pair*> out = {d.get()};
    if (c.amax) out.push_back(amax.get());
    const sdk::Status s = Run(cpu, MNT_OP_SCALED_GEMM, in, out, &p);
    ASSERT_TRUE(s.ok()) << s.message();

    // float64 reference; the accumulation's share of the tolerance is the
    // bound testing/fp8_gemm_bound.h derives for Hopper's FP8 accumulator
    // (about 14 bits; K <= 128 here, so cuBLASLt's periodic promotion with
    // fast accumulation off changes nothing), times sum |products|; then
    // D's rounding to its dtype and the fp32 epilogue.
    const double acc_rtol = testing::Fp8GemmAccumulationBound(k);
    const double d_rtol = testing::StorageTolerance(c.d_type);
    const double scale = static_cast<double>(c.alpha) / sa / sb;
    std::vector<double> want(m * n), tol(m * n), mags(m * n);
    double want_amax = 0.0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0, mag = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const uint8_t av = c.trans_a ? aq[kk * m + i] : aq[i * k + kk];
          const uint8_t bv = c.trans_b ? bq[j * k + kk] : bq[kk * n + j];
          const double prod =
              static_cast<double>(Decode(c.a_type, av)) * Decode(c.b_type, bv);
          sum += prod;
          mag += std::fabs(prod);
        }
        double v = scale * sum;
        if (c.beta != 0.0f) v += static_cast<double>(c.beta) * d0[i * n + j];
        if (bias) v += bias_v[j];
        want[i * n + j] = v;
        mags[i * n + j] = std::fabs(scale) * mag;
        tol[i * n + j] = acc_rtol * std::fabs(scale) * mag + 1e-6 +
                         d_rtol * std::fabs(v) + 1e-6 * std::fabs(c.beta * d0[i * n + j]);
        want_amax = std::max(want_amax, std::fabs(v));
      }
    }
    const std::vector<float> got = d_.Download(*d, true);
    const std::vector<float> got_cpu = cpu ? d_.Download(*d, false) : std::vector<float>();
    int bad = 0;
    double max_tol = 0.0;
    for (int64_t i = 0; i < m * n; ++i) {
      const double err = std::fabs(got[i] - want[i]);
      max_tol = std::max(max_tol, tol[i]);
      // The measured accumulation error (fp32 D only: a 16-bit D's rounding
      // would hide it); NaN counts as infinitely far.
      if (c.d_type == MNT_DTYPE_F32 && mags[i] > 0.0) {
        double& worst = c.fast ? worst_fast_ : worst_exact_;
        worst = std::max(worst, std::isnan(err) ? INFINITY : err / mags[i]);
        worst_of_bound_ = std::max(worst_of_bound_, std::isnan(err) ? INFINITY
                                                                    : err / (acc_rtol * mags[i]));
      }
      if (!(err <= tol[i]) && bad++ < 5) {
        ADD_FAILURE() << "D[" << i / n << ", " << i % n << "] = " << got[i] << ", want "
                      << want[i] << " (tolerance " << tol[i] << ")";
      }
      if (cpu && !(std::fabs(got[i] - got_cpu[i]) <= 2 * tol[i]) && bad++ < 5) {
        ADD_FAILURE() << "D[" << i / n << ", " << i % n << "] = " << got[i] << ", cpu "
                      << got_cpu[i];
      }
    }
    EXPECT_EQ(bad, 0);
    if (c.amax) {
      // The largest |D| errs by at most what any element may.
      const float ga = Amax(*amax, true);
      EXPECT_NEAR(ga, want_amax, max_tol) << "amax";
      if (cpu) {
        EXPECT_NEAR(ga, Amax(*amax, false), 2 * max_tol) << "amax vs cpu";
      }
    }
  }

  // One line the device check copies into its results: the largest error
  // measured against the float64 reference, as a fraction of
  // |alpha| sum |a b| / (scale_a scale_b), and of the bound.
  void TearDown() override {
    if (worst_exact_ >= 0.0 || worst_fast_ >= 0.0) {
      auto figure = [](double v) { return v < 0.0 ? std::string("-") : sdk::Format("%.2e", v); };
      std::printf("measured: %s SCALED_GEMM max |D - ref| / sum|a*b| = %s (fast accumulation "
                  "off), %s (on); %.0f%% of the bound (K + 2 ceil(K/32)) 2^-13\n",
                  ::testing::UnitTest::GetInstance()->current_test_info()->name(),
                  figure(worst_exact_).c_str(), figure(worst_fast_).c_str(),
                  100.0 * worst_of_bound_);
    }
    CudaFp8Test::TearDown();
  }

  int sm_ = 0;
  double worst_exact_ = -1.0, worst_fast_ = -1.0, worst_of_bound_ = 0.0;
};

TEST_F(CudaFp8GemmTest, EveryLayoutShapeAndDtype) {
  const bool cpu = CpuRuns(MNT_OP_SCALED_GEMM);
  const MNT_DType pairs[3][2] = {{MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E4M3},
                                 {MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E5M2},
                                 {MNT_DTYPE_F8_E5M2, MNT_DTYPE_F8_E4M3}};
  // 64^3 goes straight to cuBLASLt (TN after any transposed copy); 33 x 20
  // x 40 needs the padded operands and the fp32 scratch D.
  const int64_t shapes[2][3] = {{64, 64, 64}, {33, 20, 40}};
  int variant = 0;
  for (const auto& shape : shapes) {
    for (int t = 0; t < 4; ++t) {
      for (MNT_DType dt : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
        const auto& pair = pairs[variant % 3];
        GemmCase c{shape[0], shape[1], shape[2], (t & 1) != 0, (t & 2) != 0, pair[0], pair[1],
                   dt, MNT_DTYPE_INVALID, 1.0f, 0.0f, false, false};
        Check(c, cpu);
        // alpha, beta, a bias in D's dtype and in fp32, amax, fast accumulation.
        c.alpha = 0.75f;
        c.beta = 0.5f;
        c.bias_type = (variant & 1) ? dt : MNT_DTYPE_F32;
        c.amax = true;
        c.fast = (variant & 2) != 0;
        Check(c, cpu);
        ++variant;
      }
    }
  }
}

TEST_F(CudaFp8GemmTest, BiasThatTheEpilogueTakes) {
  // D fp32 with a bf16 bias and D bf16 with a bf16 bias (cuBLASLt's FP8
  // bias epilogue), D fp16 with an fp16 bias; aligned shapes, TN layout.
  const bool cpu = CpuRuns(MNT_OP_SCALED_GEMM);
  for (MNT_DType dt : {MNT_DTYPE_F32, MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
    const MNT_DType bt = dt == MNT_DTYPE_F16 ? MNT_DTYPE_F16 : MNT_DTYPE_BF16;
    Check(GemmCase{128, 64, 96, false, true, MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E4M3, dt, bt, 1.0f,
                   0.0f, false, false},
          cpu);
    Check(GemmCase{128, 64, 96, false, true, MNT_DTYPE_F8_E4M3, MNT_DTYPE_F8_E4M3, dt, bt, 2.0f,
                   1.0f, true, dt == MNT_DTYPE_F32},
          cpu);
  }
}

TEST_F(CudaFp8GemmTest, NanPropagatesToDAndAmax) {
  const bool cpu = CpuRuns(MNT_OP_SCALED_GEMM);
  // A NaN code in A: its row of D is NaN, and so is the amax.
  const int64_t m = 32, n = 32, k = 32;
  std::vector<uint8_t> aq(m * k, 0x38), bq(n * k, 0x38);  // 1.0 in E4M3
  aq[5 * k + 7] = 0x7F;
  auto a = d_.UploadRaw(aq, MNT_DTYPE_F8_E4M3, {m, k});
  auto b = d_.UploadRaw(bq, MNT_DTYPE_F8_E4M3, {n, k});
  auto one = d_.Upload({1.0f}, MNT_DTYPE_F32, {1});
  auto d = d_.Poisoned(MNT_DTYPE_BF16, {m, n});
  auto amax = d_.Poisoned(MNT_DTYPE_F32, {1});
  MNT_ScaledGemmParams p{};
  p.struct_size = MNT_ScaledGemmParams_STRUCT_SIZE;
  p.trans_b = 1;
  p.alpha = 1.0f;
  ASSERT_TRUE(Run(cpu, MNT_OP_SCALED_GEMM, {a.get(), b.get(), one.get(), one.get()},
                  {d.get(), amax.get()}, &p)
                  .ok());
  const std::vector<float> got = d_.Download(*d, true);
  EXPECT_TRUE(std::isnan(got[5 * n + 3]));
  EXPECT_EQ(got[4 * n + 3], 32.0f);
  EXPECT_TRUE(std::isnan(Amax(*amax, true))) << Amax(*amax, true);
}

// ---- FP8_SCALE_UPDATE ---------------------------------------------------------------

// The ABI's rule in double for N tensors: history [rows, n], scale [n]
// updated in place; scale_inv [n] written.
void ScaleUpdateReference(const std::vector<float>& amax, int64_t rows, int64_t n,
                          const MNT_Fp8ScaleUpdateParams& p, std::vector<float>* history,
                          std::vector<float>* scale, std::vector<float>* scale_inv) {
  scale_inv->assign(n, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    if (std::isfinite(amax[i])) {
      for (int64_t h = rows - 1; h > 0; --h) (*history)[h * n + i] = (*history)[(h - 1) * n + i];
      (*history)[i] = amax[i];
    }
    const int64_t reduced = p.amax_algo == MNT_AMAX_ALGO_MOST_RECENT ? 1 : p.history_length;
    double r = -INFINITY;
    for (int64_t h = 0; h < reduced; ++h) r = std::max(r, double{(*history)[h * n + i]});
    if (r > 0.0) {
      // The fp32 quotient (a float quotient rounded through double is the
      // correctly rounded one), then 2^-margin, rounded once.
      const float q = static_cast<float>(static_cast<double>(p.fp8_max) / r);
      const float s = static_cast<float>(std::ldexp(static_cast<double>(q), -p.margin));
      if (std::isfinite(s) && s > 0.0f) (*scale)[i] = s;
    }
    (*scale_inv)[i] = static_cast<float>(1.0 / static_cast<double>((*scale)[i]));
  }
}

// Bit-identical and never NaN (the inputs never make one).
::testing::AssertionResult SameBitsNoNan(const std::vector<float>& got,
                                         const std::vector<float>& want, const char* what) {
  int bad = 0;
  ::testing::AssertionResult r = ::testing::AssertionSuccess();
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]) || std::isnan(want[i]) || !SameFloat(got[i], want[i])) {
      if (bad++ == 0) r = ::testing::AssertionFailure();
      if (bad <= 5) r << what << "[" << i << "] = " << got[i] << ", want " << want[i] << "; ";
    }
  }
  if (bad > 0) r << bad << " of " << want.size() << " differ";
  return r;
}

TEST_F(CudaFp8Test, ScaleUpdateMatchesReferenceAndCpuBitForBit) {
  const bool cpu = CpuRuns(MNT_OP_FP8_SCALE_UPDATE);
  std::uniform_real_distribution<double> log2(-20.0, 20.0), unit(0.0, 1.0);
  auto magnitude = [&] { return static_cast<float>(std::exp2(log2(rng_))); };
  // One block, a few, and a grid past one wave with a short history.
  const int64_t shapes[3][2] = {{1, 1}, {16, 300}, {3, 70001}};
  const int32_t margins[4] = {0, 2, 140, 400};  // 140: subnormal scales; 400: kept
  int variant = 0;
  for (const auto& shape : shapes) {
    const int64_t rows = shape[0], n = shape[1];
    for (int algo = 0; algo < 2; ++algo) {
      for (int32_t margin : margins) {
        MNT_Fp8ScaleUpdateParams p{};
        p.struct_size = MNT_Fp8ScaleUpdateParams_STRUCT_SIZE;
        p.fp8_max = variant % 2 ? 57344.0f : 448.0f;
        p.margin = margin;
        p.amax_algo = algo ? MNT_AMAX_ALGO_MOST_RECENT : MNT_AMAX_ALGO_MAX;
        p.history_length = 1 + variant % rows;
        ++variant;
        SCOPED_TRACE(::testing::Message()
                     << "H " << rows << " N " << n << " algo " << p.amax_algo << " margin "
                     << margin << " fp8_max " << p.fp8_max << " history_length "
                     << p.history_length);
        // Histories with zero rows and all-zero columns, random scales.
        std::vector<float> history(rows * n), scale(n), scale_inv;
        for (int64_t i = 0; i < n; ++i) {
          const bool zero_column = unit(rng_) < 0.1;
          for (int64_t h = 0; h < rows; ++h) {
            history[h * n + i] = zero_column || unit(rng_) < 0.1 ? 0.0f : magnitude();
          }
          scale[i] = static_cast<float>(std::exp2(8.0 * unit(rng_) - 4.0));
        }
        auto hp = d_.Upload(history, MNT_DTYPE_F32, {rows, n});
        auto sp = d_.Upload(scale, MNT_DTYPE_F32, {n});
        auto ip = d_.Poisoned(MNT_DTYPE_F32, {n});
        // Three steps in a row, the state carried on each device.
        for (int step = 0; step < 3; ++step) {
          SCOPED_TRACE(::testing::Message() << "step " << step);
          std::vector<float> amax(n);
          for (float& a : amax) {
            const double u = unit(rng_);
            a = u < 0.05   ? 0.0f
                : u < 0.1  ? INFINITY
                : u < 0.15 ? NAN
                : u < 0.2  ? std::ldexp(magnitude(), -130)  // tiny: 448 / a may overflow
                           : magnitude();
          }
          auto ap = d_.Upload(amax, MNT_DTYPE_F32, {n});
          const sdk::Status s =
              Run(cpu, MNT_OP_FP8_SCALE_UPDATE, {ap.get()}, {hp.get(), sp.get(), ip.get()}, &p);
          ASSERT_TRUE(s.ok()) << s.message();
          ScaleUpdateReference(amax, rows, n, p, &history, &scale, &scale_inv);
          const std::vector<float> got_h = d_.Download(*hp, true), got_s = d_.Download(*sp, true),
                                   got_i = d_.Download(*ip, true);
          ASSERT_TRUE(SameBitsNoNan(got_h, history, "history"));
          ASSERT_TRUE(SameBitsNoNan(got_s, scale, "scale"));
          ASSERT_TRUE(SameBitsNoNan(got_i, scale_inv, "scale_inv"));
          if (cpu) {
            EXPECT_EQ(d_.Bytes(*hp, true), d_.Bytes(*hp, false)) << "history: cuda vs cpu";
            EXPECT_EQ(d_.Bytes(*sp, true), d_.Bytes(*sp, false)) << "scale: cuda vs cpu";
            EXPECT_EQ(d_.Bytes(*ip, true), d_.Bytes(*ip, false)) << "scale_inv: cuda vs cpu";
          }
        }
      }
    }
  }
}

TEST_F(CudaFp8Test, ScaleUpdateRefusesAsTheContractSays) {
  auto a = d_.Upload({1.0f, 2.0f}, MNT_DTYPE_F32, {2});
  auto h = d_.Upload(std::vector<float>(6, 0.0f), MNT_DTYPE_F32, {3, 2});
  auto s = d_.Upload({1.0f, 1.0f}, MNT_DTYPE_F32, {2});
  auto i = d_.Poisoned(MNT_DTYPE_F32, {2});
  MNT_Fp8ScaleUpdateParams p{MNT_Fp8ScaleUpdateParams_STRUCT_SIZE, 448.0f, 0,
                             MNT_AMAX_ALGO_MAX, 4};
  EXPECT_EQ(d_.RunCuda(MNT_OP_FP8_SCALE_UPDATE, {a.get()}, {h.get(), s.get(), i.get()}, &p)
                .message(),
            "FP8_SCALE_UPDATE: history_length 4 must be in [1, H=3] (out[0] history is "
            "f32[3,2])");
  p.history_length = 3;
  ASSERT_TRUE(
      Run(false, MNT_OP_FP8_SCALE_UPDATE, {a.get()}, {h.get(), s.get(), i.get()}, &p).ok());
  // Row 0 becomes {1, 2}: scales 448 / 1 and 448 / 2, their reciprocals.
  EXPECT_EQ(d_.Download(*s, true), (std::vector<float>{448.0f, 224.0f}));
  EXPECT_EQ(d_.Download(*i, true), (std::vector<float>{1.0f / 448.0f, 1.0f / 224.0f}));
}

}  // namespace
}  // namespace mnt::cuda
