// Mantissa models: LoRA adapters on a model's Linear layers (ABI 1.13's
// MNT_CAPABILITY_MODEL_LORA), for every model on this layer at once. The
// facade (ops.h) adds an adapter's low-rank product to every Linear whose
// weight matrix has one, as it hands FP8 GEMMs their slots, so no network
// has LoRA code of its own:
//
//   y = x·Wᵀ (+ b) + s·(x·Aᵀ)·Bᵀ,   s = alpha / r,
//
// A [r, in], B [out, r] per matrix (PEFT's LoraLayer: lora_A, lora_B; for
// a stacked [L, out, in] weight, A [L, r, in] and B [L, out, r]), A drawn
// as PEFT draws it (kaiming_uniform with a = sqrt(5): U(-1/sqrt(in),
// 1/sqrt(in))), B zeros, so training starts from the base model's outputs.
// The adapters are ordinary parameters after the network's own, named
// `<layer>.lora_A` / `<layer>.lora_B` (the layer: the weight's name without
// its last dotted part, or the whole name when it has none), so the
// trainer's checkpoints, optimizer, data-parallel exchange and memory
// estimate see them without knowing what they are.
//
// The model takes the adapters through its option string (the trainer's
// --lora): lora_r=<rank>, lora_alpha=<alpha>, lora_dropout=0 (dropout is not
// implemented: any other value is refused), lora_targets=<glob>|<glob>...
// (fnmatch globs over parameter names; every glob must match a rank-2 or
// rank-3 parameter). ModelApi takes these keys out before the network
// parses the rest.
#ifndef MANTISSA_PLUGINS_SDK_MODEL_LORA_H_
#define MANTISSA_PLUGINS_SDK_MODEL_LORA_H_

#include <fnmatch.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "plugins/abi/mnt_backend.h"
#include "plugins/abi/mnt_model.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/model/param_spec.h"
#include "plugins/sdk/model/tensor_checks.h"
#include "plugins/sdk/model/views.h"
#include "plugins/sdk/status.h"
#include "plugins/sdk/tensor.h"

namespace mnt::models {

struct LoraConfig {
  int64_t rank = 0;  // 0: no adapters
  double alpha = 0.0;
  std::vector<std::string> targets;

  bool enabled() const { return rank > 0; }
  float scale() const { return static_cast<float>(alpha / static_cast<double>(rank)); }
};

inline constexpr char kLoraOptionPrefix[] = "lora_";

// Takes the lora_* keys out of a model's option string: *config from them,
// *rest the other items in their order. A malformed or unknown lora_ key, a
// dropout other than 0, or a rank without targets is refused in one line
// "<model>: ...".
sdk::Status TakeLoraOptions(const std::string& model, const char* options, LoraConfig* config,
                            std::string* rest);

// One adapted matrix: its A and B (and their gradients, data NULL outside
// a backward or for a frozen adapter) for one Linear call.
struct LoraAdapter {
  MNT_Tensor a, b;
  MNT_Tensor da, db;
  WeightLayout layout;
  int64_t slot;  // which kept hidden buffer (one per adapted matrix)
};

class LoraAdapters {
 public:
  LoraAdapters() = default;
  LoraAdapters(const LoraAdapters&) = delete;
  LoraAdapters& operator=(const LoraAdapters&) = delete;

  // The adapters of the matrices of `base` that config's targets match, in
  // base's order; refuses a glob that matches no rank-2 or rank-3 parameter.
  // Its buffers come from `client` (copied: the adapters outlive the
  // network's own copies of it).
  static sdk::Status Create(const std::string& model, const LoraConfig& config,
                            const std::vector<ParamSpec>& base, const sdk::BackendClient& client,
                            std::unique_ptr<LoraAdapters>* out);

  const LoraConfig& config() const { return config_; }
  size_t num_base() const { return num_base_; }
  // The adapter parameters, A then B for each adapted matrix.
  const std::vector<ParamSpec>& specs() const { return specs_; }

  // Holds a Forward's or Backward's adapter tensors (params and grads past
  // num_base(); grads NULL for a Forward) until EndPass, after checking
  // their dtypes and shapes; `call` names the call in messages.
  sdk::Status BeginPass(const std::string& call, const MNT_Tensor* params, size_t num_params,
                        const MNT_Tensor* grads, size_t num_grads);
  void EndPass() { pass_active_ = false; }

  // The adapter of the matrix `w` views (a parameter of the pass, or one
  // layer of a stacked one), or nullopt.
  std::optional<LoraAdapter> Find(const MNT_Tensor& w) const;

