// The ABI 1.6 ops of the cuda backend against the CPU reference backend on
// fresh random inputs (outputs poisoned with NaN first): fused residual add +
// layer norm forward/backward in every storage dtype (fp32 1e-5 relative,
// f16/bf16 their storage tolerance), and the multi-tensor AdamW/SGD steps,
// which must also give the same bits as the cuda backend's own single-tensor
// ADAMW_STEP / SGD_STEP per tensor. ABI 1.7: the four optimizer steps with a
// device learning rate match the CPU backend and give the cuda backend's own
// host-lr bits.
#include <cmath>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cuda/testing/gpu_test_support.h"

namespace mnt::cuda {
namespace {

using testing::AllClose;
using testing::Pair;
using testing::StorageTolerance;

constexpr MNT_DType kFloatTypes[] = {MNT_DTYPE_F32, MNT_DTYPE_F16, MNT_DTYPE_BF16};

class CudaFusedOpsTest : public testing::DualBackendTest {
 protected:
  void ExpectSame(const Pair& p, double rtol_extra = 0, double atol = 1e-6) {
    const double rtol = std::max(StorageTolerance(p.dtype), rtol_extra);
    EXPECT_TRUE(AllClose(d_.Download(p, true), d_.Download(p, false), rtol, atol));
  }
};

TEST_F(CudaFusedOpsTest, ResidualLayerNormForwardBackward) {
  for (MNT_DType t : kFloatTypes) {
    const int64_t rows = 37, c = 769;
    auto x = d_.Upload(Random(rows * c, 2.0f), t, {rows, c});
    auto r = d_.Upload(Random(rows * c), t, {rows, c});
    auto w = d_.Upload(Random(c), t, {c});
    auto b = d_.Upload(Random(c), t, {c});
    auto y = d_.Poisoned(t, {rows, c});
    auto mean = d_.Poisoned(MNT_DTYPE_F32, {rows});
    auto rstd = d_.Poisoned(MNT_DTYPE_F32, {rows});
    const MNT_LayerNormParams p{MNT_LayerNormParams_STRUCT_SIZE, 1e-5f, 1};
    // The sum written over x (the permitted alias).
    ASSERT_TRUE(d_.RunBoth(MNT_OP_RESIDUAL_LAYERNORM_FORWARD,
                           {x.get(), r.get(), w.get(), b.get()},
                           {x.get(), y.get(), mean.get(), rstd.get()}, &p)
                    .ok());
    ExpectSame(*x, 1e-6, 1e-6);
    ExpectSame(*y, 1e-5, 1e-5);
    ExpectSame(*mean, 1e-5, 1e-6);
    ExpectSame(*rstd);
    auto dy = d_.Upload(Random(rows * c), t, {rows, c});
    auto dres = d_.Upload(Random(rows * c), t, {rows, c});  // dx written over it
    auto dw = d_.Upload(Random(c), t, {c});                 // accumulated into
    auto db = d_.Upload(Random(c), t, {c});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD,
                           {dy.get(), x.get(), w.get(), mean.get(), rstd.get(), dres.get()},
                           {dres.get(), dw.get(), db.get()}, &p)
                    .ok());
    ExpectSame(*dres, 1e-4, 1e-5);
    ExpectSame(*dw, 1e-5, 1e-4);
    ExpectSame(*db, 1e-5, 1e-4);
    // Without the incoming gradient.
    auto dx = d_.Poisoned(t, {rows, c});
    ASSERT_TRUE(d_.RunBoth(MNT_OP_RESIDUAL_LAYERNORM_BACKWARD,
                           {dy.get(), x.get(), w.get(), mean.get(), rstd.get()},
                           {dx.get(), dw.get(), db.get()}, &p)
                    .ok());
    ExpectSame(*dx, 1e-4, 1e-5);
  }
}

