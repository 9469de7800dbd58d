// CONV2D_FORWARD / BACKWARD_DATA / BACKWARD_FILTER against a float64
// reference on fresh random inputs (padding, stride, dilation, groups, every
// storage dtype and compute mode), accumulate, finite differences of the
// float64 forward, and one-line operand errors.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllClose;
using testing::BackendFixture;
using testing::ComputeTolerance;
using testing::DTypeTolerance;

struct Geometry {
  int64_t n, c, h, w, k, r, s;
  int32_t pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, groups;

  int64_t p() const {
    return (h + 2 * pad_h - dil_h * (r - 1) - 1) / stride_h + 1;
  }
  int64_t q() const {
    return (w + 2 * pad_w - dil_w * (s - 1) - 1) / stride_w + 1;
  }
  int64_t cg() const { return c / groups; }
  int64_t kg() const { return k / groups; }
  MNT_Conv2dParams Params(MNT_ComputeMode compute, int accumulate = 0) const {
    return MNT_Conv2dParams{MNT_Conv2dParams_STRUCT_SIZE,
                            pad_h, pad_w, stride_h, stride_w, dil_h, dil_w,
                            groups, compute, accumulate};
  }
};

const std::vector<Geometry>& Geometries() {
  static const std::vector<Geometry> g = {
      // n c h w  k r s  pad   stride  dil   groups
      {2, 3, 6, 5, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},  // "same" 3x3
      {2, 4, 7, 6, 6, 3, 2, 1, 0, 2, 1, 1, 2, 2},  // strides, dilation, groups
      {1, 2, 9, 8, 3, 3, 3, 2, 2, 3, 2, 2, 2, 1},  // dilated, padded, strided
      {3, 5, 4, 4, 5, 1, 1, 0, 0, 1, 1, 1, 1, 5},  // depthwise 1x1
      // Channels in multiples of 8: oneDNN's blocked layouts and reorders.
      {3, 16, 10, 9, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1},
      // 1x1 stride 2 on an even size: the last input row is never read
      // (oneDNN's right padding is -1).
      {2, 8, 8, 8, 16, 1, 1, 0, 0, 2, 2, 1, 1, 1},
  };
  return g;
}

// Visits every (y index, x index, w index) product of the convolution.
template <typename F>
void ForEachProduct(const Geometry& g, F f) {
  const int64_t P = g.p(), Q = g.q();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t k = 0; k < g.k; ++k)
      for (int64_t p = 0; p < P; ++p)
        for (int64_t q = 0; q < Q; ++q)
          for (int64_t c = 0; c < g.cg(); ++c)
            for (int64_t r = 0; r < g.r; ++r)
              for (int64_t s = 0; s < g.s; ++s) {
                const int64_t ih = p * g.stride_h - g.pad_h + r * g.dil_h;
                const int64_t iw = q * g.stride_w - g.pad_w + s * g.dil_w;
                if (ih < 0 || ih >= g.h || iw < 0 || iw >= g.w) continue;
                const int64_t ci = (k / g.kg()) * g.cg() + c;
                f(((n * g.k + k) * P + p) * Q + q,
                  ((n * g.c + ci) * g.h + ih) * g.w + iw,
                  ((k * g.cg() + c) * g.r + r) * g.s + s);
              }
}

std::vector<double> ReferenceForward(const Geometry& g,
                                     const std::vector<double>& x,
                                     const std::vector<double>& w,
                                     const std::vector<double>& bias,
                                     std::vector<double>* scale = nullptr) {
  std::vector<double> y(g.n * g.k * g.p() * g.q(), 0.0);
  if (scale) scale->assign(y.size(), 0.0);
  ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t wi) {
    y[yi] += x[xi] * w[wi];
    if (scale) (*scale)[yi] += std::fabs(x[xi] * w[wi]);
  });
  const int64_t pq = g.p() * g.q();
  for (size_t i = 0; i < y.size(); ++i) {
    const double b = bias[(i / pq) % g.k];
    y[i] += b;
    if (scale) (*scale)[i] += std::fabs(b) + 1e-3;
  }
  return y;
}

struct Case {
  MNT_DType dtype;
  MNT_ComputeMode compute;
};

