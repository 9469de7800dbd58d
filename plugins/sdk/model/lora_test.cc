// LoRA adapters in the op facade on the real CPU backend: the lora_* option
// keys, the adapter parameters chosen for a model's matrices, and a LoRA
// Linear (plain, through the GELU pair GPT-2's MLP uses, and one layer of a
// stacked weight) with every gradient against a float64 host reference
// with fresh random inputs each run (the seed is printed). fp32 GEMMs
// against float64: max |error| / max |reference| < 1e-5 (the model layer
// test's tolerance for the plain Linear).
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model/lora.h"
#include "plugins/sdk/model/ops.h"
#include "plugins/sdk/model/views.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {
namespace {

std::string Take(const MNT_Plugin_Api* plugin, MNT_Error* e) {
  if (e == nullptr) return "";
  std::string m = plugin->Error_Message(e);
  plugin->Error_Destroy(e);
  return m;
}

TEST(LoraOptionsTest, TakesItsKeysAndLeavesTheRest) {
  LoraConfig c;
  std::string rest;
  ASSERT_TRUE(TakeLoraOptions("m", "hidden=8, lora_r=4,lora_alpha=16,checkpointing=1,"
                                   "lora_dropout=0.0,lora_targets=qkvw|layer*.weight",
                              &c, &rest)
                  .ok());
  EXPECT_EQ(rest, "hidden=8,checkpointing=1");
  EXPECT_EQ(c.rank, 4);
  EXPECT_EQ(c.alpha, 16.0);
  EXPECT_EQ(c.scale(), 4.0f);
  EXPECT_EQ(c.targets, (std::vector<std::string>{"qkvw", "layer*.weight"}));
  ASSERT_TRUE(TakeLoraOptions("m", nullptr, &c, &rest).ok());
  EXPECT_FALSE(c.enabled());
  EXPECT_EQ(rest, "");
  // PEFT's default alpha.
  ASSERT_TRUE(TakeLoraOptions("m", "lora_r=2,lora_targets=w", &c, &rest).ok());
  EXPECT_EQ(c.alpha, 8.0);

  auto error = [&](const char* options) {
    return TakeLoraOptions("m", options, &c, &rest).message();
  };
  EXPECT_EQ(error("lora_r=0,lora_targets=w"), "m: lora_r='0' is not a rank from 1 to 1048576");
  EXPECT_EQ(error("lora_r=2,lora_alpha=-1,lora_targets=w"),
            "m: lora_alpha='-1' is not a positive number");
  EXPECT_EQ(error("lora_r=2,lora_dropout=0.1,lora_targets=w"),
            "m: lora_dropout='0.1': dropout on the adapters' input is not implemented; use 0");
  EXPECT_EQ(error("lora_r=2"),
            "m: LoRA needs lora_r and lora_targets (globs over parameter names, '|'-separated)");
  EXPECT_EQ(error("lora_rank=2,lora_targets=w"),
            "m: unknown LoRA key 'lora_rank' (known: lora_alpha, lora_dropout, lora_r, "
            "lora_targets)");
}

TEST(LoraAdaptersTest, AdaptersFollowTheMatchedMatricesInOrder) {
  const std::vector<ParamSpec> base = {
      {"wte", {50, 8}, MNT_PARAM_INIT_NORMAL, 0.02f, true},
      {"qkvw", {3, 24, 8}, MNT_PARAM_INIT_NORMAL, 0.02f, true},
      {"qkvb", {3, 24}, MNT_PARAM_INIT_ZEROS, 0.0f, false},
      {"layer0.weight", {8, 5}, MNT_PARAM_INIT_NORMAL, 0.1f, true, WeightLayout::kInOut},
      {"layer0.bias", {5}, MNT_PARAM_INIT_ZEROS, 0.0f, false},
  };
  LoraConfig c;
  c.rank = 2;
  c.alpha = 4;
  c.targets = {"qkvw", "layer?.weight"};
  std::unique_ptr<LoraAdapters> lora;
  ASSERT_TRUE(LoraAdapters::Create("m", c, base, sdk::BackendClient(), &lora).ok());
  EXPECT_EQ(lora->num_base(), 5u);
  const auto& s = lora->specs();
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0].name, "qkvw.lora_A");
  EXPECT_EQ(s[0].dims, (std::vector<int64_t>{3, 2, 8}));
  EXPECT_EQ(s[0].init, MNT_PARAM_INIT_UNIFORM);
  EXPECT_FLOAT_EQ(s[0].init_scale, 1.0f / std::sqrt(8.0f));  // PEFT's kaiming bound
  EXPECT_EQ(s[1].name, "qkvw.lora_B");
  EXPECT_EQ(s[1].dims, (std::vector<int64_t>{3, 24, 2}));
  EXPECT_EQ(s[1].init, MNT_PARAM_INIT_ZEROS);
  // An [in, out] weight: in is its first dimension.
  EXPECT_EQ(s[2].name, "layer0.lora_A");
  EXPECT_EQ(s[2].dims, (std::vector<int64_t>{2, 8}));
  EXPECT_FLOAT_EQ(s[2].init_scale, 1.0f / std::sqrt(8.0f));
  EXPECT_EQ(s[3].name, "layer0.lora_B");
  EXPECT_EQ(s[3].dims, (std::vector<int64_t>{5, 2}));

  c.targets = {"qkvw", "head*"};
  const sdk::Status bad = LoraAdapters::Create("m", c, base, sdk::BackendClient(), &lora);
  EXPECT_EQ(bad.message(),
            "m: LoRA target 'head*' matches no weight matrix (its matrices: wte, qkvw, qkvb, "
            "layer0.weight)");
}

