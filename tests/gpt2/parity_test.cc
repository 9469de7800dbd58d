// Mantissa's GPT-2 (plugin + CPU backend) against a PyTorch float64
// reference: tests/gpt2/testdata/parity_fixture.bin, written by
// tools/gpt2/make_parity_fixture.py with PyTorch 2.15 (torch.float64,
// torch.optim.AdamW) for a tiny configuration (L2 H2 C16 T8, vocab 64 padded
// to 128, batch 2) with fixed weights. Checked in every precision: logits,
// loss, every parameter gradient, and the losses of 10 AdamW steps on the
// batch (Mantissa's ADAMW_STEP on fp32 master weights, as the trainer does).
//
// Tolerances (relative; gradients as ||a-b||/||b|| per tensor; measured
// errors in brackets, about 5-50x below the bounds):
//  fp32: loss, logits (of the largest logit), gradients and the 10-step
//        losses all 1e-5, the bound [2e-8, 2e-7, 3e-7, 2e-7].
//  tf32: GEMM operands keep 10 mantissa bits (unit roundoff 2^-11 ≈ 5e-4),
//        partly averaging out in the K-long sums: loss 1e-3, logits 5e-3,
//        gradients 1e-2, 10-step losses 5e-3 [3e-5, 7e-4, 1e-3, 2e-4].
//  bf16: weights, activations and gradients stored with 8 bits (2^-9 ≈
//        2e-3 per rounding) through ~30 dependent ops: loss 1e-2, logits
//        5e-2, gradients 8e-2, 10-step losses 2e-2 [3e-4, 9e-3, 1.3e-2,
//        4e-3].
//  fp16: 11 bits (2^-12 ≈ 2.4e-4), a static loss scale of 1024 keeps small
//        gradients normal: loss 2e-3, logits 1e-2, gradients 1e-2, 10-step
//        losses 5e-3 [3e-5, 1e-3, 1.2e-3, 3e-4].
// NaN or inf anywhere fails.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "models/gpt2/gpt2_model.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"

namespace mnt::gpt2 {
namespace {

std::string g_fixture_path;

struct Record {
  std::vector<int64_t> dims;
  std::vector<double> data;
};

// Reads the fixture (format in make_parity_fixture.py); empty on error.
std::map<std::string, Record> LoadFixture(const std::string& path,
                                          std::string* error) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string b = ss.str();
  size_t at = 0;
  auto take = [&](void* dst, size_t n) {
    if (at + n > b.size()) return false;
    std::memcpy(dst, b.data() + at, n);
    at += n;
    return true;
  };
  std::map<std::string, Record> out;
  char magic[8];
  uint32_t count = 0;
  if (!take(magic, 8) || std::memcmp(magic, "MNTPARv1", 8) != 0 ||
      !take(&count, 4)) {
    *error = path + ": not a parity fixture";
    return {};
  }
  for (uint32_t r = 0; r < count; ++r) {
    uint32_t len = 0, rank = 0;
    if (!take(&len, 4) || len > 256) break;
    std::string name(len, '\0');
    if (!take(name.data(), len) || !take(&rank, 4) || rank > 8) break;
    Record rec;
    rec.dims.resize(rank);
    int64_t n = 1;
    if (!take(rec.dims.data(), 8 * rank)) break;
    for (int64_t d : rec.dims) n *= d;
    rec.data.resize(static_cast<size_t>(n));
    if (!take(rec.data.data(), 8 * rec.data.size())) break;
    out[name] = std::move(rec);
  }
  if (out.size() != count || at != b.size()) {
    *error = path + ": truncated or malformed parity fixture";
    return {};
  }
  return out;
}

// ||a - b|| / ||b||; NaN/inf never pass.
double RelativeL2(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double e = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    e += (a[i] - b[i]) * (a[i] - b[i]);
    n += b[i] * b[i];
  }
  return std::sqrt(e / std::max(n, 1e-300));
}

// max |a - b| / max |b|.
double MaxRelative(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double e = 0, s = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    e = std::max(e, std::fabs(a[i] - b[i]));
    s = std::max(s, std::fabs(b[i]));
  }
  return e / std::max(s, 1e-300);
}