const Case kCases[] = {
    {MNT_DTYPE_F32, MNT_COMPUTE_F32},
    {MNT_DTYPE_F32, MNT_COMPUTE_TF32},
    {MNT_DTYPE_BF16, MNT_COMPUTE_BF16},
    {MNT_DTYPE_F16, MNT_COMPUTE_F16},
};

class ConvTest : public BackendFixture {};

TEST_F(ConvTest, AllPassesMatchFloat64) {
  for (const Case& cs : kCases) {
    for (const Geometry& g : Geometries()) {
      SCOPED_TRACE(::testing::Message()
                   << sdk::DTypeName(cs.dtype) << " compute=" << cs.compute
                   << " geometry c=" << g.c << " k=" << g.k
                   << " groups=" << g.groups << " stride=" << g.stride_h);
      const int64_t P = g.p(), Q = g.q();
      const double tol =
          std::max(ComputeTolerance(cs.compute), DTypeTolerance(cs.dtype));
      const auto x = Stored(Random(g.n * g.c * g.h * g.w), cs.dtype);
      const auto w = Stored(Random(g.k * g.cg() * g.r * g.s), cs.dtype);
      const auto b = Stored(Random(g.k), cs.dtype);
      const auto dy = Stored(Random(g.n * g.k * P * Q), cs.dtype);
      const MNT_Tensor tx = Upload(x, cs.dtype, {g.n, g.c, g.h, g.w});
      const MNT_Tensor tw = Upload(w, cs.dtype, {g.k, g.cg(), g.r, g.s});
      const MNT_Tensor tb = Upload(b, cs.dtype, {g.k});
      const MNT_Tensor tdy = Upload(dy, cs.dtype, {g.n, g.k, P, Q});
      const MNT_Conv2dParams prm = g.Params(cs.compute);

      // Forward with bias.
      const MNT_Tensor ty = Empty(cs.dtype, {g.n, g.k, P, Q});
      sdk::Status st = Run(MNT_OP_CONV2D_FORWARD, {tx, tw, tb}, {ty}, &prm);
      ASSERT_TRUE(st.ok()) << st.message();
      std::vector<double> scale;
      const auto want_y = ReferenceForward(g, x, w, b, &scale);
      EXPECT_TRUE(AllClose(Download(ty), want_y, scale, tol));

      // Backward data: dx[xi] = sum dy[yi] w[wi].
      std::vector<double> dx(x.size(), 0.0), dx_scale(x.size(), 1e-3);
      std::vector<double> dw(w.size(), 0.0), dw_scale(w.size(), 1e-3);
      ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t wi) {
        dx[xi] += dy[yi] * w[wi];
        dx_scale[xi] += std::fabs(dy[yi] * w[wi]);
        dw[wi] += dy[yi] * x[xi];
        dw_scale[wi] += std::fabs(dy[yi] * x[xi]);
      });
      const MNT_Tensor tdx = Empty(cs.dtype, {g.n, g.c, g.h, g.w});
      st = Run(MNT_OP_CONV2D_BACKWARD_DATA, {tdy, tw}, {tdx}, &prm);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_TRUE(AllClose(Download(tdx), dx, dx_scale, tol));

      // Backward filter with dbias.
      std::vector<double> db(g.k, 0.0), db_scale(g.k, 1e-3);
      for (size_t i = 0; i < dy.size(); ++i) {
        db[(i / (P * Q)) % g.k] += dy[i];
        db_scale[(i / (P * Q)) % g.k] += std::fabs(dy[i]);
      }
      const MNT_Tensor tdw = Empty(cs.dtype, {g.k, g.cg(), g.r, g.s});
      const MNT_Tensor tdb = Empty(cs.dtype, {g.k});
      st = Run(MNT_OP_CONV2D_BACKWARD_FILTER, {tdy, tx}, {tdw, tdb}, &prm);
      ASSERT_TRUE(st.ok()) << st.message();
      EXPECT_TRUE(AllClose(Download(tdw), dw, dw_scale, tol));
      EXPECT_TRUE(AllClose(Download(tdb), db, db_scale, tol));
    }
  }
}

