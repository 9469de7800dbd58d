// Conformance checks for model plugins, on the CPU reference backend, for
// every kind of data the ABI describes (MNT_DataKind): f32 feature vectors,
// f32 images [C, H, W] and i32 token ids with one target per token. A model
// must accept at least one kind, and exactly those it declares (ABI 1.12)
// when it declares any; every kind it accepts gets, in fp32, param specs,
// forward/backward against finite differences, the loss_multiplier/
// accumulate contract and a save/load round trip, then the optional
// behaviours it offers (the gradient hand-over, FP8 GEMMs), bf16 and fp16
// storage against its fp32 run, and gradient checkpointing where its
// options take it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/capabilities.h"
#include "plugins/sdk/data_kinds.h"
#include "plugins/sdk/fp8_slots.h"
#include "plugins/sdk/model_client.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"
#include "plugins/conformance/conformance.h"

namespace mnt::conformance {
namespace {

using sdk::Format;
using sdk::Status;

constexpr int64_t kBatch = 4;

// One kind of data, as MNT_DataSpec describes it to Model_Create.
struct DataKind {
  const char* name;
  MNT_DataKind abi_kind;  // what a model declares (ABI 1.12)
  MNT_DType input_dtype;
  std::vector<int64_t> input_dims;  // per example
  int64_t num_classes;              // classes, or the vocabulary of token ids
  int32_t targets_per_example;

  int64_t InputCount() const {
    int64_t n = 1;
    for (int64_t d : input_dims) n *= d;
    return n;
  }
  std::string Describe() const {
    std::string dims;
    for (int64_t d : input_dims) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    return Format("%s %s [%s], %lld classes, %d targets per example", name,
                  sdk::DTypeName(input_dtype), dims.c_str(),
                  (long long)num_classes, targets_per_example);
  }
};

// Small enough for finite differences on every model in the tree.
const std::vector<DataKind>& DataKinds() {
  static const std::vector<DataKind> kinds = {
      {"features", MNT_DATA_KIND_FEATURES, MNT_DTYPE_F32, {6}, 5, 1},
      {"images", MNT_DATA_KIND_IMAGES, MNT_DTYPE_F32, {2, 5, 5}, 4, 1},
      {"token_ids", MNT_DATA_KIND_TOKENS, MNT_DTYPE_I32, {8}, 16, 8},
  };
  return kinds;
}

struct Spec {
  std::string name;
  std::vector<int64_t> dims;
  int64_t count = 1;
};

// One model instance on a CPU reference backend instance, with fp32
// parameters, gradients, a random batch and a loss scalar on the device.
class ModelHarness {
 public:
  ModelHarness(const MNT_Plugin_Api* model_plugin, std::string options,
               DataKind kind)
      : plugin_(model_plugin), options_(std::move(options)), kind_(std::move(kind)) {}
  ~ModelHarness() {
    // The model and the device buffers go before the backend instance that
    // owns their memory.
    model_.Reset();
    for (Owned& o : fp8_) o.clear();
    params_.clear();
    grads_.clear();
    typed_params_.clear();
    typed_grads_.clear();
    inputs_.clear();
    targets_.clear();
    loss_.clear();
    correct_.clear();
  }

  Status Init() {
    MNT_RETURN_IF_ERROR(sdk::BackendInstance::Create(cpu_, "", &backend_));
    client_ = backend_->client();
    return CreateModel(options_, &model_);
  }

  // fp8: FP8 GEMMs (ABI 1.10; E4M3 forward, E5M2 gradients). `dtype`: the
  // storage of weights, gradients and activations, with GEMMs computing in
  // it (F32, BF16 or F16, as the fp32, bf16 and fp16 precisions give it).
  Status CreateModel(const std::string& options, sdk::ModelClient* out, bool fp8 = false,
                     MNT_DType dtype = MNT_DTYPE_F32) {
    sdk::ModelSetup setup;
    if (fp8) {
      setup.fp8.forward = MNT_DTYPE_F8_E4M3;
      setup.fp8.backward = MNT_DTYPE_F8_E5M2;
    }
    setup.options = options;
    setup.backend = &backend_->client();
    setup.data_spec.input_dtype = kind_.input_dtype;
    setup.data_spec.input_rank = static_cast<int32_t>(kind_.input_dims.size());
    for (size_t i = 0; i < kind_.input_dims.size(); ++i)
      setup.data_spec.input_dims[i] = kind_.input_dims[i];
    setup.data_spec.num_classes = kind_.num_classes;
    setup.data_spec.targets_per_example = kind_.targets_per_example;
    setup.precision.weight_dtype = dtype;
    setup.precision.gradient_dtype = dtype;
    setup.precision.activation_dtype = dtype;
    setup.precision.matmul_compute = dtype == MNT_DTYPE_BF16  ? MNT_COMPUTE_BF16
                                     : dtype == MNT_DTYPE_F16 ? MNT_COMPUTE_F16
                                                              : MNT_COMPUTE_F32;
    setup.max_batch_size = kBatch;
    return sdk::ModelClient::Create(plugin_, setup, out);
  }

  // The model is destroyed and `fresh` takes its place (save/load).
  void ReplaceModel(sdk::ModelClient fresh) { model_ = std::move(fresh); }
  void DestroyModel() { model_.Reset(); }

  // Reads the specs and allocates params, grads, batch and scalars.
  Status Specs(std::string* problems) {
    int64_t num_params = 0;
    MNT_RETURN_IF_ERROR(model_.ParamCount(&num_params));
    if (num_params < 1 || num_params > 10000) {
      *problems = Format("num_params=%lld", (long long)num_params);
      return Status::Ok();
    }
    std::set<std::string> names;
    for (int64_t i = 0; i < num_params; ++i) {
      sdk::ParamSpec s;
      MNT_RETURN_IF_ERROR(model_.GetParamSpec(i, &s));
      Spec spec;
      spec.name = s.name ? s.name : "";
      if (spec.name.empty() || !names.insert(spec.name).second) {
        *problems += Format("param %lld: empty or duplicate name '%s'; ",
                            (long long)i, spec.name.c_str());
      }
      if (s.rank < 1 || s.rank > MNT_MAX_RANK) {
        *problems += Format("%s: rank %d; ", spec.name.c_str(), s.rank);
        continue;
      }
      for (int64_t d : s.dims) {
        if (d < 1) *problems += spec.name + ": a dim < 1; ";
        spec.dims.push_back(d);
        spec.count *= d;
      }
      if (s.init < MNT_PARAM_INIT_ZEROS || s.init > MNT_PARAM_INIT_UNIFORM ||
          !std::isfinite(s.init_scale) || s.init_scale < 0) {
        *problems += spec.name + ": invalid init or init_scale; ";
      }
      specs_.push_back(spec);
    }
    sdk::ParamSpec out_of_range;
    if (model_.GetParamSpec(num_params, &out_of_range).ok()) {
      *problems += "GetParamSpec(index = count) succeeded; ";
    }
    if (!problems->empty()) return Status::Ok();
    for (const Spec& s : specs_) {
      params_.push_back(Buffer(s.count * 4, MNT_MEMORY_WEIGHTS));
      grads_.push_back(Buffer(s.count * 4, MNT_MEMORY_GRADIENTS));
      param_views_.push_back(Tensor(params_.back(), MNT_DTYPE_F32, s.dims));
      grad_views_.push_back(Tensor(grads_.back(), MNT_DTYPE_F32, s.dims));
    }
    inputs_ = Buffer(kBatch * kind_.InputCount() * 4, MNT_MEMORY_DATA);
    targets_ = Buffer(kBatch * kind_.targets_per_example * 4, MNT_MEMORY_DATA);
    loss_ = Buffer(4, MNT_MEMORY_DATA);
    correct_ = Buffer(4, MNT_MEMORY_DATA);
    return status_;
  }