// gelu_tanh and its derivative, in float64.
double Gelu(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  return 0.5 * x * (1.0 + std::tanh(u));
}
double GeluGrad(double x) {
  const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
  const double t = std::tanh(u);
  return 0.5 * (1.0 + t) +
         0.5 * x * (1.0 - t * t) * std::sqrt(2.0 / M_PI) * (1.0 + 3.0 * 0.044715 * x * x);
}

// max |a - b| / max |b|; NaN never passes.
double MaxRelative(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double e = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    e = std::max(e, std::fabs(a[i] - b[i]));
    s = std::max(s, std::fabs(b[i]));
  }
  return e / std::max(s, 1e-30);
}

class LoraLinearTest : public ::testing::Test {
 protected:
  static constexpr double kTolerance = 1e-5;

  void SetUp() override {
    plugin_ = cpu::CpuBackendPluginApi();
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    ASSERT_EQ(Take(plugin_, plugin_->backend->Backend_Create(&a)), "");
    client_ = sdk::BackendClient(plugin_, a.backend);
    const unsigned seed = std::random_device{}();
    std::printf("seed = %u\n", seed);
    rng_.seed(seed);
    ASSERT_TRUE(Ops::Create(client_, MNT_COMPUTE_F32,
                            {MNT_OP_GEMM, MNT_OP_BIAS_GRAD, MNT_OP_ACTIVATION_FORWARD,
                             MNT_OP_ACTIVATION_BACKWARD},
                            "test", "", &ops_)
                    .ok());
    // The fused GELU GEMMs where the backend has them: a weight with an
    // adapter must not take them.
    ASSERT_TRUE(ops_.AskOptional({MNT_OP_GEMM_BIAS_GELU, MNT_OP_GEMM_DGELU}).ok());
  }
  void TearDown() override {
    ops_ = Ops();
    buffers_.clear();
    MNT_Backend_Destroy_Args a{};
    a.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
    a.backend = client_.backend();
    EXPECT_EQ(Take(plugin_, plugin_->backend->Backend_Destroy(&a)), "");
  }