double RelativeError(double got, double want) {
  if (!std::isfinite(got)) return INFINITY;
  return std::fabs(got - want) / std::fabs(want);
}

struct Mode {
  const char* name;
  MNT_DType dtype;
  MNT_ComputeMode compute;
  float loss_scale;
  double loss_tol, logits_tol, grad_tol, steps_tol;
};

class ParityTest : public ::testing::TestWithParam<Mode> {
 protected:
  void SetUp() override {
    std::string error;
    fixture_ = LoadFixture(g_fixture_path, &error);
    ASSERT_FALSE(fixture_.empty()) << error;
    const std::vector<double>& c = fixture_.at("config").data;
    config_.n_layer = int64_t(c[0]);
    config_.n_head = int64_t(c[1]);
    config_.d_model = int64_t(c[2]);
    config_.seq_len = int64_t(c[3]);
    vocab_ = int64_t(c[4]);
    batch_ = int64_t(c[5]);
    t_ = int64_t(c[6]);
    specs_ = Gpt2ParamSpecs(config_, PaddedVocab(vocab_));

    backend_ = cpu::CpuBackendPluginApi();
    MNT_Backend_Create_Args a{};
    a.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
    ASSERT_EQ(Take(backend_, backend_->backend->Backend_Create(&a)), "");
    client_ = sdk::BackendClient(backend_, a.backend);

    const Mode& m = GetParam();
    MNT_Model_Create_Args mc{};
    mc.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
    const std::string options = "n_layer=" + std::to_string(config_.n_layer) +
                                ",n_head=" + std::to_string(config_.n_head) +
                                ",d_model=" + std::to_string(config_.d_model) +
                                ",seq_len=" + std::to_string(config_.seq_len);
    mc.options = options.c_str();
    mc.backend_plugin = backend_;
    mc.backend = client_.backend();
    mc.data_spec.struct_size = MNT_DataSpec_STRUCT_SIZE;
    mc.data_spec.input_dtype = MNT_DTYPE_I32;
    mc.data_spec.input_rank = 1;
    mc.data_spec.input_dims[0] = t_;
    mc.data_spec.num_classes = vocab_;
    mc.data_spec.targets_per_example = static_cast<int32_t>(t_);
    mc.precision = {MNT_ModelPrecision_STRUCT_SIZE, m.dtype, m.dtype, m.dtype,
                    m.compute};
    mc.max_batch_size = batch_;
    ASSERT_EQ(Take(Gpt2PluginApi(), Api()->Model_Create(&mc)), "");
    model_ = mc.model;
  }

  void TearDown() override {
    if (model_ != nullptr) {
      MNT_Model_Destroy_Args d{};
      d.struct_size = MNT_Model_Destroy_Args_STRUCT_SIZE;
      d.model = model_;
      EXPECT_EQ(Take(Gpt2PluginApi(), Api()->Model_Destroy(&d)), "");
    }
    buffers_.clear();
    if (client_.backend() != nullptr) {
      MNT_Backend_Destroy_Args d{};
      d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
      d.backend = client_.backend();
      EXPECT_EQ(Take(backend_, backend_->backend->Backend_Destroy(&d)), "");
    }
  }

  static const MNT_Model_Api* Api() { return Gpt2PluginApi()->model; }
  static std::string Take(const MNT_Plugin_Api* plugin, MNT_Error* e) {
    if (e == nullptr) return "";
    std::string m = plugin->Error_Message(e);
    plugin->Error_Destroy(e);
    return m;
  }