  Status Randomize(std::mt19937_64* rng) {
    std::normal_distribution<double> normal(0.0, 0.5);
    host_params_.clear();
    for (size_t i = 0; i < specs_.size(); ++i) {
      std::vector<float> v(specs_[i].count);
      for (float& x : v) x = static_cast<float>(normal(*rng));
      host_params_.push_back(v);
    }
    MNT_RETURN_IF_ERROR(UploadParams(host_params_));
    const auto random_class = [&] {
      return static_cast<int32_t>((*rng)() % static_cast<uint64_t>(kind_.num_classes));
    };
    if (kind_.input_dtype == MNT_DTYPE_I32) {  // token ids
      std::vector<int32_t> ids(kBatch * kind_.InputCount());
      for (int32_t& v : ids) v = random_class();
      MNT_RETURN_IF_ERROR(client_.ToDevice(inputs_[0]->data(), ids.data(), ids.size() * 4));
    } else {  // features or pixels
      std::vector<float> x(kBatch * kind_.InputCount());
      for (float& v : x) v = static_cast<float>(normal(*rng) * 2.0);
      MNT_RETURN_IF_ERROR(client_.ToDevice(inputs_[0]->data(), x.data(), x.size() * 4));
    }
    std::vector<int32_t> t(kBatch * kind_.targets_per_example);
    for (int32_t& v : t) v = random_class();
    return client_.ToDevice(targets_[0]->data(), t.data(), t.size() * 4);
  }

  // fp32 values; in a 16-bit storage dtype the backend's CAST rounds them.
  Status UploadParams(const std::vector<std::vector<float>>& values) {
    for (size_t i = 0; i < specs_.size(); ++i) {
      MNT_RETURN_IF_ERROR(client_.ToDevice(params_[i][0]->data(), values[i].data(),
                                           values[i].size() * 4));
      if (dtype_ != MNT_DTYPE_F32) {
        MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_CAST,
                                        {Tensor(params_[i], MNT_DTYPE_F32, specs_[i].dims)},
                                        {param_views_[i]}));
      }
    }
    return Status::Ok();
  }

  // The model created again with `dtype` storage and `options`, with
  // parameters `values` (rounded to dtype by the backend's CAST).
  Status SwitchStorage(MNT_DType dtype, const std::string& options,
                       const std::vector<std::vector<float>>& values) {
    sdk::ModelClient m;
    MNT_RETURN_IF_ERROR(CreateModel(options, &m, false, dtype));
    DestroyModel();
    ReplaceModel(std::move(m));
    dtype_ = dtype;
    param_views_.clear();
    grad_views_.clear();
    typed_params_.clear();
    typed_grads_.clear();
    for (size_t i = 0; i < specs_.size(); ++i) {
      if (dtype == MNT_DTYPE_F32) {
        param_views_.push_back(Tensor(params_[i], dtype, specs_[i].dims));
        grad_views_.push_back(Tensor(grads_[i], dtype, specs_[i].dims));
        continue;
      }
      const int64_t bytes = specs_[i].count * static_cast<int64_t>(sdk::DTypeSize(dtype));
      typed_params_.push_back(Buffer(bytes, MNT_MEMORY_WEIGHTS));
      typed_grads_.push_back(Buffer(bytes, MNT_MEMORY_GRADIENTS));
      param_views_.push_back(Tensor(typed_params_.back(), dtype, specs_[i].dims));
      grad_views_.push_back(Tensor(typed_grads_.back(), dtype, specs_[i].dims));
    }
    MNT_RETURN_IF_ERROR(status_);
    return UploadParams(values);
  }
  MNT_DType dtype() const { return dtype_; }

  Status DownloadParams(std::vector<std::vector<float>>* out) const {
    out->assign(specs_.size(), {});
    for (size_t i = 0; i < specs_.size(); ++i) {
      (*out)[i].resize(specs_[i].count);
      MNT_RETURN_IF_ERROR(client_.ToHost((*out)[i].data(), params_[i][0]->data(),
                                         (*out)[i].size() * 4));
    }
    return Status::Ok();
  }