// Three tensors (one odd-sized, one scalar, one spanning many blocks), each
// stepped twice: by the multi op on both backends, and by the single-tensor
// op on the cuda backend (bit-identical to the multi op there).
TEST_F(CudaFusedOpsTest, MultiTensorStepsMatchCpuAndSingleTensorBits) {
  const std::vector<int64_t> sizes = {1027, 1, 70001};
  const float lr_scales[3] = {1.0f, 0.5f, 2.0f}, wds[3] = {0.01f, 0.0f, 0.1f};
  for (bool adamw : {true, false}) {
    for (float found : {0.0f, 1.0f}) {
      SCOPED_TRACE(::testing::Message() << (adamw ? "adamw" : "sgd") << " found_inf " << found);
      auto found_inf = d_.Upload({found}, MNT_DTYPE_F32, {1});
      auto mult = d_.Upload({0.5f}, MNT_DTYPE_F32, {1});
      std::vector<std::unique_ptr<Pair>> keep;
      std::vector<const Pair*> in{found_inf.get(), mult.get()}, out;
      std::vector<std::vector<const Pair*>> single_in, single_out;
      for (size_t i = 0; i < sizes.size(); ++i) {
        const int64_t n = sizes[i];
        auto grad = d_.Upload(Random(n), i == 0 ? MNT_DTYPE_BF16 : MNT_DTYPE_F32, {n});
        std::vector<float> state = Random(n, 0.1f);
        auto master = d_.Upload(Random(n), MNT_DTYPE_F32, {n});
        auto master2 = d_.Upload(d_.Download(*master, false), MNT_DTYPE_F32, {n});
        auto m = d_.Upload(state, MNT_DTYPE_F32, {n});
        auto m2 = d_.Upload(state, MNT_DTYPE_F32, {n});
        for (float& e : state) e = e * e;
        auto v = d_.Upload(state, MNT_DTYPE_F32, {n});
        auto v2 = d_.Upload(state, MNT_DTYPE_F32, {n});
        auto working = d_.Poisoned(MNT_DTYPE_BF16, {n});
        auto working2 = d_.Poisoned(MNT_DTYPE_BF16, {n});
        auto counter = d_.UploadI32({4}, {1});
        auto counter2 = d_.UploadI32({4}, {1});
        in.push_back(grad.get());
        if (adamw) in.push_back(counter.get());
        out.insert(out.end(), {master.get(), m.get()});
        if (adamw) out.push_back(v.get());
        out.push_back(working.get());
        single_in.push_back({grad.get(), found_inf.get(), mult.get()});
        if (adamw) single_in.back().push_back(counter2.get());
        single_out.push_back({master2.get(), m2.get()});
        if (adamw) single_out.back().push_back(v2.get());
        single_out.back().push_back(working2.get());
        for (auto* p : {&grad, &master, &master2, &m, &m2, &v, &v2, &working, &working2,
                        &counter, &counter2}) {
          keep.push_back(std::move(*p));
        }
      }
      const std::vector<uint8_t> before = d_.Bytes(*out[0], true);
      const MNT_MultiAdamWParams ap{MNT_MultiAdamWParams_STRUCT_SIZE, 1e-3f, 0.9f, 0.999f, 1e-8f,
                                    0.0f, 1, 3, lr_scales, wds};
      const MNT_MultiSgdParams sp{MNT_MultiSgdParams_STRUCT_SIZE, 0.1f, 0.9f, 0.0f, 1, 3,
                                  lr_scales, wds};
      ASSERT_TRUE(d_.RunBoth(adamw ? MNT_OP_MULTI_ADAMW_STEP : MNT_OP_MULTI_SGD_STEP, in, out,
                             adamw ? static_cast<const void*>(&ap) : &sp)
                      .ok());
      if (found > 0) {
        EXPECT_EQ(d_.Bytes(*out[0], true), before) << "skipped step changed weights";
        continue;
      }
      for (const Pair* p : out) ExpectSame(*p, 1e-6, 1e-7);
      for (size_t i = 0; i < sizes.size(); ++i) {
        const MNT_AdamWParams a{MNT_AdamWParams_STRUCT_SIZE, 1e-3f * lr_scales[i], 0.9f, 0.999f,
                                1e-8f, wds[i], 1};
        const MNT_SgdParams s{MNT_SgdParams_STRUCT_SIZE, 0.1f * lr_scales[i], 0.9f, wds[i], 1};
        ASSERT_TRUE(d_.RunCuda(adamw ? MNT_OP_ADAMW_STEP : MNT_OP_SGD_STEP, single_in[i],
                               single_out[i], adamw ? static_cast<const void*>(&a) : &s)
                        .ok());
        const size_t per = adamw ? 4 : 3;
        for (size_t k = 0; k < per; ++k) {
          EXPECT_EQ(d_.Bytes(*single_out[i][k], true), d_.Bytes(*out[per * i + k], true))
              << "tensor " << i << " operand " << k;
        }
        if (adamw) {
          EXPECT_EQ(d_.Bytes(*single_in[i][3], true), d_.Bytes(*in[3 + 2 * i], true));
          EXPECT_EQ(d_.Bytes(*in[3 + 2 * i], true), d_.Bytes(*in[3 + 2 * i], false));
        }
      }
    }
  }
}