  // F32 device tensor with fresh N(0, 1) values; *host keeps them.
  MNT_Tensor Random(const std::vector<int64_t>& dims, std::vector<double>* host) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(Count(dims)));
    for (float& x : v) x = d(rng_);
    host->assign(v.begin(), v.end());
    MNT_Tensor t = Alloc(dims);
    EXPECT_TRUE(client_.ToDevice(t.data, v.data(), v.size() * 4).ok());
    return t;
  }
  MNT_Tensor Alloc(const std::vector<int64_t>& dims) {
    buffers_.emplace_back();
    EXPECT_TRUE(client_.Allocate(Count(dims) * 4, MNT_MEMORY_DATA, &buffers_.back()).ok());
    return View(buffers_.back().data(), MNT_DTYPE_F32, dims);
  }
  std::vector<double> Download(const MNT_Tensor& t) {
    std::vector<float> v(static_cast<size_t>(sdk::NumElements(t)));
    EXPECT_TRUE(client_.ToHost(v.data(), t.data, v.size() * 4).ok());
    return std::vector<double>(v.begin(), v.end());
  }
  static int64_t Count(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t x : dims) n *= x;
    return n;
  }

  const MNT_Plugin_Api* plugin_ = nullptr;
  sdk::BackendClient client_;
  std::mt19937 rng_;
  std::vector<sdk::DeviceBuffer> buffers_;
  Ops ops_;
};