  // As fp32 (a 16-bit gradient widened exactly by the backend's CAST).
  Status DownloadGrads(std::vector<std::vector<float>>* out) const {
    out->assign(specs_.size(), {});
    for (size_t i = 0; i < specs_.size(); ++i) {
      if (dtype_ != MNT_DTYPE_F32) {
        MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_CAST, {grad_views_[i]},
                                        {Tensor(grads_[i], MNT_DTYPE_F32, specs_[i].dims)}));
      }
      (*out)[i].resize(specs_[i].count);
      MNT_RETURN_IF_ERROR(client_.ToHost((*out)[i].data(), grads_[i][0]->data(),
                                         (*out)[i].size() * 4));
    }
    return Status::Ok();
  }

  Status Forward(bool training, float* loss, float* correct = nullptr) {
    std::vector<int64_t> in_dims = {kBatch};
    in_dims.insert(in_dims.end(), kind_.input_dims.begin(), kind_.input_dims.end());
    std::vector<int64_t> tg_dims = {kBatch};
    if (kind_.targets_per_example > 1) tg_dims.push_back(kind_.targets_per_example);
    const MNT_Tensor in = sdk::MakeTensor(inputs_[0]->data(), kind_.input_dtype,
                                          static_cast<int32_t>(in_dims.size()),
                                          in_dims.data());
    const MNT_Tensor tg = sdk::MakeTensor(targets_[0]->data(), MNT_DTYPE_I32,
                                          static_cast<int32_t>(tg_dims.size()),
                                          tg_dims.data());
    const MNT_Tensor lo = sdk::MakeTensor(loss_[0]->data(), MNT_DTYPE_F32, {1});
    const MNT_Tensor co = sdk::MakeTensor(correct_[0]->data(), MNT_DTYPE_F32, {1});
    MNT_RETURN_IF_ERROR(model_.Forward(param_views_, in, tg, training, lo,
                                       correct ? &co : nullptr));
    MNT_RETURN_IF_ERROR(client_.Synchronize());
    MNT_RETURN_IF_ERROR(client_.ToHost(loss, loss_[0]->data(), 4));
    if (correct) MNT_RETURN_IF_ERROR(client_.ToHost(correct, correct_[0]->data(), 4));
    return Status::Ok();
  }

  Status Backward(float multiplier, bool accumulate) {
    MNT_RETURN_IF_ERROR(model_.Backward(param_views_, grad_views_, multiplier,
                                        accumulate));
    return client_.Synchronize();
  }

  // The same with the multiplier as an F32 [1] device tensor (ABI 1.6) and
  // a NaN host float, which the model must ignore.
  Status BackwardWithDeviceMultiplier(float multiplier, bool accumulate) {
    sdk::DeviceBuffer m;
    MNT_RETURN_IF_ERROR(client_.Allocate(sizeof(float), MNT_MEMORY_DATA, &m));
    MNT_RETURN_IF_ERROR(client_.ToDevice(m.data(), &multiplier, sizeof(float)));
    const int64_t one = 1;
    const MNT_Tensor t = sdk::MakeTensor(m.data(), MNT_DTYPE_F32, 1, &one);
    MNT_RETURN_IF_ERROR(model_.Backward(param_views_, grad_views_,
                                        std::numeric_limits<float>::quiet_NaN(), &t,
                                        accumulate));
    return client_.Synchronize();
  }

  // Fills every gradient buffer with `value` (so a region read before the
  // model writes it shows).
  Status FillGrads(float value) {
    for (size_t i = 0; i < specs_.size(); ++i) {
      const std::vector<float> v(static_cast<size_t>(specs_[i].count), value);
      MNT_RETURN_IF_ERROR(client_.ToDevice(grads_[i][0]->data(), v.data(), v.size() * 4));
    }
    return Status::Ok();
  }

  // ABI 1.11: the callback the next Backwards hand over (NULL: none).
  void UseGradientReady(MNT_GradientReadyFn* fn, void* user_data) {
    model_.UseGradientReady(fn, user_data);
  }

  // Elements [first, first + count) of gradient `param` as they are now
  // (the CPU backend has run everything issued so far).
  Status ReadGradSlice(int64_t param, int64_t first, int64_t count, float* out) const {
    return client_.ToHost(out, static_cast<const char*>(grads_[param][0]->data()) + first * 4,
                          static_cast<size_t>(count) * 4);
  }

  // The FP8 scaling slots of these parameters (plugins/sdk/fp8_slots.h).
  int64_t Fp8Slots() const {
    std::vector<std::vector<int64_t>> dims;
    for (const Spec& sp : specs_) dims.push_back(sp.dims);
    return sdk::MakeFp8SlotLayout(dims).total;
  }
  // Uploads the three F32 [3, S] FP8 tensors every later call passes (a
  // model created with fp8 needs them); `values` scales, inverses, amax.
  Status UseFp8(const std::vector<std::vector<float>>& values) {
    const std::vector<int64_t> dims = {3, Fp8Slots()};
    for (int k = 0; k < 3; ++k) {
      fp8_[k] = Buffer(static_cast<int64_t>(values[k].size()) * 4, MNT_MEMORY_DATA);
      MNT_RETURN_IF_ERROR(status_);
      MNT_RETURN_IF_ERROR(
          client_.ToDevice(fp8_[k][0]->data(), values[k].data(), values[k].size() * 4));
      fp8_views_[k] = Tensor(fp8_[k], MNT_DTYPE_F32, dims);
    }
    model_.UseFp8Tensors({&fp8_views_[0], &fp8_views_[1], &fp8_views_[2]});
    return Status::Ok();
  }
  // Reads one of them back (0 scales, 1 inverses, 2 amax).
  Status ReadFp8(int k, std::vector<float>* out) const {
    out->resize(static_cast<size_t>(3 * Fp8Slots()));
    return client_.ToHost(out->data(), fp8_[k][0]->data(), out->size() * 4);
  }

  const std::vector<Spec>& specs() const { return specs_; }
  const std::vector<std::vector<float>>& host_params() const { return host_params_; }
  const MNT_Plugin_Api* plugin() const { return plugin_; }
  const sdk::BackendClient& client() const { return client_; }
  const DataKind& kind() const { return kind_; }
  int64_t targets_per_batch() const { return kBatch * kind_.targets_per_example; }

 private:
  using Owned = std::vector<std::unique_ptr<sdk::DeviceBuffer>>;
  Owned Buffer(int64_t bytes, MNT_MemoryCategory category) {
    Owned o;
    o.push_back(std::make_unique<sdk::DeviceBuffer>());
    Status s = client_.Allocate(static_cast<size_t>(bytes), category, o.back().get());
    if (!s.ok()) status_ = s;
    return o;
  }
  static MNT_Tensor Tensor(const Owned& b, MNT_DType dtype,
                           const std::vector<int64_t>& dims) {
    return sdk::MakeTensor(b[0]->data(), dtype, static_cast<int32_t>(dims.size()),
                           dims.data());
  }

  const MNT_Plugin_Api* cpu_ = cpu::CpuBackendPluginApi();
  const MNT_Plugin_Api* plugin_;
  std::string options_;
  DataKind kind_;
  std::unique_ptr<sdk::BackendInstance> backend_;
  sdk::BackendClient client_;
  sdk::ModelClient model_;
  Status status_;
  std::vector<Spec> specs_;
  std::vector<Owned> params_, grads_;  // fp32; the model's own in fp32 storage
  MNT_DType dtype_ = MNT_DTYPE_F32;     // the model's storage (SwitchStorage)
  std::vector<Owned> typed_params_, typed_grads_;  // 16-bit storage
  Owned inputs_, targets_, loss_, correct_;
  std::vector<MNT_Tensor> param_views_, grad_views_;
  std::vector<std::vector<float>> host_params_;
  Owned fp8_[3];
  MNT_Tensor fp8_views_[3] = {};
};