// ABI 1.7: each optimizer op twice on the cuda backend, once with the lr in
// its params and once with it on the device (params lr 7, ignored): the same
// bits; the device-lr form also against the CPU backend.
TEST_F(CudaFusedOpsTest, DeviceLrMatchesCpuAndParamsLrBits) {
  const std::vector<int64_t> sizes = {70001, 3};
  const float lr_scales[2] = {1.0f, 0.5f}, wds[2] = {0.01f, 0.0f};
  const float lr = 3.7e-3f;
  auto device_lr = d_.Upload({lr}, MNT_DTYPE_F32, {1});
  auto mult = d_.Upload({0.5f}, MNT_DTYPE_F32, {1});
  for (MNT_Op op : {MNT_OP_SGD_STEP, MNT_OP_ADAMW_STEP, MNT_OP_MULTI_SGD_STEP,
                    MNT_OP_MULTI_ADAMW_STEP}) {
    for (bool counters : {false, true}) {
      const bool adam = op == MNT_OP_ADAMW_STEP || op == MNT_OP_MULTI_ADAMW_STEP;
      const bool multi = op == MNT_OP_MULTI_SGD_STEP || op == MNT_OP_MULTI_ADAMW_STEP;
      if (counters && !adam) continue;
      SCOPED_TRACE(::testing::Message() << sdk::OpName(op) << (counters ? " counters" : ""));
      std::vector<std::unique_ptr<Pair>> keep;
      std::vector<const Pair*> in_host, in_dev, out_host, out_dev;
      if (multi) {
        in_host = {nullptr, mult.get()};
        in_dev = in_host;
      }
      for (size_t i = 0; i < (multi ? sizes.size() : 1); ++i) {
        const int64_t n = sizes[i];
        auto grad = d_.Upload(Random(n), i == 0 ? MNT_DTYPE_BF16 : MNT_DTYPE_F32, {n});
        const std::vector<float> w = Random(n), m = Random(n, 0.1f);
        std::vector<float> v = m;
        for (float& e : v) e = e * e;
        for (auto* out : {&out_host, &out_dev}) {
          keep.push_back(d_.Upload(w, MNT_DTYPE_F32, {n}));
          out->push_back(keep.back().get());
          keep.push_back(d_.Upload(m, MNT_DTYPE_F32, {n}));
          out->push_back(keep.back().get());
          if (adam) {
            keep.push_back(d_.Upload(v, MNT_DTYPE_F32, {n}));
            out->push_back(keep.back().get());
          }
          keep.push_back(d_.Poisoned(MNT_DTYPE_BF16, {n}));
          out->push_back(keep.back().get());
        }
        for (auto* in : {&in_host, &in_dev}) {
          const Pair* counter = nullptr;
          if (counters) {
            keep.push_back(d_.UploadI32({4}, {1}));
            counter = keep.back().get();
          }
          if (multi) {
            in->push_back(grad.get());
            if (adam) in->push_back(counter);
          } else {
            *in = {grad.get(), nullptr, mult.get()};
            if (adam) in->push_back(counter);
          }
        }
        keep.push_back(std::move(grad));
      }
      in_dev.push_back(device_lr.get());
      auto params = [&](float params_lr, MNT_SgdParams* sgd, MNT_AdamWParams* adamw,
                        MNT_MultiSgdParams* msgd, MNT_MultiAdamWParams* madamw) -> const void* {
        *sgd = {MNT_SgdParams_STRUCT_SIZE, params_lr, 0.9f, 0.01f, 1};
        *adamw = {MNT_AdamWParams_STRUCT_SIZE, params_lr, 0.9f, 0.999f, 1e-8f, 0.01f, 5};
        *msgd = {MNT_MultiSgdParams_STRUCT_SIZE, params_lr, 0.9f, 0.0f, 1, 2, lr_scales, wds};
        *madamw = {MNT_MultiAdamWParams_STRUCT_SIZE, params_lr, 0.9f, 0.999f, 1e-8f, 0.0f, 5,
                   2, lr_scales, wds};
        if (op == MNT_OP_SGD_STEP) return sgd;
        if (op == MNT_OP_ADAMW_STEP) return adamw;
        if (op == MNT_OP_MULTI_SGD_STEP) return msgd;
        return madamw;
      };
      MNT_SgdParams s1, s2;
      MNT_AdamWParams a1, a2;
      MNT_MultiSgdParams ms1, ms2;
      MNT_MultiAdamWParams ma1, ma2;
      ASSERT_TRUE(d_.RunCuda(op, in_host, out_host, params(lr, &s1, &a1, &ms1, &ma1)).ok());
      ASSERT_TRUE(d_.RunBoth(op, in_dev, out_dev, params(7.0f, &s2, &a2, &ms2, &ma2)).ok());
      for (size_t k = 0; k < out_dev.size(); ++k) {
        ExpectSame(*out_dev[k], 1e-6, 1e-7);
        EXPECT_EQ(d_.Bytes(*out_dev[k], true), d_.Bytes(*out_host[k], true)) << "operand " << k;
      }
    }
  }
}

}  // namespace
}  // namespace mnt::cuda