  MNT_Tensor Alloc(MNT_DType dtype, const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    buffers_.emplace_back();
    EXPECT_TRUE(client_.Allocate(n * sdk::DTypeSize(dtype), MNT_MEMORY_DATA,
                                 &buffers_.back()).ok());
    return sdk::MakeTensor(buffers_.back().data(), dtype,
                           static_cast<int32_t>(dims.size()), dims.data());
  }
  MNT_Tensor UploadF32(const std::vector<double>& v,
                       const std::vector<int64_t>& dims) {
    MNT_Tensor t = Alloc(MNT_DTYPE_F32, dims);
    std::vector<float> f(v.begin(), v.end());
    EXPECT_TRUE(client_.ToDevice(t.data, f.data(), f.size() * 4).ok());
    return t;
  }
  MNT_Tensor UploadI32(const std::vector<double>& v,
                       const std::vector<int64_t>& dims) {
    MNT_Tensor t = Alloc(MNT_DTYPE_I32, dims);
    std::vector<int32_t> i(v.begin(), v.end());
    EXPECT_TRUE(client_.ToDevice(t.data, i.data(), i.size() * 4).ok());
    return t;
  }
  std::vector<double> Download(const MNT_Tensor& t) {
    MNT_Tensor f32 = t;
    if (t.dtype != MNT_DTYPE_F32) {
      f32 = Alloc(MNT_DTYPE_F32, std::vector<int64_t>(t.dims, t.dims + t.rank));
      EXPECT_TRUE(client_.Run(MNT_OP_CAST, {t}, {f32}).ok());
    }
    std::vector<float> f(static_cast<size_t>(sdk::NumElements(t)));
    EXPECT_TRUE(client_.ToHost(f.data(), f32.data, f.size() * 4).ok());
    return std::vector<double>(f.begin(), f.end());
  }

  // Forward (training) + backward with the mode's loss scale; returns the
  // loss. Gradients are left scaled in grads_.
  // Forward + Backward; `logits`, when given, gets the logits between the
  // two (a backend with the fused classifier writes dlogits over them).
  double Step(std::vector<double>* logits = nullptr) {
    MNT_Tensor loss = Alloc(MNT_DTYPE_F32, {1});
    MNT_Model_Forward_Args f{};
    f.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
    f.model = model_;
    f.params = working_.data();
    f.num_params = working_.size();
    f.inputs = &ids_;
    f.targets = &targets_;
    f.training = 1;
    f.loss_out = &loss;
    EXPECT_EQ(Take(Gpt2PluginApi(), Api()->Model_Forward(&f)), "");
    if (logits != nullptr) *logits = Download(NetworkOf(model_)->Logits(batch_));
    MNT_Model_Backward_Args b{};
    b.struct_size = MNT_Model_Backward_Args_STRUCT_SIZE;
    b.model = model_;
    b.params = working_.data();
    b.num_params = working_.size();
    b.grads = grads_.data();
    b.num_grads = grads_.size();
    b.loss_multiplier = GetParam().loss_scale;
    b.accumulate = 0;
    EXPECT_EQ(Take(Gpt2PluginApi(), Api()->Model_Backward(&b)), "");
    return Download(loss)[0];
  }

  std::map<std::string, Record> fixture_;
  Gpt2Config config_;
  int64_t vocab_ = 0, batch_ = 0, t_ = 0;
  std::vector<ParamSpec> specs_;
  const MNT_Plugin_Api* backend_ = nullptr;
  sdk::BackendClient client_;
  MNT_Model* model_ = nullptr;
  std::vector<sdk::DeviceBuffer> buffers_;
  std::vector<MNT_Tensor> master_, working_, grads_, m_, v_;
  MNT_Tensor ids_{}, targets_{};
};