// The loss a model's Backward differentiates (the training-mode loss) at
// parameter coordinate (i, j) moved by `delta`.
class CoordinateLoss {
 public:
  CoordinateLoss(ModelHarness* h, size_t i, size_t j)
      : h_(h), i_(i), j_(j), p_(h->host_params()) {}
  Status At(double delta, double* out) {
    p_[i_][j_] = static_cast<float>(h_->host_params()[i_][j_] + delta);
    MNT_RETURN_IF_ERROR(h_->UploadParams(p_));
    float l = 0;
    MNT_RETURN_IF_ERROR(h_->Forward(true, &l));
    *out = l;
    return Status::Ok();
  }

 private:
  ModelHarness* h_;
  size_t i_, j_;
  std::vector<std::vector<float>> p_;
};

enum class Verdict { kMatches, kKink, kMismatch };

// Compares the backward gradient `g` of one coordinate with finite
// differences of the fp32 loss (in float64). Central differences at steps
// 1e-2 down to 1e-2 / 32: the gradient matches if it agrees with one of them
// within tol = 2e-3 + 2e-2 |fd| + 4 ulp(loss) / step (the last term: the fp32
// loss is rounded at both ends; ~1e-3 at the smallest step for a loss
// near 2). A piecewise-smooth loss (ReLU; a bias shared by the batch meets
// many kinks) may have a kink inside an interval, which spoils that central
// difference; a smaller step shrinks the interval until the kink is outside
// it. A kink closer to the point than the step shows as one-sided slopes that
// disagree (|right - left| > tol / 2); the backward pass must then equal one
// of them (the side its subgradient picks). A wrong gradient agrees with
// none: every estimate is within rounding of the true slope on a side, and a
// gradient off by more than tol matches neither side.
Verdict CompareWithFiniteDifferences(CoordinateLoss* f, double g, double* fd_out,
                                     Status* s) {
  double l0 = 0;
  *s = f->At(0, &l0);
  if (!s->ok()) return Verdict::kMismatch;
  const double ulp = std::abs(l0) * 0x1p-23;
  for (int halvings = 0; halvings <= 5; ++halvings) {
    const double step = std::ldexp(1e-2, -halvings);
    double lp = 0, lm = 0;
    *s = f->At(step, &lp);
    if (s->ok()) *s = f->At(-step, &lm);
    if (!s->ok()) return Verdict::kMismatch;
    const double fd = (lp - lm) / (2 * step);
    const double tol = 2e-3 + 2e-2 * std::abs(fd) + 4 * ulp / step;
    if (halvings == 0) *fd_out = fd;
    if (std::abs(g - fd) <= tol) return Verdict::kMatches;
    const double right = (lp - l0) / step, left = (l0 - lm) / step;
    if (std::abs(right - left) > tol / 2 &&
        (std::abs(g - right) <= tol || std::abs(g - left) <= tol)) {
      return Verdict::kKink;
    }
  }
  return Verdict::kMismatch;
}

// Every check on one kind of data the model accepted (h is initialised).
void CheckModelOnData(ModelHarness& h, const std::string& options, uint64_t seed,
                      const std::string& n, Report* r) {
  std::string problems;
  Status s = h.Specs(&problems);
  if (!s.ok()) problems = s.message();
  r->Check(n + "param_specs", problems);
  if (!problems.empty()) return;

  s = h.Backward(1.0f, false);
  r->Check(n + "backward_before_forward_is_an_error",
           s.ok() ? "Backward without a training Forward succeeded" : "");

  std::mt19937_64 rng(seed);
  s = h.Randomize(&rng);
  // Evaluation and training forwards; both are functions of the parameters
  // and the batch (a model may evaluate differently, e.g. batch norm on its
  // running statistics), so repeating one gives the same bits.
  float loss = 0, loss_again = 0, eval_loss = 0, eval_again = 0, correct = -1;
  if (s.ok()) s = h.Forward(false, &eval_loss, &correct);
  if (s.ok()) s = h.Forward(false, &eval_again);
  if (s.ok()) s = h.Forward(true, &loss_again);
  if (s.ok()) s = h.Forward(true, &loss);
  {
    std::string why = s.message();
    const int64_t most = h.targets_per_batch();
    if (why.empty() && (!std::isfinite(loss) || loss < 0))
      why = Format("training loss %g is not a finite non-negative number", loss);
    else if (why.empty() && (!std::isfinite(eval_loss) || eval_loss < 0))
      why = Format("evaluation loss %g is not a finite non-negative number", eval_loss);
    else if (why.empty() && (loss != loss_again || eval_loss != eval_again))
      why = Format("a repeated forward changed the loss (training %.9g, %.9g; "
                   "evaluation %.9g, %.9g)", loss_again, loss, eval_loss, eval_again);
    else if (why.empty() && (correct < 0 || correct > most || correct != std::floor(correct)))
      why = Format("correct_out %g is not a count in [0, %lld]", correct, (long long)most);
    r->Check(n + "forward", why);
    if (!why.empty()) return;
  }

  std::vector<std::vector<float>> grads, grads4, grads_acc;
  s = h.Backward(1.0f, false);
  if (s.ok()) s = h.DownloadGrads(&grads);
  if (!s.ok()) {
    r->Fail(n + "backward", s.message());
    return;
  }
  {
    std::string why;
    int checked = 0, kinks = 0;
    // Up to 12 coordinates per parameter, about 96 in all (at least 3 each).
    const int per_param = std::clamp(96 / static_cast<int>(grads.size()), 3, 12);
    for (size_t i = 0; i < grads.size() && why.empty(); ++i) {
      for (int k = 0; k < per_param && why.empty(); ++k) {
        const size_t j = rng() % grads[i].size();
        CoordinateLoss f(&h, i, j);
        double fd = 0;
        const double g = grads[i][j];
        const Verdict v = std::isfinite(g) ? CompareWithFiniteDifferences(&f, g, &fd, &s)
                                           : Verdict::kMismatch;
        if (!s.ok()) {
          why = s.message();
        } else if (v == Verdict::kKink) {
          ++kinks;
        } else if (v == Verdict::kMismatch) {
          why = Format("d loss / d %s[%zu]: backward %.6g, finite difference %.6g",
                       h.specs()[i].name.c_str(), j, g, fd);
        } else {
          ++checked;
        }
      }
    }
    if (why.empty() && checked < 3 * kinks)
      why = Format("only %d coordinates checkable (%d kinks)", checked, kinks);
    // Restore the unperturbed parameters whatever happened, so the checks
    // below start from the point `grads` was taken at.
    const Status restored = h.UploadParams(h.host_params());
    if (why.empty() && !restored.ok()) why = restored.message();
    r->Check(n + Format("backward_vs_finite_differences (%d coordinates)", checked), why);
  }
  {  // loss_multiplier scales gradients; accumulate adds to them.
    std::string why;
    s = h.Forward(true, &loss);
    if (s.ok()) s = h.Backward(4.0f, false);
    if (s.ok()) s = h.DownloadGrads(&grads4);
    if (s.ok()) s = h.Backward(1.0f, true);
    if (s.ok()) s = h.DownloadGrads(&grads_acc);
    if (!s.ok()) why = s.message();
    for (size_t i = 0; i < grads.size() && why.empty(); ++i) {
      // An element summed from contributions that nearly cancel (a tied
      // embedding's classifier and lookup parts) is exact only to fp32
      // rounding of those parts: allow 1e-6 of the tensor's largest
      // gradient besides 1e-5 of the element.
      double largest = 0;
      for (float g : grads[i]) largest = std::max(largest, std::abs(static_cast<double>(g)));
      const double floor = 1e-6 * 5 * largest + 1e-12;
      for (size_t j = 0; j < grads[i].size() && why.empty(); ++j) {
        const double g = grads[i][j];
        if (std::abs(grads4[i][j] - 4 * g) > 1e-5 * std::abs(4 * g) + floor)
          why = Format("%s[%zu]: multiplier 4 gave %.9g, expected %.9g",
                       h.specs()[i].name.c_str(), j, grads4[i][j], 4 * g);
        else if (std::abs(grads_acc[i][j] - 5 * g) > 1e-5 * std::abs(5 * g) + floor)
          why = Format("%s[%zu]: accumulate gave %.9g, expected %.9g",
                       h.specs()[i].name.c_str(), j, grads_acc[i][j], 5 * g);
      }
    }
    r->Check(n + "loss_multiplier_and_accumulate", why);
  }
  if (sdk::HasCapability(h.plugin(), MNT_CAPABILITY_MODEL_DEVICE_LOSS_MULTIPLIER)) {
    // ABI 1.6: the multiplier as a device tensor gives the same bits as the
    // float (a value that is no power of two, so a different rounding of
    // multiplier / batch would show).
    std::string why;
    const float m = 2.7182817f;
    std::vector<std::vector<float>> host, device;
    s = h.Forward(true, &loss);
    if (s.ok()) s = h.Backward(m, false);
    if (s.ok()) s = h.DownloadGrads(&host);
    if (s.ok()) s = h.Forward(true, &loss);
    if (s.ok()) s = h.BackwardWithDeviceMultiplier(m, false);
    if (s.ok()) s = h.DownloadGrads(&device);
    if (!s.ok()) why = s.message();
    for (size_t i = 0; i < host.size() && why.empty(); ++i) {
      if (std::memcmp(host[i].data(), device[i].data(), host[i].size() * sizeof(float)) != 0)
        why = Format("%s: gradients differ between loss_multiplier %.9g and the same "
                     "value as loss_multiplier_device", h.specs()[i].name.c_str(), m);
    }
    if (why.empty() && host.empty()) why = "no gradients";
    r->Check(n + "loss_multiplier_device_same_bits", why);
  }
  {  // Save/load: params read back through the backend, loaded into a fresh
     // model instance, give the identical training loss (the parameters are
     // all a checkpoint carries; evaluation-only state such as batch-norm
     // running statistics is not part of the contract).
    std::string why;
    std::vector<std::vector<float>> saved;
    float before = 0, after = 0;
    s = h.Forward(true, &before);
    if (s.ok()) s = h.DownloadParams(&saved);
    if (s.ok()) {
      h.DestroyModel();
      sdk::ModelClient fresh;
      s = h.CreateModel(options, &fresh);
      h.ReplaceModel(std::move(fresh));
    }
    if (s.ok()) s = h.UploadParams(saved);
    if (s.ok()) s = h.Forward(true, &after);
    if (!s.ok()) why = s.message();
    else if (before != after)
      why = Format("loss %.9g before, %.9g after the round trip", before, after);
    r->Check(n + "save_load_round_trip", why);
  }
}