// Three adapted weights, as the models have them: an [out, in] matrix
// (GPT-2's head, resmlp), an [in, out] one (mlp, cnn's head) and layer 1 of
// a stacked [L, out, in] one (GPT-2's blocks). Base weights frozen (NULL
// gradient data); adapter gradients accumulate onto random values; B random
// so that every gradient is non-zero.
TEST_F(LoraLinearTest, ForwardAndGradientsMatchAFloat64Reference) {
  const int64_t N = 6, in = 7, out = 5, r = 3, L = 2;
  LoraConfig config;
  config.rank = r;
  config.alpha = 5.0;  // s = 5/3, not a power of two
  config.targets = {"w*"};
  const std::vector<ParamSpec> base = {
      {"w_outin", {out, in}, MNT_PARAM_INIT_NORMAL, 1.0f, true},
      {"w_inout", {in, out}, MNT_PARAM_INIT_NORMAL, 1.0f, true, WeightLayout::kInOut},
      {"w_stacked", {L, out, in}, MNT_PARAM_INIT_NORMAL, 1.0f, true},
  };
  std::unique_ptr<LoraAdapters> adapters;
  ASSERT_TRUE(LoraAdapters::Create("test", config, base, client_, &adapters).ok());
  LoraAdapters* lora = adapters.get();
  ops_.UseLora(std::move(adapters));
  const double s = 5.0 / 3.0;

  std::vector<double> w[3], a[3], b[3], da0[3], db0[3];
  std::vector<MNT_Tensor> params, grads;
  for (int k = 0; k < 3; ++k) params.push_back(Random(base[k].dims, &w[k]));
  for (int k = 0; k < 3; ++k) grads.push_back(View(nullptr, MNT_DTYPE_F32, base[k].dims));
  for (int k = 0; k < 3; ++k) {
    const auto& sa = lora->specs()[2 * k];
    const auto& sb = lora->specs()[2 * k + 1];
    params.push_back(Random(sa.dims, &a[k]));
    params.push_back(Random(sb.dims, &b[k]));
    grads.push_back(Random(sa.dims, &da0[k]));
    grads.push_back(Random(sb.dims, &db0[k]));
  }
  ASSERT_TRUE(lora->BeginPass("test", params.data(), params.size(), grads.data(), grads.size())
                  .ok());

  for (int k = 0; k < 3; ++k) {
    SCOPED_TRACE(base[k].name);
    const WeightLayout layout = base[k].layout;
    const bool out_in = layout == WeightLayout::kOutIn;
    // The stacked weight's layer 1 and its adapters' layer 1.
    const int64_t layer = k == 2 ? 1 : 0;
    const MNT_Tensor tw = k == 2 ? Layer(params[2], 1) : params[k];
    const MNT_Tensor tdw = k == 2 ? Layer(grads[2], 1) : grads[k];
    const size_t wo = static_cast<size_t>(layer * out * in), ao = static_cast<size_t>(layer * r * in),
                 bo = static_cast<size_t>(layer * out * r);
    auto W = [&](int64_t i, int64_t o) {
      return out_in ? w[k][wo + o * in + i] : w[k][wo + i * out + o];
    };
    auto A = [&](int64_t j, int64_t i) { return a[k][ao + j * in + i]; };
    auto B = [&](int64_t o, int64_t j) { return b[k][bo + o * r + j]; };

    std::vector<double> x, bias, dy, unused;
    const MNT_Tensor tx = Random({N, in}, &x), tb = Random({out}, &bias),
                     tdy = Random({N, out}, &dy);
    const MNT_Tensor ty = Random({N, out}, &unused), tdx = Random({N, in}, &unused);
    ASSERT_TRUE(ops_.Linear(tx, tw, tb, ty, layout).ok());
    ASSERT_TRUE(ops_.LinearBackward(tx, tw, tdy, tdw, std::nullopt, tdx, true, layout).ok());

    std::vector<double> h(N * r, 0.0), y(N * out), dh(N * r, 0.0), dx(N * in, 0.0);
    std::vector<double> da(da0[k].begin() + ao, da0[k].begin() + ao + r * in);
    std::vector<double> db(db0[k].begin() + bo, db0[k].begin() + bo + out * r);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t j = 0; j < r; ++j) {
        for (int64_t i = 0; i < in; ++i) h[n * r + j] += x[n * in + i] * A(j, i);
      }
      for (int64_t o = 0; o < out; ++o) {
        double v = bias[o];
        for (int64_t i = 0; i < in; ++i) v += x[n * in + i] * W(i, o);
        for (int64_t j = 0; j < r; ++j) v += s * h[n * r + j] * B(o, j);
        y[n * out + o] = v;
        for (int64_t j = 0; j < r; ++j) {
          dh[n * r + j] += s * dy[n * out + o] * B(o, j);
          db[o * r + j] += s * dy[n * out + o] * h[n * r + j];
        }
        for (int64_t i = 0; i < in; ++i) dx[n * in + i] += dy[n * out + o] * W(i, o);
      }
      for (int64_t j = 0; j < r; ++j) {
        for (int64_t i = 0; i < in; ++i) {
          da[j * in + i] += dh[n * r + j] * x[n * in + i];
          dx[n * in + i] += dh[n * r + j] * A(j, i);
        }
      }
    }
    const MNT_Tensor tda = k == 2 ? Layer(grads[3 + 2 * k], 1) : grads[3 + 2 * k];
    const MNT_Tensor tdb = k == 2 ? Layer(grads[4 + 2 * k], 1) : grads[4 + 2 * k];
    EXPECT_LT(MaxRelative(Download(ty), y), kTolerance) << "y";
    EXPECT_LT(MaxRelative(Download(tdx), dx), kTolerance) << "dx";
    EXPECT_LT(MaxRelative(Download(tda), da), kTolerance) << "dA";
    EXPECT_LT(MaxRelative(Download(tdb), db), kTolerance) << "dB";
  }
  // The stacked adapters' layer 0 gradients were not touched.
  const auto da_stacked = Download(grads[7]);
  EXPECT_EQ(std::vector<double>(da_stacked.begin(), da_stacked.begin() + r * in),
            std::vector<double>(da0[2].begin(), da0[2].begin() + r * in));

  // The GELU pair (GPT-2's MLP): pre = x·Wᵀ + b + s·(x·Aᵀ)·Bᵀ, y = gelu(pre);
  // then, for the Linear whose input was gelu(pre), dpre = gelu'(pre) ⊙
  // (dy·W + s·(dy·B)·A) and db = its column sums.
  {
    SCOPED_TRACE("GELU pair on w_outin");
    std::vector<double> x, bias, unused;
    const MNT_Tensor tx = Random({N, in}, &x), tb = Random({out}, &bias);
    const MNT_Tensor tpre = Random({N, out}, &unused), tgy = Random({N, out}, &unused);
    ASSERT_TRUE(ops_.LinearGelu(tx, params[0], tb, tpre, tgy, WeightLayout::kOutIn).ok());
    std::vector<double> pre(N * out), gy(N * out);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t o = 0; o < out; ++o) {
        double v = bias[o];
        for (int64_t i = 0; i < in; ++i) v += x[n * in + i] * w[0][o * in + i];
        for (int64_t j = 0; j < r; ++j) {
          double hj = 0;
          for (int64_t i = 0; i < in; ++i) hj += x[n * in + i] * a[0][j * in + i];
          v += s * hj * b[0][o * r + j];
        }
        pre[n * out + o] = v;
        gy[n * out + o] = Gelu(v);
      }
    }
    EXPECT_LT(MaxRelative(Download(tpre), pre), kTolerance) << "pre";
    EXPECT_LT(MaxRelative(Download(tgy), gy), kTolerance) << "gelu(pre)";

    // w_outin as the second Linear [out2 = out, in2 = in]: its input was
    // gelu(pre2), pre2 [N, in].
    std::vector<double> pre2, dy, dbias0;
    const MNT_Tensor tpre2 = Random({N, in}, &pre2), tdy = Random({N, out}, &dy),
                     tdbias = Random({in}, &dbias0), tdpre = Random({N, in}, &unused);
    ASSERT_TRUE(ops_.LinearBackwardThroughGelu(tdy, params[0], tpre2, tdpre, tdbias, true,
                                               WeightLayout::kOutIn)
                    .ok());
    std::vector<double> dpre(N * in, 0.0), dbias = dbias0;
    for (int64_t n = 0; n < N; ++n) {
      std::vector<double> dh(r, 0.0);
      for (int64_t j = 0; j < r; ++j) {
        for (int64_t o = 0; o < out; ++o) dh[j] += s * dy[n * out + o] * b[0][o * r + j];
      }
      for (int64_t i = 0; i < in; ++i) {
        double g = 0;
        for (int64_t o = 0; o < out; ++o) g += dy[n * out + o] * w[0][o * in + i];
        for (int64_t j = 0; j < r; ++j) g += dh[j] * a[0][j * in + i];
        dpre[n * in + i] = GeluGrad(pre2[n * in + i]) * g;
        dbias[i] += dpre[n * in + i];
      }
    }
    EXPECT_LT(MaxRelative(Download(tdpre), dpre), kTolerance) << "dpre";
    EXPECT_LT(MaxRelative(Download(tdbias), dbias), kTolerance) << "db";
  }
  lora->EndPass();
}