  // After a training Forward: a target matrix that no Linear call
  // multiplied (a layer norm's stacked [L, C] weights, an embedding table
  // only looked up) has an adapter that would never train, refused in one
  // line "<model>: ...".
  sdk::Status CheckEveryTargetUsed(const std::string& model) const;

  // x·Aᵀ of adapter `slot` for `rows` rows: kept from the forward for the
  // backward (MNT_MEMORY_ACTIVATIONS), grown when a call needs more.
  sdk::Status Hidden(int64_t slot, int64_t rows, MNT_DType dtype, MNT_Tensor* out);
  // The backward's s·dy·B [rows, r] (MNT_MEMORY_WORKSPACE, shared).
  sdk::Status HiddenGrad(int64_t rows, MNT_DType dtype, MNT_Tensor* out);

 private:
  struct Target {
    size_t param;        // index among the base parameters
    int64_t layers;      // 1 for [out, in], L for [L, out, in]
    int64_t out, in;
    WeightLayout layout;
    size_t a_index;      // index of A among all parameters (B follows)
    int64_t first_slot;  // slot of layer 0
  };
  sdk::Status Buffer(sdk::DeviceBuffer* buffer, size_t bytes, MNT_MemoryCategory category);

  sdk::BackendClient client_;
  LoraConfig config_;
  size_t num_base_ = 0;
  std::vector<ParamSpec> specs_;
  std::vector<Target> targets_;
  std::vector<std::string> target_names_;
  mutable std::vector<bool> used_;  // per target, set by Find
  int64_t num_slots_ = 0;
  bool pass_active_ = false;
  const MNT_Tensor* params_ = nullptr;
  const MNT_Tensor* grads_ = nullptr;
  std::vector<sdk::DeviceBuffer> hidden_;
  sdk::DeviceBuffer hidden_grad_;
};

// Implementation (header-only: the SDK ships no library).

namespace detail {

inline std::string TrimSpaces(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

// "<layer>" of a weight: its name without the last dotted part.
inline std::string LayerOf(const std::string& name) {
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(0, dot);
}

}  // namespace detail

inline sdk::Status TakeLoraOptions(const std::string& model, const char* options,
                                   LoraConfig* config, std::string* rest) {
  *config = LoraConfig{};
  rest->clear();
  const std::string text = options == nullptr ? "" : options;
  bool has_rank = false, has_alpha = false, has_targets = false, any = false;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find(',', pos);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(pos, end - pos);
    pos = end + 1;
    const std::string trimmed = detail::TrimSpaces(item);
    if (trimmed.rfind(kLoraOptionPrefix, 0) != 0) {
      if (!trimmed.empty()) *rest += (rest->empty() ? "" : ",") + trimmed;
      if (end == text.size()) break;
      continue;
    }
    any = true;
    const size_t eq = trimmed.find('=');
    const std::string key = detail::TrimSpaces(trimmed.substr(0, eq));
    const std::string value =
        eq == std::string::npos ? "" : detail::TrimSpaces(trimmed.substr(eq + 1));
    errno = 0;
    char* parsed_end = nullptr;
    if (key == "lora_r") {
      const long long r = std::strtoll(value.c_str(), &parsed_end, 10);
      if (value.empty() || *parsed_end != '\0' || errno != 0 || r < 1 || r > (1 << 20)) {
        return sdk::InvalidArgument(sdk::Format(
            "%s: lora_r='%s' is not a rank from 1 to 1048576", model.c_str(), value.c_str()));
      }
      config->rank = r;
      has_rank = true;
    } else if (key == "lora_alpha") {
      const double a = std::strtod(value.c_str(), &parsed_end);
      if (value.empty() || *parsed_end != '\0' || errno != 0 || !std::isfinite(a) || a <= 0) {
        return sdk::InvalidArgument(sdk::Format(
            "%s: lora_alpha='%s' is not a positive number", model.c_str(), value.c_str()));
      }
      config->alpha = a;
      has_alpha = true;
    } else if (key == "lora_dropout") {
      const double d = std::strtod(value.c_str(), &parsed_end);
      if (value.empty() || *parsed_end != '\0' || errno != 0 || d != 0.0) {
        return sdk::InvalidArgument(sdk::Format(
            "%s: lora_dropout='%s': dropout on the adapters' input is not implemented; use 0",
            model.c_str(), value.c_str()));
      }
    } else if (key == "lora_targets") {
      size_t g = 0;
      while (g <= value.size()) {
        size_t bar = value.find('|', g);
        if (bar == std::string::npos) bar = value.size();
        const std::string glob = detail::TrimSpaces(value.substr(g, bar - g));
        if (!glob.empty()) config->targets.push_back(glob);
        g = bar + 1;
      }
      has_targets = !config->targets.empty();
    } else {
      return sdk::InvalidArgument(sdk::Format(
          "%s: unknown LoRA key '%s' (known: lora_alpha, lora_dropout, lora_r, lora_targets)",
          model.c_str(), key.c_str()));
    }
    if (end == text.size()) break;
  }
  if (any && !(has_rank && has_targets)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: LoRA needs lora_r and lora_targets (globs over parameter names, '|'-separated)",
        model.c_str()));
  }
  // PEFT's default lora_alpha is 8.
  if (has_rank && !has_alpha) config->alpha = 8.0;
  return sdk::Status::Ok();
}