// What one training Forward and Backward gave: the loss and the gradients
// (as fp32, divided by the loss multiplier).
struct PassResult {
  float loss = 0;
  std::vector<std::vector<float>> grads;
  int64_t activation_bytes = 0;  // the model's MNT_MEMORY_ACTIVATIONS, then
};

// Relative L2 distance of b's gradients from a's (1 when a is all zero and
// b is not; NaN when either holds a NaN or an inf, which never passes).
double RelativeL2(const std::vector<std::vector<float>>& a,
                  const std::vector<std::vector<float>>& b) {
  double err = 0, norm = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) {
      const double d = double(b[i][j]) - a[i][j];
      err += d * d;
      norm += double(a[i][j]) * a[i][j];
    }
  }
  if (!std::isfinite(err) || !std::isfinite(norm)) return std::nan("");
  if (norm == 0) return err == 0 ? 0 : 1;
  return std::sqrt(err / norm);
}

// The model in `dtype` storage with `options` on parameters `params`: one
// training Forward and Backward with loss multiplier `multiplier` (a loss
// scale: 16-bit gradients would underflow without one).
Status RunPass(ModelHarness& h, MNT_DType dtype, const std::string& options,
               const std::vector<std::vector<float>>& params, float multiplier,
               PassResult* out) {
  MNT_RETURN_IF_ERROR(h.SwitchStorage(dtype, options, params));
  MNT_RETURN_IF_ERROR(h.Forward(true, &out->loss));
  MNT_RETURN_IF_ERROR(h.Backward(multiplier, false));
  MNT_RETURN_IF_ERROR(h.DownloadGrads(&out->grads));
  for (auto& g : out->grads) {
    for (float& v : g) v /= multiplier;
  }
  int64_t peak = 0;
  return h.client().GetStats(MNT_MEMORY_ACTIVATIONS, &out->activation_bytes, &peak);
}

// The options with checkpointing=1 added, or "" when they set it already.
std::string WithCheckpointing(const std::string& options) {
  if (("," + options).find(",checkpointing=") != std::string::npos) return "";
  return options.empty() ? "checkpointing=1" : options + ",checkpointing=1";
}