// A 16-bit output with a bias is the fp32 result, bias included, rounded
// once: bit for bit the fp32-output forward rounded by CAST (rounding the
// product to 16 bits before the bias add and again after it differs for
// some values). Every geometry and 16-bit format.
TEST_F(ConvTest, SixteenBitForwardWithBiasRoundsOnce) {
  for (const Case& cs : kCases) {
    if (cs.dtype == MNT_DTYPE_F32) continue;
    for (const Geometry& g : Geometries()) {
      SCOPED_TRACE(::testing::Message() << sdk::DTypeName(cs.dtype) << " c=" << g.c
                                        << " k=" << g.k << " groups=" << g.groups);
      const int64_t P = g.p(), Q = g.q();
      const MNT_Tensor tx = Upload(Random(g.n * g.c * g.h * g.w), cs.dtype, {g.n, g.c, g.h, g.w});
      const MNT_Tensor tw =
          Upload(Random(g.k * g.cg() * g.r * g.s), cs.dtype, {g.k, g.cg(), g.r, g.s});
      // An fp32 bias with bits below 16-bit precision.
      const MNT_Tensor tb = Upload(Random(g.k), MNT_DTYPE_F32, {g.k});
      const MNT_Conv2dParams prm = g.Params(cs.compute);
      const MNT_Tensor y16 = Empty(cs.dtype, {g.n, g.k, P, Q});
      const MNT_Tensor y32 = Empty(MNT_DTYPE_F32, {g.n, g.k, P, Q});
      const MNT_Tensor rounded = Empty(cs.dtype, {g.n, g.k, P, Q});
      ASSERT_TRUE(Run(MNT_OP_CONV2D_FORWARD, {tx, tw, tb}, {y16}, &prm).ok());
      ASSERT_TRUE(Run(MNT_OP_CONV2D_FORWARD, {tx, tw, tb}, {y32}, &prm).ok());
      ASSERT_TRUE(Run(MNT_OP_CAST, {y32}, {rounded}).ok());
      EXPECT_EQ(Bytes(y16), Bytes(rounded));
      for (double v : Download(y32)) ASSERT_FALSE(std::isnan(v));
    }
  }
}

// Geometries of ResNet-50's layers (channels in multiples of 16, where
// oneDNN's AMX / AVX512_BF16 kernels take bf16 and its NHWC / blocked
// layouts and the channel transposes run), small batches.
const std::vector<Geometry>& ResNetGeometries() {
  static const std::vector<Geometry> g = {
      // n c h w  k r s  pad   stride  dil   groups
      {2, 3, 32, 32, 64, 7, 7, 3, 3, 2, 2, 1, 1, 1},      // conv1 7x7/2
      {2, 64, 14, 14, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1},     // 3x3
      {2, 64, 14, 14, 256, 1, 1, 0, 0, 1, 1, 1, 1, 1},    // 1x1 up
      {2, 128, 14, 14, 64, 1, 1, 0, 0, 2, 2, 1, 1, 1},    // 1x1/2 down
      {3, 32, 9, 11, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1},      // odd sizes
  };
  return g;
}

// The float64 reference of all three passes for one geometry and inputs.
struct Expected {
  std::vector<double> y, y_scale, dx, dx_scale, dw, dw_scale, db, db_scale;
};
Expected Reference(const Geometry& g, const std::vector<double>& x,
                   const std::vector<double>& w, const std::vector<double>& b,
                   const std::vector<double>& dy) {
  Expected e;
  e.y = ReferenceForward(g, x, w, b, &e.y_scale);
  e.dx.assign(x.size(), 0.0);
  e.dx_scale.assign(x.size(), 1e-3);
  e.dw.assign(w.size(), 0.0);
  e.dw_scale.assign(w.size(), 1e-3);
  ForEachProduct(g, [&](int64_t yi, int64_t xi, int64_t wi) {
    e.dx[xi] += dy[yi] * w[wi];
    e.dx_scale[xi] += std::fabs(dy[yi] * w[wi]);
    e.dw[wi] += dy[yi] * x[xi];
    e.dw_scale[wi] += std::fabs(dy[yi] * x[xi]);
  });
  const int64_t pq = g.p() * g.q();
  e.db.assign(g.k, 0.0);
  e.db_scale.assign(g.k, 1e-3);
  for (size_t i = 0; i < dy.size(); ++i) {
    e.db[(i / pq) % g.k] += dy[i];
    e.db_scale[(i / pq) % g.k] += std::fabs(dy[i]);
  }
  return e;
}

