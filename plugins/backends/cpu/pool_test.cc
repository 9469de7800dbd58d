// POOL2D_FORWARD / BACKWARD (max and average, padding, strides, global
// average pooling) against a float64 reference on fresh random inputs, the
// backward also against central finite differences, and operand errors.
#include <cmath>
#include <limits>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/testing/backend_fixture.h"

namespace mnt::cpu {
namespace {

using testing::AllCloseRelative;
using testing::BackendFixture;
using testing::DTypeTolerance;
using testing::FloatDTypes;

constexpr int64_t kN = 2, kC = 3;

struct Window {
  int64_t h, w;
  MNT_Pool2dParams p;
  int64_t P() const { return (h + 2 * p.pad_h - p.window_h) / p.stride_h + 1; }
  int64_t Q() const { return (w + 2 * p.pad_w - p.window_w) / p.stride_w + 1; }
};

std::vector<Window> Windows(MNT_PoolKind kind) {
  auto make = [&](int64_t h, int64_t w, int wh, int ww, int sh, int sw, int ph,
                  int pw, int include) {
    return Window{h, w, {MNT_Pool2dParams_STRUCT_SIZE, kind, wh, ww, sh, sw,
                         ph, pw, include}};
  };
  return {
      make(6, 6, 2, 2, 2, 2, 0, 0, 0),  // classic 2x2/2
      make(7, 5, 3, 3, 2, 1, 1, 1, 0),  // overlapping, padded
      make(7, 5, 3, 2, 2, 2, 1, 1, 1),  // count_include_pad
      make(5, 4, 5, 4, 1, 1, 0, 0, 0),  // global average/max pooling
  };
}

// y and, for the gradient, the weight of each x element in each y element.
void Reference(const Window& win, const std::vector<double>& x,
               std::vector<double>* y, std::vector<double>* dx,
               const std::vector<double>& dy) {
  const int64_t P = win.P(), Q = win.Q();
  const MNT_Pool2dParams& p = win.p;
  y->assign(kN * kC * P * Q, 0.0);
  dx->assign(x.size(), 0.0);
  for (int64_t c = 0; c < kN * kC; ++c) {
    for (int64_t i = 0; i < P; ++i) {
      for (int64_t j = 0; j < Q; ++j) {
        const int64_t hs = i * p.stride_h - p.pad_h, ws = j * p.stride_w - p.pad_w;
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t arg = -1, valid = 0;
        for (int64_t a = hs; a < hs + p.window_h; ++a) {
          for (int64_t b = ws; b < ws + p.window_w; ++b) {
            if (a < 0 || a >= win.h || b < 0 || b >= win.w) continue;
            const int64_t xi = (c * win.h + a) * win.w + b;
            if (x[xi] > best) best = x[xi], arg = xi;
            sum += x[xi];
            ++valid;
          }
        }
        const int64_t yi = (c * P + i) * Q + j;
        if (p.kind == MNT_POOL_MAX) {
          (*y)[yi] = best;
          (*dx)[arg] += dy[yi];
        } else {
          const double div =
              p.count_include_pad ? double(p.window_h) * p.window_w : valid;
          (*y)[yi] = sum / div;
          for (int64_t a = std::max<int64_t>(hs, 0);
               a < std::min<int64_t>(hs + p.window_h, win.h); ++a) {
            for (int64_t b = std::max<int64_t>(ws, 0);
                 b < std::min<int64_t>(ws + p.window_w, win.w); ++b) {
              (*dx)[(c * win.h + a) * win.w + b] += dy[yi] / div;
            }
          }
        }
      }
    }
  }
}

class PoolTest : public BackendFixture {};

TEST_F(PoolTest, ForwardAndBackwardMatchFloat64) {
  for (MNT_PoolKind kind : {MNT_POOL_MAX, MNT_POOL_AVG}) {
    for (const Window& win : Windows(kind)) {
      for (MNT_DType dtype : FloatDTypes()) {
        SCOPED_TRACE(::testing::Message()
                     << "kind=" << kind << " " << sdk::DTypeName(dtype)
                     << " window=" << win.p.window_h << "x" << win.p.window_w
                     << " stride=" << win.p.stride_h << " pad=" << win.p.pad_h);
        const int64_t P = win.P(), Q = win.Q();
        const auto x = Stored(Random(kN * kC * win.h * win.w, -2, 2), dtype);
        const auto dy = Stored(Random(kN * kC * P * Q), dtype);
        std::vector<double> y, dx;
        Reference(win, x, &y, &dx, dy);
        const MNT_Tensor tx = Upload(x, dtype, {kN, kC, win.h, win.w});
        const MNT_Tensor ty = Empty(dtype, {kN, kC, P, Q});
        sdk::Status st = Run(MNT_OP_POOL2D_FORWARD, {tx}, {ty}, &win.p);
        ASSERT_TRUE(st.ok()) << st.message();
        const double tol = DTypeTolerance(dtype);
        EXPECT_TRUE(AllCloseRelative(Download(ty), y, tol));
        const MNT_Tensor tdy = Upload(dy, dtype, {kN, kC, P, Q});
        const MNT_Tensor tdx = Empty(dtype, {kN, kC, win.h, win.w});
        st = Run(MNT_OP_POOL2D_BACKWARD, {tdy, tx}, {tdx}, &win.p);
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_TRUE(AllCloseRelative(Download(tdx), dx, tol));
      }
    }
  }
}

// Central differences of sum(y * dy) through the float64 reference forward
// (random inputs have no ties, so max pooling is differentiable there).
TEST_F(PoolTest, BackwardMatchesFiniteDifferences) {
  for (MNT_PoolKind kind : {MNT_POOL_MAX, MNT_POOL_AVG}) {
    for (const Window& win : Windows(kind)) {
      const int64_t P = win.P(), Q = win.Q();
      auto x = Random(kN * kC * win.h * win.w, -2, 2);
      const auto dy = Random(kN * kC * P * Q);
      const MNT_Tensor tx = Upload(x, MNT_DTYPE_F32, {kN, kC, win.h, win.w});
      x = Stored(x, MNT_DTYPE_F32);
      const MNT_Tensor tdy = Upload(dy, MNT_DTYPE_F32, {kN, kC, P, Q});
      const MNT_Tensor tdx = Empty(MNT_DTYPE_F32, {kN, kC, win.h, win.w});
      ASSERT_TRUE(Run(MNT_OP_POOL2D_BACKWARD, {tdy, tx}, {tdx}, &win.p).ok());
      std::vector<double> want(x.size()), y, unused;
      auto loss = [&]() {
        Reference(win, x, &y, &unused, dy);
        double l = 0;
        for (size_t i = 0; i < y.size(); ++i) l += y[i] * dy[i];
        return l;
      };
      for (size_t i = 0; i < x.size(); ++i) {
        const double keep = x[i], h = 1e-7;
        x[i] = keep + h;
        const double up = loss();
        x[i] = keep - h;
        const double down = loss();
        x[i] = keep;
        want[i] = (up - down) / (2 * h);
      }
      EXPECT_TRUE(AllCloseRelative(Download(tdx), want, 1e-5))
          << "kind=" << kind << " window=" << win.p.window_h;
    }
  }
}

TEST_F(PoolTest, OperandErrorsAreOneLine) {
  const MNT_Tensor x = Upload(Random(1 * 2 * 4 * 4), MNT_DTYPE_F32, {1, 2, 4, 4});
  const MNT_Tensor y = Empty(MNT_DTYPE_F32, {1, 2, 3, 3});
  MNT_Pool2dParams p{MNT_Pool2dParams_STRUCT_SIZE, MNT_POOL_MAX, 2, 2, 2, 2,
                     0, 0, 0};
  EXPECT_EQ(Run(MNT_OP_POOL2D_FORWARD, {x}, {y}, &p).message(),
            "POOL2D_FORWARD: out[0] y is f32[1,2,3,3], expected y [N, C, P, Q] "
            "= [1, 2, 2, 2]");
  p.pad_h = 2;
  EXPECT_EQ(Run(MNT_OP_POOL2D_FORWARD, {x}, {y}, &p).message(),
            "POOL2D_FORWARD: window 2x2, stride 2x2, pad 2x0: expected window, "
            "stride >= 1 and 0 <= pad < window");
  p.pad_h = 0;
  p.kind = MNT_POOL_INVALID;
  EXPECT_EQ(Run(MNT_OP_POOL2D_FORWARD, {x}, {y}, &p).message(),
            "POOL2D_FORWARD: unknown pool kind 0");
  p.kind = MNT_POOL_AVG;
  p.window_h = 5;
  EXPECT_EQ(Run(MNT_OP_POOL2D_FORWARD, {x}, {y}, &p).message(),
            "POOL2D_FORWARD: the 5x2 window does not fit the padded 4x4 input");
}

}  // namespace
}  // namespace mnt::cpu