inline sdk::Status LoraAdapters::Create(const std::string& model, const LoraConfig& config,
                                        const std::vector<ParamSpec>& base,
                                        const sdk::BackendClient& client,
                                        std::unique_ptr<LoraAdapters>* out) {
  auto lora = std::make_unique<LoraAdapters>();
  lora->client_ = client;
  lora->config_ = config;
  lora->num_base_ = base.size();
  std::vector<bool> used(config.targets.size(), false);
  for (size_t i = 0; i < base.size(); ++i) {
    const ParamSpec& spec = base[i];
    if (spec.dims.size() != 2 && spec.dims.size() != 3) continue;
    bool match = false;
    for (size_t g = 0; g < config.targets.size(); ++g) {
      if (fnmatch(config.targets[g].c_str(), spec.name.c_str(), 0) == 0) used[g] = match = true;
    }
    if (!match) continue;
    Target t;
    t.param = i;
    t.layers = spec.dims.size() == 3 ? spec.dims[0] : 1;
    const int64_t rows = spec.dims[spec.dims.size() - 2], cols = spec.dims.back();
    t.layout = spec.layout;
    t.out = t.layout == WeightLayout::kOutIn ? rows : cols;
    t.in = t.layout == WeightLayout::kOutIn ? cols : rows;
    t.a_index = base.size() + lora->specs_.size();
    t.first_slot = lora->num_slots_;
    lora->num_slots_ += t.layers;
    std::vector<int64_t> a_dims = {config.rank, t.in}, b_dims = {t.out, config.rank};
    if (spec.dims.size() == 3) {
      a_dims.insert(a_dims.begin(), t.layers);
      b_dims.insert(b_dims.begin(), t.layers);
    }
    const std::string layer = detail::LayerOf(spec.name);
    // kaiming_uniform_(a=sqrt(5)) on [r, in]: bound = sqrt(6 / ((1 + 5) * in)).
    const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(t.in)));
    lora->specs_.push_back({layer + ".lora_A", a_dims, MNT_PARAM_INIT_UNIFORM, bound, true});
    lora->specs_.push_back({layer + ".lora_B", b_dims, MNT_PARAM_INIT_ZEROS, 0.0f, true});
    // A stacked weight's adapters stack the same layers (ABI 1.15).
    const int stacked = spec.dims.size() == 3 ? 1 : 0;
    lora->specs_[lora->specs_.size() - 2].stacked_dims = stacked;
    lora->specs_.back().stacked_dims = stacked;
    lora->targets_.push_back(t);
    lora->target_names_.push_back(spec.name);
  }
  for (size_t g = 0; g < config.targets.size(); ++g) {
    if (used[g]) continue;
    std::string names;
    for (const ParamSpec& s : base) {
      if (s.dims.size() == 2 || s.dims.size() == 3) names += (names.empty() ? "" : ", ") + s.name;
    }
    return sdk::InvalidArgument(sdk::Format(
        "%s: LoRA target '%s' matches no weight matrix (its matrices: %s)", model.c_str(),
        config.targets[g].c_str(), names.c_str()));
  }
  lora->hidden_.resize(static_cast<size_t>(lora->num_slots_));
  lora->used_.assign(lora->targets_.size(), false);
  *out = std::move(lora);
  return sdk::Status::Ok();
}