// bf16 and fp16 at ResNet-50's shapes, all three passes: 16-bit storage and
// compute, outputs in 16 bits and in fp32 (an fp32 weight gradient: the
// primitive's fp32 accumulation kept), the weight gradient added to one
// already there; fresh random inputs each call of a cached primitive.
// Tolerance 1e-2 of the sum of |terms| (bf16 rounds the output to 8 bits).
TEST_F(ConvTest, SixteenBitAtResNetShapesMatchFloat64) {
  const double tol = 1e-2;
  for (MNT_DType dtype : {MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
    const MNT_ComputeMode compute =
        dtype == MNT_DTYPE_BF16 ? MNT_COMPUTE_BF16 : MNT_COMPUTE_F16;
    for (const Geometry& g : ResNetGeometries()) {
      for (MNT_DType out : {dtype, MNT_DTYPE_F32}) {
        for (int call = 0; call < 2; ++call) {
          SCOPED_TRACE(::testing::Message()
                       << sdk::DTypeName(dtype) << " out " << sdk::DTypeName(out)
                       << " c=" << g.c << " k=" << g.k << " r=" << g.r
                       << " stride=" << g.stride_h << " call " << call);
          const int64_t P = g.p(), Q = g.q();
          const auto x = Stored(Random(g.n * g.c * g.h * g.w), dtype);
          const auto w = Stored(Random(g.k * g.cg() * g.r * g.s), dtype);
          const auto b = Stored(Random(g.k), dtype);
          const auto dy = Stored(Random(g.n * g.k * P * Q), dtype);
          const Expected e = Reference(g, x, w, b, dy);
          const MNT_Tensor tx = Upload(x, dtype, {g.n, g.c, g.h, g.w});
          const MNT_Tensor tw = Upload(w, dtype, {g.k, g.cg(), g.r, g.s});
          const MNT_Tensor tb = Upload(b, dtype, {g.k});
          const MNT_Tensor tdy = Upload(dy, dtype, {g.n, g.k, P, Q});
          const MNT_Conv2dParams prm = g.Params(compute);

          const MNT_Tensor ty = Empty(out, {g.n, g.k, P, Q});
          ASSERT_TRUE(Run(MNT_OP_CONV2D_FORWARD, {tx, tw, tb}, {ty}, &prm).ok());
          EXPECT_TRUE(AllClose(Download(ty), e.y, e.y_scale, tol)) << "forward";
          const MNT_Tensor tdx = Empty(out, {g.n, g.c, g.h, g.w});
          ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_DATA, {tdy, tw}, {tdx}, &prm).ok());
          EXPECT_TRUE(AllClose(Download(tdx), e.dx, e.dx_scale, tol)) << "backward data";
          const MNT_Tensor tdw = Empty(out, {g.k, g.cg(), g.r, g.s});
          const MNT_Tensor tdb = Empty(out, {g.k});
          ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_FILTER, {tdy, tx}, {tdw, tdb}, &prm).ok());
          EXPECT_TRUE(AllClose(Download(tdw), e.dw, e.dw_scale, tol)) << "backward filter";
          EXPECT_TRUE(AllClose(Download(tdb), e.db, e.db_scale, tol)) << "bias gradient";

          // Accumulate: dw (+)= the same gradient again, dx likewise.
          const MNT_Conv2dParams acc = g.Params(compute, 1);
          ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_FILTER, {tdy, tx}, {tdw, tdb}, &acc).ok());
          ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_DATA, {tdy, tw}, {tdx}, &acc).ok());
          auto twice = [](std::vector<double> v) {
            for (double& x : v) x *= 2;
            return v;
          };
          EXPECT_TRUE(AllClose(Download(tdw), twice(e.dw), twice(e.dw_scale), tol))
              << "accumulated weight gradient";
          EXPECT_TRUE(AllClose(Download(tdb), twice(e.db), twice(e.db_scale), tol))
              << "accumulated bias gradient";
          EXPECT_TRUE(AllClose(Download(tdx), twice(e.dx), twice(e.dx_scale), tol))
              << "accumulated data gradient";
        }
      }
    }
  }
}