TEST_P(ParityTest, LogitsLossGradientsAndTenAdamWSteps) {
  const Mode& mode = GetParam();
  const bool mixed = mode.dtype != MNT_DTYPE_F32;
  ids_ = UploadI32(fixture_.at("ids").data, {batch_, t_});
  targets_ = UploadI32(fixture_.at("targets").data, {batch_, t_});
  for (const ParamSpec& s : specs_) {
    const Record& p = fixture_.at("param/" + s.name);
    ASSERT_EQ(p.dims, s.dims) << s.name;
    master_.push_back(UploadF32(p.data, s.dims));
    MNT_Tensor w = master_.back();
    if (mixed) {
      w = Alloc(mode.dtype, s.dims);
      ASSERT_TRUE(client_.Run(MNT_OP_CAST, {master_.back()}, {w}).ok());
    }
    working_.push_back(w);
    grads_.push_back(Alloc(mode.dtype, s.dims));
    m_.push_back(UploadF32(std::vector<double>(p.data.size(), 0.0), s.dims));
    v_.push_back(UploadF32(std::vector<double>(p.data.size(), 0.0), s.dims));
  }

  // Logits, loss and gradients of the fixed weights.
  std::vector<double> logits;
  const double loss = Step(&logits);
  const double want_loss = fixture_.at("loss").data[0];
  std::printf("%s: loss %.9f, reference %.9f, relative error %.3g\n",
              mode.name, loss, want_loss, RelativeError(loss, want_loss));
  EXPECT_LT(RelativeError(loss, want_loss), mode.loss_tol) << "loss";
  const double logits_err = MaxRelative(logits, fixture_.at("logits").data);
  std::printf("%s: logits max error / max |logit| %.3g\n", mode.name,
              logits_err);
  EXPECT_LT(logits_err, mode.logits_tol) << "logits";
  double worst = 0;
  for (size_t k = 0; k < specs_.size(); ++k) {
    std::vector<double> g = Download(grads_[k]);
    for (double& x : g) x /= mode.loss_scale;
    const double err = RelativeL2(g, fixture_.at("grad/" + specs_[k].name).data);
    worst = std::max(worst, err);
    EXPECT_LT(err, mode.grad_tol) << "gradient of " << specs_[k].name;
  }
  std::printf("%s: worst gradient relative L2 error %.3g\n", mode.name, worst);

  // 10 AdamW steps on the same batch; the first loss is the one above.
  const std::vector<double>& adamw = fixture_.at("adamw").data;
  const std::vector<double>& want = fixture_.at("step_losses").data;
  MNT_Tensor no_found_inf = sdk::MakeTensor(nullptr, MNT_DTYPE_F32, {0});
  MNT_Tensor inv_scale =
      UploadF32({1.0 / static_cast<double>(mode.loss_scale)}, {1});
  double worst_step = RelativeError(loss, want[0]);
  for (size_t step = 1; step < want.size(); ++step) {
    for (size_t k = 0; k < specs_.size(); ++k) {
      MNT_AdamWParams p{MNT_AdamWParams_STRUCT_SIZE,
                        static_cast<float>(adamw[0]),
                        static_cast<float>(adamw[1]),
                        static_cast<float>(adamw[2]),
                        static_cast<float>(adamw[3]),
                        specs_[k].weight_decay ? static_cast<float>(adamw[4])
                                               : 0.0f,
                        static_cast<int64_t>(step)};
      std::vector<MNT_Tensor> out{master_[k], m_[k], v_[k]};
      if (mixed) out.push_back(working_[k]);
      ASSERT_TRUE(client_.Run(MNT_OP_ADAMW_STEP,
                              {grads_[k], no_found_inf, inv_scale}, out, &p)
                      .ok());
    }
    const double l = Step();
    const double err = RelativeError(l, want[step]);
    worst_step = std::max(worst_step, err);
    EXPECT_LT(err, mode.steps_tol)
        << "loss after AdamW step " << step << ": " << l << " vs " << want[step];
  }
  std::printf("%s: 10-step losses worst relative error %.3g (reference %.6f "
              "-> %.6f)\n",
              mode.name, worst_step, want.front(), want.back());
}

INSTANTIATE_TEST_SUITE_P(
    AllPrecisions, ParityTest,
    ::testing::Values(
        Mode{"fp32", MNT_DTYPE_F32, MNT_COMPUTE_F32, 1.0f, 1e-5, 1e-5, 1e-5,
             1e-5},
        Mode{"tf32", MNT_DTYPE_F32, MNT_COMPUTE_TF32, 1.0f, 1e-3, 5e-3, 1e-2,
             5e-3},
        Mode{"bf16", MNT_DTYPE_BF16, MNT_COMPUTE_BF16, 1.0f, 1e-2, 5e-2, 8e-2,
             2e-2},
        Mode{"fp16", MNT_DTYPE_F16, MNT_COMPUTE_F16, 1024.0f, 2e-3, 1e-2,
             1e-2, 5e-3}),
    [](const ::testing::TestParamInfo<Mode>& info) {
      return std::string(info.param.name);
    });

}  // namespace
}  // namespace mnt::gpt2

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FIXTURE\n", argv[0]);
    return 2;
  }
  mnt::gpt2::g_fixture_path = argv[1];
  return RUN_ALL_TESTS();
}