// A Linear call whose layout disagrees with the weight's spec is refused
// (the adapter's in and out would be swapped).
TEST_F(LoraLinearTest, ALayoutOtherThanTheSpecsIsRefused) {
  LoraConfig config;
  config.rank = 2;
  config.alpha = 2.0;
  config.targets = {"w"};
  const std::vector<ParamSpec> base = {{"w", {4, 3}, MNT_PARAM_INIT_NORMAL, 1.0f, true}};
  std::unique_ptr<LoraAdapters> adapters;
  ASSERT_TRUE(LoraAdapters::Create("test", config, base, client_, &adapters).ok());
  LoraAdapters* lora = adapters.get();
  ops_.UseLora(std::move(adapters));
  std::vector<double> unused;
  std::vector<MNT_Tensor> params = {Random({4, 3}, &unused), Random({2, 3}, &unused),
                                    Random({4, 2}, &unused)};
  ASSERT_TRUE(lora->BeginPass("test", params.data(), params.size(), nullptr, 0).ok());
  const MNT_Tensor x = Random({2, 4}, &unused), y = Random({2, 3}, &unused);
  const sdk::Status s = ops_.Linear(x, params[0], std::nullopt, y, WeightLayout::kInOut);
  EXPECT_EQ(s.message(),
            "LoRA: a Linear call multiplies f32[4,3] as [in, out], but its parameter spec "
            "declares [out, in] (ParamSpec::layout)");
  lora->EndPass();
}

}  // namespace
}  // namespace mnt::models