// A NaN in an operand reaches the outputs of all three 16-bit passes.
TEST_F(ConvTest, SixteenBitNanPropagates) {
  const Geometry& g = ResNetGeometries()[1];
  const int64_t P = g.p(), Q = g.q();
  auto x = Random(g.n * g.c * g.h * g.w);
  x[5] = std::nan("");
  auto dy = Random(g.n * g.k * P * Q);
  dy[7] = std::nan("");
  const MNT_Tensor tx = Upload(x, MNT_DTYPE_BF16, {g.n, g.c, g.h, g.w});
  const MNT_Tensor tw = Upload(Random(g.k * g.c * 9), MNT_DTYPE_BF16, {g.k, g.c, 3, 3});
  const MNT_Tensor tdy = Upload(dy, MNT_DTYPE_BF16, {g.n, g.k, P, Q});
  const MNT_Conv2dParams prm = g.Params(MNT_COMPUTE_BF16);
  const MNT_Tensor ty = Empty(MNT_DTYPE_BF16, {g.n, g.k, P, Q});
  const MNT_Tensor tdx = Empty(MNT_DTYPE_BF16, {g.n, g.c, g.h, g.w});
  const MNT_Tensor tdw = Empty(MNT_DTYPE_BF16, {g.k, g.c, 3, 3});
  ASSERT_TRUE(Run(MNT_OP_CONV2D_FORWARD, {tx, tw}, {ty}, &prm).ok());
  ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_DATA, {tdy, tw}, {tdx}, &prm).ok());
  ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_FILTER, {tdy, tx}, {tdw}, &prm).ok());
  auto nans = [&](const MNT_Tensor& t) {
    int64_t count = 0;
    for (double v : Download(t)) count += std::isnan(v);
    return count;
  };
  EXPECT_GT(nans(ty), 0);
  EXPECT_GT(nans(tdx), 0);
  EXPECT_GT(nans(tdw), 0);
}

// Where oneDNN has 16-bit primitives on this CPU, 16-bit convolutions run on
// them; one that runs in fp32 instead is a reported slow path (ABI 1.8).
TEST_F(ConvTest, SixteenBitConvolutionsRunNativelyOrAreReported) {
  MNT_Backend_GetInfo_Args info{};
  info.struct_size = MNT_Backend_GetInfo_Args_STRUCT_SIZE;
  info.backend = backend();
  ASSERT_EQ(api()->Backend_GetInfo(&info), nullptr);
  const std::string device = info.device_name;
  const bool onednn = device.find("oneDNN") != std::string::npos;
  const bool bf16_native = device.find("bf16 native") != std::string::npos;
  const Geometry& g = ResNetGeometries()[1];
  const int64_t P = g.p(), Q = g.q();
  for (MNT_DType dtype : {MNT_DTYPE_BF16, MNT_DTYPE_F16}) {
    const MNT_ComputeMode compute =
        dtype == MNT_DTYPE_BF16 ? MNT_COMPUTE_BF16 : MNT_COMPUTE_F16;
    const MNT_Conv2dParams prm = g.Params(compute);
    const MNT_Tensor x = Upload(Random(g.n * g.c * g.h * g.w), dtype, {g.n, g.c, g.h, g.w});
    const MNT_Tensor w = Upload(Random(g.k * g.c * 9), dtype, {g.k, g.c, 3, 3});
    const MNT_Tensor dy = Upload(Random(g.n * g.k * P * Q), dtype, {g.n, g.k, P, Q});
    const MNT_Tensor y = Empty(dtype, {g.n, g.k, P, Q});
    const MNT_Tensor dx = Empty(dtype, {g.n, g.c, g.h, g.w});
    const MNT_Tensor dw = Empty(dtype, {g.k, g.c, 3, 3});
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &prm).ok());
      ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_DATA, {dy, w}, {dx}, &prm).ok());
      ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_FILTER, {dy, x}, {dw}, &prm).ok());
    }
  }
  ASSERT_EQ(api()->Backend_GetInfo(&info), nullptr);
  const std::string slow = info.slow_paths != nullptr ? info.slow_paths : "";
  SCOPED_TRACE(device + "\nslow paths:\n" + slow);
  if (bf16_native) {
    EXPECT_EQ(slow.find("bf16 convolution"), std::string::npos);
  }
  if (!onednn) {
    EXPECT_EQ(slow.find("convolution"), std::string::npos);  // the reference is fp32
  } else if (__builtin_cpu_supports("avx512fp16") &&
             slow.find("fp16 convolution") != std::string::npos) {
    // Reported, once per pass, with the calls counted.
    for (const char* pass : {"forward", "backward data", "backward filter"}) {
      EXPECT_NE(slow.find(std::string("3 x fp16 convolution ") + pass + " in fp32: oneDNN "),
                std::string::npos)
          << pass;
    }
  }
}