// Every storage dtype a precision gives a model (fp32 and tf32: F32; bf16
// and fp8: BF16; fp16: F16) and, where the model's options take it,
// gradient checkpointing (the trainer's --gradient_checkpointing is the
// option checkpointing=1), each against the model's own fp32 run on the
// same batch and parameters (the harness's N(0, 0.5) scaled by 0.2, as the
// FP8 check): a training Forward's loss within a relative `loss_tol` and
// Backward's gradients within a relative L2 `grad_tol` of fp32's, with
// 16-bit storage and GEMMs (loss: bf16 1%, fp16 0.2%; gradients 0.4 for
// both, the FP8 check's bound). Measured over 40 seeds on the in-tree
// models and the examples: losses up to 0.18% (bf16) and 0.034% (fp16);
// gradients up to 0.006 for smooth models (GPT-2, resmlp) and up to 0.14
// for ReLU networks (the MLP, the CNN), where a rounding moves a
// pre-activation across the kink now and then. A wrong gradient (a missing
// loss multiplier, a mixed-up layer or dtype) is off by ~1 or more. A model
// that keeps more in fp32 stays within them; one that reads a tensor in the
// wrong dtype, or lets a 16-bit gradient underflow, does not
// does not (or its backend refuses the mix). And its activations
// (MNT_MEMORY_ACTIVATIONS) take at most 0.75 of fp32's bytes: the precision
// stores them in 16 bits (measured 0.50 to 0.53 in-tree, fp32 statistics
// beside them), a model that ignores activation_dtype keeps 1.0. fp16 runs
// with a loss multiplier of 1024, as loss scaling would.
// With checkpointing the gradients must also equal those of the same dtype
// without it (relative L2 1e-6: a recomputed forward issues the same ops on
// the same inputs). FP8 GEMMs have their own check (fp8_gemms).
void CheckStorageAndCheckpointing(ModelHarness& h, const std::string& options,
                                  const std::string& n, Report* r) {
  if (h.host_params().empty()) return;  // param_specs failed: nothing to run
  std::vector<std::vector<float>> params = h.host_params();
  for (auto& p : params) for (float& v : p) v *= 0.2f;
  PassResult ref;
  Status s = RunPass(h, MNT_DTYPE_F32, options, params, 1.0f, &ref);
  if (!s.ok()) {
    r->Fail(n + "storage/f32", s.message());
    return;
  }
  const std::string ckpt_options = WithCheckpointing(options);
  bool checkpointing = !ckpt_options.empty();
  if (checkpointing) {
    sdk::ModelClient probe;
    const Status c = h.CreateModel(ckpt_options, &probe);
    if (!c.ok()) {
      checkpointing = false;
      if (c.message().find("unknown key 'checkpointing'") != std::string::npos) {
        r->Skip(n + "checkpointing", "its options do not take checkpointing (" + c.message() + ")");
      } else {
        r->Fail(n + "checkpointing", "checkpointing=1 refused: " + c.message());
      }
    }
  }
  struct Case {
    MNT_DType dtype;
    float multiplier, loss_tol, grad_tol;
  };
  for (const Case& c : {Case{MNT_DTYPE_F32, 1.0f, 0.0f, 0.0f}, Case{MNT_DTYPE_BF16, 1.0f, 0.01f, 0.4f},
                        Case{MNT_DTYPE_F16, 1024.0f, 0.002f, 0.4f}}) {
    const std::string name = n + "storage/" + sdk::DTypeName(c.dtype);
    PassResult plain;
    if (c.dtype == MNT_DTYPE_F32) {
      plain = ref;
    } else {
      s = RunPass(h, c.dtype, options, params, c.multiplier, &plain);
      const double loss_err = std::abs(double(plain.loss) - ref.loss) / std::max(1e-6, double(std::abs(ref.loss)));
      const double grad_err = s.ok() ? RelativeL2(ref.grads, plain.grads) : 0;
      std::string why = s.message();
      if (why.empty() && !(loss_err <= c.loss_tol))
        why = Format("loss %.6g, fp32's %.6g: %.3g%% apart (at most %.3g%%)", plain.loss, ref.loss,
                     100 * loss_err, 100 * c.loss_tol);
      if (why.empty() && !(grad_err <= c.grad_tol))
        why = Format("gradients %.3g relative L2 from fp32's (at most %.3g)", grad_err, c.grad_tol);
      // The precision's promise: 16-bit activations, half the bytes (fp32
      // statistics beside them: at most 3/4 of fp32's).
      const double bytes = ref.activation_bytes > 0
                               ? double(plain.activation_bytes) / double(ref.activation_bytes)
                               : 0;
      if (why.empty() && !(bytes <= 0.75))
        why = Format("activations take %lld bytes, fp32's %lld (%.3gx; at most 0.75x: it keeps "
                     "them in fp32, not in precision.activation_dtype %s)",
                     (long long)plain.activation_bytes, (long long)ref.activation_bytes, bytes,
                     sdk::DTypeName(c.dtype));
      r->Check(name + Format(" (loss %.3g%% and gradient %.3g relative L2 from fp32's; "
                             "activations %.3gx fp32's)",
                             100 * loss_err, grad_err, bytes),
               why);
      if (!why.empty()) continue;
    }
    if (!checkpointing) continue;
    PassResult ckpt;
    s = RunPass(h, c.dtype, ckpt_options, params, c.multiplier, &ckpt);
    std::string why = s.message();
    double same = 0;
    if (why.empty()) {
      same = RelativeL2(plain.grads, ckpt.grads);
      if (ckpt.loss != plain.loss)
        why = Format("loss %.9g with checkpointing, %.9g without", ckpt.loss, plain.loss);
      else if (!(same <= 1e-6))
        why = Format("gradients %.3g relative L2 from those without checkpointing (at most 1e-6)",
                     same);
    }
    r->Check(n + "checkpointing/" + sdk::DTypeName(c.dtype) +
                 Format(" (gradients %.3g relative L2 from those without)", same),
             why);
  }
  // Back to the fp32 model and the harness's parameters.
  s = h.SwitchStorage(MNT_DTYPE_F32, options, h.host_params());
  if (!s.ok()) r->Fail(n + "storage/restore_fp32", s.message());
}

// What a conformance Backward's MNT_GradientReadyFn recorded: how often each
// element was reported and, per element, its value at the report (read at
// once: the CPU backend is synchronous, so the report's region holds what
// the ops issued so far wrote).
struct GradientReadyRecord {
  ModelHarness* h = nullptr;
  std::vector<std::vector<int>> times;
  std::vector<std::vector<float>> at_report;
  std::string why;  // the first bad report
  int64_t calls = 0;

  static void Callback(void* user_data, int64_t param, int64_t first, int64_t count) {
    auto* self = static_cast<GradientReadyRecord*>(user_data);
    ++self->calls;
    if (!self->why.empty()) return;
    const int64_t params = static_cast<int64_t>(self->times.size());
    if (param < 0 || param >= params) {
      self->why = Format("reported param %lld (there are %lld)", (long long)param,
                         (long long)params);
      return;
    }
    const std::string& name = self->h->specs()[param].name;
    const int64_t numel = static_cast<int64_t>(self->times[param].size());
    if (first < 0 || count < 1 || first > numel || count > numel - first) {
      self->why = Format("%s: reported elements [%lld, %lld + %lld) of %lld", name.c_str(),
                         (long long)first, (long long)first, (long long)count,
                         (long long)numel);
      return;
    }
    for (int64_t j = first; j < first + count; ++j) {
      if (++self->times[param][j] > 1) {
        self->why = Format("%s[%lld] reported twice (second time in [%lld, %lld + %lld))",
                           name.c_str(), (long long)j, (long long)first, (long long)first,
                           (long long)count);
        return;
      }
    }
    const Status s = self->h->ReadGradSlice(param, first, count,
                                            self->at_report[param].data() + first);
    if (!s.ok()) self->why = name + ": reading the reported slice: " + s.message();
  }
};

