// Conformance checks for model plugins, on the CPU reference backend in fp32:
// param specs, forward/backward against central finite differences, the
// loss_multiplier/accumulate contract and a save/load round trip.
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/backend_instance.h"
#include "plugins/sdk/model_client.h"
#include "plugins/sdk/plugin_error.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"
#include "tools/plugin_conformance/conformance.h"

namespace mnt::conformance {
namespace {

using sdk::Format;
using sdk::Status;

constexpr int64_t kBatch = 4;
constexpr int64_t kFeatures = 6;
constexpr int64_t kClasses = 5;

struct Spec {
  std::string name;
  std::vector<int64_t> dims;
  int64_t count = 1;
};

// One model instance on a CPU reference backend instance, with fp32
// parameters, gradients, a random batch and a loss scalar on the device.
class ModelHarness {
 public:
  ModelHarness(const MNT_Plugin_Api* model_plugin, std::string options)
      : plugin_(model_plugin), options_(std::move(options)) {}
  ~ModelHarness() {
    // The model and the device buffers go before the backend instance that
    // owns their memory.
    model_.Reset();
    params_.clear();
    grads_.clear();
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

  Status CreateModel(const std::string& options, sdk::ModelClient* out) {
    sdk::ModelSetup setup;
    setup.options = options;
    setup.backend = &backend_->client();
    setup.data_spec.input_dtype = MNT_DTYPE_F32;
    setup.data_spec.input_rank = 1;
    setup.data_spec.input_dims[0] = kFeatures;
    setup.data_spec.num_classes = kClasses;
    setup.data_spec.targets_per_example = 1;
    setup.precision.weight_dtype = MNT_DTYPE_F32;
    setup.precision.gradient_dtype = MNT_DTYPE_F32;
    setup.precision.activation_dtype = MNT_DTYPE_F32;
    setup.precision.matmul_compute = MNT_COMPUTE_F32;
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
    inputs_ = Buffer(kBatch * kFeatures * 4, MNT_MEMORY_DATA);
    targets_ = Buffer(kBatch * 4, MNT_MEMORY_DATA);
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
    std::vector<float> x(kBatch * kFeatures);
    for (float& v : x) v = static_cast<float>(normal(*rng) * 2.0);
    std::vector<int32_t> t(kBatch);
    for (int32_t& v : t) v = static_cast<int32_t>((*rng)() % kClasses);
    MNT_RETURN_IF_ERROR(client_.ToDevice(inputs_[0]->data(), x.data(), x.size() * 4));
    return client_.ToDevice(targets_[0]->data(), t.data(), t.size() * 4);
  }

  Status UploadParams(const std::vector<std::vector<float>>& values) {
    for (size_t i = 0; i < specs_.size(); ++i) {
      MNT_RETURN_IF_ERROR(client_.ToDevice(params_[i][0]->data(), values[i].data(),
                                           values[i].size() * 4));
    }
    return Status::Ok();
  }

  Status DownloadParams(std::vector<std::vector<float>>* out) const {
    out->assign(specs_.size(), {});
    for (size_t i = 0; i < specs_.size(); ++i) {
      (*out)[i].resize(specs_[i].count);
      MNT_RETURN_IF_ERROR(client_.ToHost((*out)[i].data(), params_[i][0]->data(),
                                         (*out)[i].size() * 4));
    }
    return Status::Ok();
  }

  Status DownloadGrads(std::vector<std::vector<float>>* out) const {
    out->assign(specs_.size(), {});
    for (size_t i = 0; i < specs_.size(); ++i) {
      (*out)[i].resize(specs_[i].count);
      MNT_RETURN_IF_ERROR(client_.ToHost((*out)[i].data(), grads_[i][0]->data(),
                                         (*out)[i].size() * 4));
    }
    return Status::Ok();
  }

  Status Forward(bool training, float* loss, float* correct = nullptr) {
    const MNT_Tensor in =
        sdk::MakeTensor(inputs_[0]->data(), MNT_DTYPE_F32, {kBatch, kFeatures});
    const MNT_Tensor tg = sdk::MakeTensor(targets_[0]->data(), MNT_DTYPE_I32, {kBatch});
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

  const std::vector<Spec>& specs() const { return specs_; }
  const std::vector<std::vector<float>>& host_params() const { return host_params_; }
  const MNT_Plugin_Api* plugin() const { return plugin_; }

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
  std::unique_ptr<sdk::BackendInstance> backend_;
  sdk::BackendClient client_;
  sdk::ModelClient model_;
  Status status_;
  std::vector<Spec> specs_;
  std::vector<Owned> params_, grads_;
  Owned inputs_, targets_, loss_, correct_;
  std::vector<MNT_Tensor> param_views_, grad_views_;
  std::vector<std::vector<float>> host_params_;
};

}  // namespace

void CheckModelPlugin(const MNT_Plugin_Api* plugin, const std::string& options,
                      uint64_t seed, Report* r) {
  const std::string n = "model/";
  ModelHarness h(plugin, options);
  Status s = h.Init();
  if (!s.ok()) {
    r->Fail(n + "create", Format("Model_Create (%lld features, %lld classes, "
                                 "fp32, batch %lld) failed: %s",
                                 (long long)kFeatures, (long long)kClasses,
                                 (long long)kBatch, s.message().c_str()));
    return;
  }
  r->Pass(n + "create");
  {
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
  std::string problems;
  s = h.Specs(&problems);
  if (!s.ok()) problems = s.message();
  r->Check(n + "param_specs", problems);
  if (!problems.empty()) return;

  s = h.Backward(1.0f, false);
  r->Check(n + "backward_before_forward_is_an_error",
           s.ok() ? "Backward without a training Forward succeeded" : "");

  std::mt19937_64 rng(seed);
  s = h.Randomize(&rng);
  float loss = 0, eval_loss = 0, correct = -1;
  if (s.ok()) s = h.Forward(false, &eval_loss, &correct);
  if (s.ok()) s = h.Forward(true, &loss);
  {
    std::string why = s.message();
    if (why.empty() && (!std::isfinite(loss) || loss < 0))
      why = Format("loss %g is not a finite non-negative number", loss);
    else if (why.empty() && loss != eval_loss)
      why = Format("training loss %.9g differs from evaluation loss %.9g", loss, eval_loss);
    else if (why.empty() && (correct < 0 || correct > kBatch || correct != std::floor(correct)))
      why = Format("correct_out %g is not a count in [0, %lld]", correct, (long long)kBatch);
    r->Check(n + "forward", why);
    if (!why.empty()) return;
  }

  // Gradients against central differences in float64 of the fp32 loss.
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
    std::vector<std::vector<float>> p = h.host_params();
    for (size_t i = 0; i < p.size() && why.empty(); ++i) {
      for (int k = 0; k < 12 && why.empty(); ++k) {
        const size_t j = rng() % p[i].size();
        const float orig = p[i][j];
        auto loss_at = [&](double delta, double* out) -> Status {
          p[i][j] = static_cast<float>(orig + delta);
          MNT_RETURN_IF_ERROR(h.UploadParams(p));
          float l;
          MNT_RETURN_IF_ERROR(h.Forward(false, &l));
          *out = l;
          return Status::Ok();
        };
        double lp, lm, lp2, lm2;
        const double eps = 1e-2;
        s = loss_at(eps, &lp);
        if (s.ok()) s = loss_at(-eps, &lm);
        if (s.ok()) s = loss_at(eps / 2, &lp2);
        if (s.ok()) s = loss_at(-eps / 2, &lm2);
        p[i][j] = orig;
        if (!s.ok()) {
          why = s.message();
          break;
        }
        const double fd = (lp - lm) / (2 * eps);
        const double fd2 = (lp2 - lm2) / eps;
        // Two step sizes that disagree mean a kink (e.g. ReLU) in between.
        // The bar sits well below the comparison's tolerance: a kink crossed
        // by one step only must not pass as smooth. Rounding noise in either
        // estimate (~1e-5) stays far below it.
        if (std::abs(fd - fd2) > (2e-3 + 2e-2 * std::abs(fd)) / 8) {
          ++kinks;
          continue;
        }
        const double g = grads[i][j];
        const double tol = 2e-3 + 2e-2 * std::abs(fd);
        if (!std::isfinite(g) || std::abs(g - fd) > tol) {
          // A kink right next to the point fools both central differences
          // alike; the one-sided slopes then disagree, and the backward pass
          // must match one of them (the side its subgradient picks).
          const double q = eps / 4;
          double l0 = 0, lq = 0, lmq = 0;
          s = loss_at(0, &l0);
          if (s.ok()) s = loss_at(q, &lq);
          if (s.ok()) s = loss_at(-q, &lmq);
          p[i][j] = orig;
          const double right = (lq - l0) / q, left = (l0 - lmq) / q;
          if (s.ok() && std::isfinite(g) && std::abs(right - left) > tol / 2 &&
              (std::abs(g - right) <= tol || std::abs(g - left) <= tol)) {
            ++kinks;
            continue;
          }
          why = Format("d loss / d %s[%zu]: backward %.6g, finite difference %.6g",
                       h.specs()[i].name.c_str(), j, g, fd);
        }
        ++checked;
      }
    }
    if (why.empty() && checked < 3 * kinks)
      why = Format("only %d coordinates checkable (%d kinks)", checked, kinks);
    // Restore the unperturbed parameters whatever happened, so the checks
    // below start from the point `grads` was taken at.
    const Status restored = h.UploadParams(h.host_params());
    if (why.empty() && !s.ok()) why = s.message();
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
      for (size_t j = 0; j < grads[i].size() && why.empty(); ++j) {
        const double g = grads[i][j];
        if (std::abs(grads4[i][j] - 4 * g) > 1e-5 * std::abs(4 * g) + 1e-12)
          why = Format("%s[%zu]: multiplier 4 gave %.9g, expected %.9g",
                       h.specs()[i].name.c_str(), j, grads4[i][j], 4 * g);
        else if (std::abs(grads_acc[i][j] - 5 * g) > 1e-5 * std::abs(5 * g) + 1e-12)
          why = Format("%s[%zu]: accumulate gave %.9g, expected %.9g",
                       h.specs()[i].name.c_str(), j, grads_acc[i][j], 5 * g);
      }
    }
    r->Check(n + "loss_multiplier_and_accumulate", why);
  }
  {  // Save/load: params read back through the backend, loaded into a fresh
     // model instance, give the identical loss.
    std::string why;
    std::vector<std::vector<float>> saved;
    float before = 0, after = 0;
    s = h.Forward(false, &before);
    if (s.ok()) s = h.DownloadParams(&saved);
    if (s.ok()) {
      h.DestroyModel();
      sdk::ModelClient fresh;
      s = h.CreateModel(options, &fresh);
      h.ReplaceModel(std::move(fresh));
    }
    if (s.ok()) s = h.UploadParams(saved);
    if (s.ok()) s = h.Forward(false, &after);
    if (!s.ok()) why = s.message();
    else if (before != after)
      why = Format("loss %.9g before, %.9g after the round trip", before, after);
    r->Check(n + "save_load_round_trip", why);
  }
}

}  // namespace mnt::conformance