TEST_F(ConvTest, BackwardAccumulatesWhenAsked) {
  const Geometry& g = Geometries()[1];
  const int64_t P = g.p(), Q = g.q();
  const auto x = Random(g.n * g.c * g.h * g.w);
  const auto w = Random(g.k * g.cg() * g.r * g.s);
  const auto dy = Random(g.n * g.k * P * Q);
  const MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, {g.n, g.c, g.h, g.w});
  const MNT_Tensor tw = Upload(w, MNT_DTYPE_F32, {g.k, g.cg(), g.r, g.s});
  const MNT_Tensor tdy = Upload(dy, MNT_DTYPE_F32, {g.n, g.k, P, Q});
  const MNT_Conv2dParams fresh = g.Params(MNT_COMPUTE_F32, 0);
  const MNT_Conv2dParams acc = g.Params(MNT_COMPUTE_F32, 1);

  const MNT_Tensor dx1 = Empty(MNT_DTYPE_F32, {g.n, g.c, g.h, g.w});
  ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_DATA, {tdy, tw}, {dx1}, &fresh).ok());
  const auto base_dx = Random(x.size());
  const MNT_Tensor dx2 = Upload(base_dx, MNT_DTYPE_F32, {g.n, g.c, g.h, g.w});
  ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_DATA, {tdy, tw}, {dx2}, &acc).ok());
  std::vector<double> want = Download(dx1);
  for (size_t i = 0; i < want.size(); ++i) want[i] += base_dx[i];
  EXPECT_TRUE(testing::AllCloseRelative(Download(dx2), want, 1e-6));

  const MNT_Tensor dw1 = Empty(MNT_DTYPE_F32, {g.k, g.cg(), g.r, g.s});
  const MNT_Tensor db1 = Empty(MNT_DTYPE_F32, {g.k});
  ASSERT_TRUE(
      Run(MNT_OP_CONV2D_BACKWARD_FILTER, {tdy, tx}, {dw1, db1}, &fresh).ok());
  const auto base_dw = Random(w.size()), base_db = Random(g.k);
  const MNT_Tensor dw2 = Upload(base_dw, MNT_DTYPE_F32, {g.k, g.cg(), g.r, g.s});
  const MNT_Tensor db2 = Upload(base_db, MNT_DTYPE_F32, {g.k});
  ASSERT_TRUE(
      Run(MNT_OP_CONV2D_BACKWARD_FILTER, {tdy, tx}, {dw2, db2}, &acc).ok());
  want = Download(dw1);
  for (size_t i = 0; i < want.size(); ++i) want[i] += base_dw[i];
  EXPECT_TRUE(testing::AllCloseRelative(Download(dw2), want, 1e-6));
  want = Download(db1);
  for (size_t i = 0; i < want.size(); ++i) want[i] += base_db[i];
  EXPECT_TRUE(testing::AllCloseRelative(Download(db2), want, 1e-6));
}