// ABI 1.11, for a model offering MNT_CAPABILITY_MODEL_GRADIENT_READY: a
// training Backward (overwriting gradients filled with a sentinel, then
// accumulating onto them) reports every element of every gradient exactly
// once, and each reported slice already holds its final value (bitwise)
// when reported. Without a callback nothing changes (same bits).
void CheckGradientReady(ModelHarness& h, const std::string& n, Report* r) {
  std::string why;
  std::vector<std::vector<float>> plain, final_grads;
  float loss = 0;
  Status s = h.Forward(true, &loss);
  if (s.ok()) s = h.Backward(1.0f, false);
  if (s.ok()) s = h.DownloadGrads(&plain);
  if (!s.ok()) why = s.message();
  int64_t calls = 0;
  for (const bool accumulate : {false, true}) {
    if (!why.empty()) break;
    const char* pass = accumulate ? "accumulating Backward" : "Backward";
    GradientReadyRecord rec;
    rec.h = &h;
    for (const Spec& sp : h.specs()) {
      rec.times.emplace_back(static_cast<size_t>(sp.count), 0);
      rec.at_report.emplace_back(static_cast<size_t>(sp.count), 0.0f);
    }
    s = h.Forward(true, &loss);
    // A sentinel no gradient has: a region reported before its first write
    // shows it.
    if (s.ok() && !accumulate) s = h.FillGrads(-1234.5f);
    if (s.ok()) {
      h.UseGradientReady(&GradientReadyRecord::Callback, &rec);
      s = h.Backward(1.0f, accumulate);
      h.UseGradientReady(nullptr, nullptr);
    }
    if (s.ok()) s = h.DownloadGrads(&final_grads);
    if (!s.ok()) {
      why = s.message();
      break;
    }
    calls += rec.calls;
    if (!rec.why.empty()) {
      why = Format("%s: %s", pass, rec.why.c_str());
      break;
    }
    for (size_t i = 0; i < rec.times.size() && why.empty(); ++i) {
      for (size_t j = 0; j < rec.times[i].size(); ++j) {
        if (rec.times[i][j] == 0) {
          why = Format("%s: %s[%zu] never reported", pass, h.specs()[i].name.c_str(), j);
          break;
        }
        if (std::memcmp(&rec.at_report[i][j], &final_grads[i][j], sizeof(float)) != 0) {
          why = Format("%s: %s[%zu] was %.9g when reported, %.9g after Backward (reported "
                       "before its last write)",
                       pass, h.specs()[i].name.c_str(), j, rec.at_report[i][j],
                       final_grads[i][j]);
          break;
        }
      }
    }
    if (!why.empty()) break;
    if (!accumulate) {
      for (size_t i = 0; i < plain.size() && why.empty(); ++i) {
        if (std::memcmp(plain[i].data(), final_grads[i].data(),
                        plain[i].size() * sizeof(float)) != 0)
          why = Format("%s: gradients differ with and without a gradient_ready callback",
                       h.specs()[i].name.c_str());
      }
    }
  }
  r->Check(n + Format("gradient_ready_every_element_once_after_last_write (%lld reports)",
                      (long long)calls),
           why);
}