inline sdk::Status LoraAdapters::BeginPass(const std::string& call, const MNT_Tensor* params,
                                           size_t num_params, const MNT_Tensor* grads,
                                           size_t num_grads) {
  const size_t total = num_base_ + specs_.size();
  if (params == nullptr || num_params != total || (grads != nullptr && num_grads != total)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %zu parameters with LoRA adapters (%zu of the model, %zu adapters), got %zu",
        call.c_str(), total, num_base_, specs_.size(), grads != nullptr ? num_grads : num_params));
  }
  for (size_t k = 0; k < specs_.size(); ++k) {
    const size_t i = num_base_ + k;
    // The adapters are stored as the model's weights are.
    MNT_RETURN_IF_ERROR(CheckTensor(call, "params[" + std::to_string(i) + "] (" + specs_[k].name + ")",
                                    &params[i], params[0].dtype, specs_[k].dims));
    if (grads != nullptr && grads[i].data != nullptr) {
      MNT_RETURN_IF_ERROR(CheckTensor(call, "grads[" + std::to_string(i) + "] (" + specs_[k].name + ")",
                                      &grads[i], grads[i].dtype, specs_[k].dims));
    }
  }
  params_ = params;
  grads_ = grads;
  pass_active_ = true;
  return sdk::Status::Ok();
}

inline std::optional<LoraAdapter> LoraAdapters::Find(const MNT_Tensor& w) const {
  if (!pass_active_ || w.data == nullptr) return std::nullopt;
  const char* p = static_cast<const char*>(w.data);
  for (size_t k = 0; k < targets_.size(); ++k) {
    const Target& t = targets_[k];
    const MNT_Tensor& base = params_[t.param];
    const char* begin = static_cast<const char*>(base.data);
    const size_t layer_bytes = static_cast<size_t>(t.out * t.in) * sdk::DTypeSize(base.dtype);
    if (p < begin || p >= begin + layer_bytes * static_cast<size_t>(t.layers)) continue;
    const size_t offset = static_cast<size_t>(p - begin);
    if (offset % layer_bytes != 0 || sdk::NumElements(w) != t.out * t.in) return std::nullopt;
    const int64_t l = static_cast<int64_t>(offset / layer_bytes);
    const MNT_Tensor& a = params_[t.a_index];
    const MNT_Tensor& b = params_[t.a_index + 1];
    used_[k] = true;
    LoraAdapter ad;
    ad.layout = t.layout;
    ad.slot = t.first_slot + l;
    const bool stacked = a.rank == 3;
    ad.a = stacked ? Layer(a, l) : a;
    ad.b = stacked ? Layer(b, l) : b;
    if (grads_ != nullptr) {
      ad.da = stacked ? Layer(grads_[t.a_index], l) : grads_[t.a_index];
      ad.db = stacked ? Layer(grads_[t.a_index + 1], l) : grads_[t.a_index + 1];
    } else {
      ad.da = View(nullptr, a.dtype, {config_.rank, t.in});
      ad.db = View(nullptr, b.dtype, {t.out, config_.rank});
    }
    return ad;
  }
  return std::nullopt;
}

inline sdk::Status LoraAdapters::CheckEveryTargetUsed(const std::string& model) const {
  for (size_t k = 0; k < targets_.size(); ++k) {
    if (used_[k]) continue;
    return sdk::InvalidArgument(sdk::Format(
        "%s: LoRA target '%s' is no Linear layer's weight (no Linear call multiplies it), so "
        "its adapter would never train; target Linear weights only",
        model.c_str(), target_names_[k].c_str()));
  }
  return sdk::Status::Ok();
}

inline sdk::Status LoraAdapters::Buffer(sdk::DeviceBuffer* buffer, size_t bytes,
                                        MNT_MemoryCategory category) {
  if (buffer->size() >= bytes) return sdk::Status::Ok();
  *buffer = sdk::DeviceBuffer();
  return client_.Allocate(bytes, category, buffer);
}

inline sdk::Status LoraAdapters::Hidden(int64_t slot, int64_t rows, MNT_DType dtype,
                                        MNT_Tensor* out) {
  sdk::DeviceBuffer& buffer = hidden_[static_cast<size_t>(slot)];
  MNT_RETURN_IF_ERROR(Buffer(&buffer,
                             static_cast<size_t>(rows * config_.rank) * sdk::DTypeSize(dtype),
                             MNT_MEMORY_ACTIVATIONS));
  *out = View(buffer.data(), dtype, {rows, config_.rank});
  return sdk::Status::Ok();
}

inline sdk::Status LoraAdapters::HiddenGrad(int64_t rows, MNT_DType dtype, MNT_Tensor* out) {
  MNT_RETURN_IF_ERROR(Buffer(&hidden_grad_,
                             static_cast<size_t>(rows * config_.rank) * sdk::DTypeSize(dtype),
                             MNT_MEMORY_WORKSPACE));
  *out = View(hidden_grad_.data(), dtype, {rows, config_.rank});
  return sdk::Status::Ok();
}

}  // namespace mnt::models

#endif  // MANTISSA_PLUGINS_SDK_MODEL_LORA_H_