// The backward ops are the derivative of the forward: central differences
// of the float64 forward's loss sum(y * dy) against the fp32 kernels.
TEST_F(ConvTest, GradientsMatchFiniteDifferences) {
  for (const Geometry& g : Geometries()) {
    // Each difference reruns the float64 forward: the small geometries only.
    if (g.c * g.k > 64) continue;
    const int64_t P = g.p(), Q = g.q();
    auto x = Random(g.n * g.c * g.h * g.w);
    auto w = Random(g.k * g.cg() * g.r * g.s);
    const std::vector<double> b(g.k, 0.0);
    const auto dy = Random(g.n * g.k * P * Q);
    const MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, {g.n, g.c, g.h, g.w});
    const MNT_Tensor tw = Upload(w, MNT_DTYPE_F32, {g.k, g.cg(), g.r, g.s});
    const MNT_Tensor tdy = Upload(dy, MNT_DTYPE_F32, {g.n, g.k, P, Q});
    const MNT_Conv2dParams prm = g.Params(MNT_COMPUTE_F32);
    const MNT_Tensor tdx = Empty(MNT_DTYPE_F32, {g.n, g.c, g.h, g.w});
    const MNT_Tensor tdw = Empty(MNT_DTYPE_F32, {g.k, g.cg(), g.r, g.s});
    ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_DATA, {tdy, tw}, {tdx}, &prm).ok());
    ASSERT_TRUE(Run(MNT_OP_CONV2D_BACKWARD_FILTER, {tdy, tx}, {tdw}, &prm).ok());
    auto loss = [&]() {
      const auto y = ReferenceForward(g, x, w, b);
      double l = 0;
      for (size_t i = 0; i < y.size(); ++i) l += y[i] * dy[i];
      return l;
    };
    auto fd = [&](std::vector<double>& v) {
      std::vector<double> out(v.size());
      for (size_t i = 0; i < v.size(); ++i) {
        const double keep = v[i], h = 1e-4;  // the loss is bilinear: exact
        v[i] = keep + h;
        const double up = loss();
        v[i] = keep - h;
        const double down = loss();
        v[i] = keep;
        out[i] = (up - down) / (2 * h);
      }
      return out;
    };
    EXPECT_TRUE(testing::AllCloseRelative(Download(tdx), fd(x), 1e-5));
    EXPECT_TRUE(testing::AllCloseRelative(Download(tdw), fd(w), 1e-5));
  }
}

TEST_F(ConvTest, OperandErrorsAreOneLine) {
  const MNT_Tensor x = Upload(Random(2 * 4 * 5 * 5), MNT_DTYPE_F32, {2, 4, 5, 5});
  const MNT_Tensor w = Upload(Random(6 * 4 * 3 * 3), MNT_DTYPE_F32, {6, 4, 3, 3});
  const MNT_Tensor y = Empty(MNT_DTYPE_F32, {2, 6, 3, 3});
  MNT_Conv2dParams p{MNT_Conv2dParams_STRUCT_SIZE, 0, 0, 1, 1, 1, 1, 1,
                     MNT_COMPUTE_F32, 0};
  EXPECT_TRUE(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p).ok());
  p.pad_h = 1;
  EXPECT_EQ(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p).message(),
            "CONV2D_FORWARD: out[0] y is f32[2,6,3,3], expected [N, K, P, Q] = "
            "[2, 6, 5, 3]");
  p.pad_h = 0;
  p.groups = 4;
  EXPECT_EQ(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p).message(),
            "CONV2D_FORWARD: channels C=4 and filters K=6 must divide by "
            "groups=4");
  p.groups = 2;
  EXPECT_EQ(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p).message(),
            "CONV2D_FORWARD: in[1] w is f32[6,4,3,3], expected [K, C/groups=2, "
            "R, S]");
  p.groups = 1;
  p.stride_w = 0;
  EXPECT_EQ(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p).message(),
            "CONV2D_FORWARD: pad 0x0, stride 1x0, dilation 1x1, groups 1: "
            "expected pad >= 0, stride, dilation and groups >= 1");
  p.stride_w = 1;
  p.dilation_h = 3;
  EXPECT_EQ(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, &p).message(),
            "CONV2D_FORWARD: the 3x3 filter (dilation 3x1) does not fit the "
            "padded 5x5 input");
  EXPECT_EQ(Run(MNT_OP_CONV2D_FORWARD, {x, w}, {y}, nullptr).message(),
            "CONV2D_FORWARD: params (MNT_Conv2dParams) is NULL");
}

}  // namespace
}  // namespace mnt::cpu