// ABI 1.10, for a model offering MNT_CAPABILITY_MODEL_FP8_GEMMS: the same
// model created with FP8 GEMMs (E4M3 forward, E5M2 gradients) refuses calls
// without the scale tensors; with unit scales a training Forward and
// Backward write amax only into [3, S] entries of slots a GEMM uses, each
// finite, a used slot in all three rows, and the weight row exactly max |W|
// of that matrix; with scales from that amax (448/amax, 57344/amax) its
// loss is within 5% of the fp32 loss and its gradient within 0.4 relative
// L2 of fp32's (E4M3 keeps 3 mantissa bits, so each operand is off by up
// to 6.25%, E5M2 2 bits; measured up to 1.5% and 0.25, the MLP's three
// E5M2 layers the worst; a wrong scale, slot or transpose is off by ~100%).
// The fp32 model and the harness's parameters are restored afterwards.
void CheckFp8Gemms(ModelHarness& h, const std::string& options, const std::string& n,
                   Report* r) {
  std::string why;
  float ref_loss = 0, loss = 0;
  std::vector<std::vector<float>> ref_grads, grads;
  // Weights a fifth of the harness's N(0, 0.5): at that size random
  // logits are so large that FP8's few percent per operand move the loss
  // by more than any bound a broken GEMM would not also meet.
  std::vector<std::vector<float>> params = h.host_params();
  for (auto& p : params) for (float& v : p) v *= 0.2f;
  Status s = h.UploadParams(params);
  if (s.ok()) s = h.Forward(true, &ref_loss);
  if (s.ok()) s = h.Backward(1.0f, false);
  if (s.ok()) s = h.DownloadGrads(&ref_grads);
  sdk::ModelClient fp8;
  if (s.ok()) s = h.CreateModel(options, &fp8, /*fp8=*/true);
  if (s.ok()) {
    h.DestroyModel();
    h.ReplaceModel(std::move(fp8));
    if (h.Forward(true, &loss).ok()) why = "a Forward without fp8_scales/fp8_scale_invs/fp8_amax succeeded";
  }
  const int64_t S = h.Fp8Slots();
  const size_t n3 = static_cast<size_t>(3 * S);
  std::vector<float> amax;
  if (s.ok() && why.empty()) {
    s = h.UseFp8({std::vector<float>(n3, 1.0f), std::vector<float>(n3, 1.0f),
                  std::vector<float>(n3, -1.0f)});
    if (s.ok()) s = h.Forward(true, &loss);
    if (s.ok()) s = h.Backward(1.0f, false);
    if (s.ok()) s = h.ReadFp8(2, &amax);
  }
  if (!s.ok()) why = s.message();
  int used = 0;
  if (why.empty()) {
    // The weight row against max |W| of each slot's matrix.
    int64_t slot = 0;
    for (size_t i = 0; i < h.specs().size() && why.empty(); ++i) {
      const int64_t matrices = sdk::Fp8SlotsOfParam(h.specs()[i].dims);
      const size_t per = matrices > 0 ? h.host_params()[i].size() / matrices : 0;
      for (int64_t m = 0; m < matrices && why.empty(); ++m, ++slot) {
        const float in = amax[slot], w = amax[S + slot], dy = amax[2 * S + slot];
        for (float a : {in, w, dy}) {
          if (!(a == -1.0f || (std::isfinite(a) && a >= 0))) {
            why = Format("%s matrix %lld: amax %g (NaN, inf or negative)",
                         h.specs()[i].name.c_str(), (long long)m, a);
          }
        }
        if (w == -1.0f) {
          if (why.empty() && (in != -1.0f || dy != -1.0f))
            why = Format("%s matrix %lld: input/grad amax written but not the weight's",
                         h.specs()[i].name.c_str(), (long long)m);
          continue;
        }
        ++used;
        float want = 0;
        for (size_t k = 0; k < per; ++k) want = std::max(want, std::abs(params[i][m * per + k]));
        if (why.empty() && w != want)
          why = Format("%s matrix %lld: weight amax %.9g, max |W| is %.9g",
                       h.specs()[i].name.c_str(), (long long)m, w, want);
        if (why.empty() && (in == -1.0f || dy == -1.0f))
          why = Format("%s matrix %lld: weight amax written but not the input's and the "
                       "output gradient's", h.specs()[i].name.c_str(), (long long)m);
      }
    }
    if (why.empty() && used == 0) why = "no GEMM wrote an amax";
  }
  if (why.empty()) {
    std::vector<float> scales(n3, 1.0f), invs(n3, 1.0f);
    for (size_t i = 0; i < n3; ++i) {
      if (!(amax[i] > 0)) continue;
      scales[i] = (i >= 2 * static_cast<size_t>(S) ? 57344.0f : 448.0f) / amax[i];
      invs[i] = 1.0f / scales[i];
    }
    s = h.UseFp8({scales, invs, amax});
    if (s.ok()) s = h.Forward(true, &loss);
    if (s.ok()) s = h.Backward(1.0f, false);
    if (s.ok()) s = h.DownloadGrads(&grads);
    if (!s.ok()) why = s.message();
  }
  if (why.empty() && !(std::abs(loss - ref_loss) <= 0.05 * std::abs(ref_loss)))
    why = Format("scaled FP8 loss %.6g, fp32 loss %.6g (more than 5%% apart)", loss, ref_loss);
  double err = 0, norm = 0;
  for (size_t i = 0; i < grads.size() && why.empty(); ++i) {
    for (size_t j = 0; j < grads[i].size(); ++j) {
      const double d = double(grads[i][j]) - ref_grads[i][j];
      err += d * d;
      norm += double(ref_grads[i][j]) * ref_grads[i][j];
    }
  }
  if (why.empty() && !(std::sqrt(err) <= 0.4 * std::sqrt(norm)))
    why = Format("scaled FP8 gradient %.3g relative L2 from fp32's (more than 0.4)",
                 std::sqrt(err / std::max(norm, 1e-300)));
  // Back to the fp32 model and the harness's parameters.
  sdk::ModelClient plain;
  Status back = h.CreateModel(options, &plain);
  if (back.ok()) {
    h.DestroyModel();
    h.ReplaceModel(std::move(plain));
    back = h.UploadParams(h.host_params());
  }
  if (!back.ok() && why.empty()) why = back.message();
  r->Check(n + Format("fp8_gemms (%d matrices scaled; loss %.3g%% and gradient %.3g "
                      "relative L2 from fp32's)",
                      used, 100 * std::abs(loss - ref_loss) / std::abs(ref_loss),
                      std::sqrt(err / std::max(norm, 1e-300))),
           why);
}

}  // namespace

void CheckModelPlugin(const MNT_Plugin_Api* plugin, const std::string& options,
                      uint64_t seed, Report* r) {
  const std::string n = "model/";
  int accepted = 0;
  std::string refusals;
  // ABI 1.12: a model that declares its data takes exactly what it declares
  // (the trainer refuses the rest before Model_Create).
  const std::vector<MNT_DataKind> declared = sdk::DeclaredDataKinds(plugin);
  for (const DataKind& kind : DataKinds()) {
    ModelHarness h(plugin, options, kind);
    const std::string k = n + kind.name + "/";
    const bool declares = sdk::Takes(declared, kind.abi_kind);
    Status s = h.Init();
    if (!s.ok()) {
      // A model takes the kinds of data it is made for; its refusal of the
      // others must be one line, like every error.
      const bool one_line = s.message().find('\n') == std::string::npos;
      if (!one_line) r->Fail(k + "create", "refusal message not one line");
      else if (declares)
        r->Fail(k + "create", Format("declares %s (model_data extension) but refused: %s",
                                     sdk::DataKindName(kind.abi_kind), s.message().c_str()));
      else r->Skip(k + "create", "refused: " + s.message());
      refusals += Format("%s%s: %s", refusals.empty() ? "" : "; ", kind.name,
                         s.message().c_str());
      continue;
    }
    if (!declared.empty() && !declares) {
      r->Fail(k + "create", Format("accepted %s, which its model_data extension does not "
                                   "declare (the trainer would refuse such data)",
                                   sdk::DataKindName(kind.abi_kind)));
      continue;
    }
    r->Pass(k + "create (" + kind.Describe() + ")");
    if (++accepted == 1) {  // options and Destroy, once
      sdk::ModelClient m;  // destroyed at the end of the block if created
      s = h.CreateModel("no_such_option=1", &m);
      r->Check(n + "rejects_unknown_option",
               s.ok() ? "'no_such_option=1' was accepted"
               : s.message().find('\n') != std::string::npos ? "message not one line"
                                                             : "");
      MNT_Model_Destroy_Args d{};
      d.struct_size = MNT_Model_Destroy_Args_STRUCT_SIZE;
      r->Check(n + "destroy_null_is_noop",
               sdk::StatusFromPluginError(plugin, plugin->model->Model_Destroy(&d))
                   .message());
    }
    CheckModelOnData(h, options, seed, k, r);
    if (sdk::HasCapability(plugin, MNT_CAPABILITY_MODEL_GRADIENT_READY)) CheckGradientReady(h, k, r);
    if (sdk::HasCapability(plugin, MNT_CAPABILITY_MODEL_FP8_GEMMS)) CheckFp8Gemms(h, options, k, r);
    CheckStorageAndCheckpointing(h, options, k, r);
  }
  if (accepted == 0) {
    r->Fail(n + "create", Format("Model_Create (fp32, batch %lld) accepted none of "
                                 "the kinds of data: %s",
                                 (long long)kBatch, refusals.c_str()));
  }
}

}  // namespace mnt::conformance
