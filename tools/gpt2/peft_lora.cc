#include "tools/gpt2/peft_lora.h"

#include <cmath>
#include <cstring>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/backends/common/float_convert.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/model/lora.h"
#include "trainer/core/lora_flag.h"
#include "trainer/core/param_init.h"

namespace mnt::gpt2 {
namespace {

using trainer::CheckpointData;
using trainer::TensorData;

// A Mantissa GPT-2 weight and the module PEFT adapts in its place.
struct Module {
  const char* param;
  const char* hf;  // under transformer.h.<i>.
  int64_t out_per_c, in_per_c;  // sizes in units of C
};
constexpr Module kModules[] = {
    {"qkvw", "attn.c_attn", 3, 1},
    {"attprojw", "attn.c_proj", 1, 1},
    {"fcw", "mlp.c_fc", 4, 1},
    {"fcprojw", "mlp.c_proj", 1, 4},
};
constexpr char kPeftPrefix[] = "base_model.model.";

const Module* ModuleOfParam(const std::string& param) {
  for (const Module& m : kModules) {
    if (param == m.param) return &m;
  }
  return nullptr;
}

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

absl::StatusOr<std::string> NetworkOptions(const std::string& model_options,
                                           const std::string& source) {
  models::LoraConfig config;
  std::string rest;
  if (auto s = sdk::ToAbsl(models::TakeLoraOptions("gpt2", model_options.c_str(), &config, &rest));
      !s.ok()) {
    return Bad(source, std::string(s.message()));
  }
  return rest;
}

absl::StatusOr<std::optional<Gpt2Lora>> LoraFromCheckpoint(const CheckpointData& ckpt,
                                                           const std::string& source) {
  models::LoraConfig config;
  std::string rest;
  if (auto s = sdk::ToAbsl(
          models::TakeLoraOptions("gpt2", ckpt.model_options().c_str(), &config, &rest));
      !s.ok()) {
    return Bad(source, std::string(s.message()));
  }
  if (!config.enabled()) return std::optional<Gpt2Lora>();
  Gpt2Config gpt;
  if (auto s = sdk::ToAbsl(ParseGpt2Options(rest.c_str(), &gpt)); !s.ok()) {
    return Bad(source, std::string(s.message()));
  }
  Gpt2Lora lora;
  lora.rank = config.rank;
  lora.alpha = config.alpha;
  lora.n_layer = gpt.n_layer;
  const int64_t C = gpt.d_model, L = gpt.n_layer, r = config.rank;
  std::map<std::string, const TensorData*> tensors;
  for (const TensorData& t : ckpt.tensors()) tensors[t.name()] = &t;
  for (const auto& [name, t] : tensors) {
    const size_t at = name.find(".lora_");
    if (at == std::string::npos || name.find('/') != std::string::npos) continue;
    if (ModuleOfParam(name.substr(0, at)) == nullptr) {
      return Bad(source, absl::StrCat(
                             "the adapter '", name,
                             "' has no PEFT GPT-2 module to go to (PEFT adapts the Linear "
                             "modules attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj: Mantissa's "
                             "qkvw, attprojw, fcw, fcprojw)"));
    }
  }
  for (const Module& m : kModules) {
    auto a = tensors.find(std::string(m.param) + ".lora_A");
    auto b = tensors.find(std::string(m.param) + ".lora_B");
    if (a == tensors.end() && b == tensors.end()) continue;
    Gpt2LoraWeight w;
    w.param = m.param;
    w.out = m.out_per_c * C;
    w.in = m.in_per_c * C;
    const std::vector<int64_t> a_dims = {L, r, w.in}, b_dims = {L, w.out, r};
    for (auto [it, dims, values] : {std::tuple{a, a_dims, &w.a}, std::tuple{b, b_dims, &w.b}}) {
      const std::string name = std::string(m.param) + (values == &w.a ? ".lora_A" : ".lora_B");
      if (it == tensors.end()) return Bad(source, "checkpoint has no tensor '" + name + "'");
      const TensorData& t = *it->second;
      const std::vector<int64_t> got(t.dims().begin(), t.dims().end());
      if (t.dtype() != MNT_DTYPE_F32 || got != dims ||
          t.data().size() != static_cast<size_t>(L * dims[1] * dims[2]) * sizeof(float)) {
        return Bad(source, absl::StrCat("tensor '", name, "' is not fp32 [",
                                        absl::StrJoin(dims, ", "), "]"));
      }
      values->resize(t.data().size() / sizeof(float));
      std::memcpy(values->data(), t.data().data(), t.data().size());
    }
    lora.weights.push_back(std::move(w));
  }
  if (lora.weights.empty()) {
    return Bad(source, "the model options ask for LoRA adapters but the checkpoint has none");
  }
  return std::optional<Gpt2Lora>(std::move(lora));
}

std::vector<SafeTensor> PeftAdapterTensors(const Gpt2Lora& lora, bool bf16) {
  std::vector<SafeTensor> out;
  const int64_t r = lora.rank;
  for (int64_t l = 0; l < lora.n_layer; ++l) {
    for (const Gpt2LoraWeight& w : lora.weights) {
      const std::string key =
          absl::StrCat(kPeftPrefix, "transformer.h.", l, ".", ModuleOfParam(w.param)->hf);
      const size_t a_size = static_cast<size_t>(r * w.in), b_size = static_cast<size_t>(w.out * r);
      out.push_back({key + ".lora_A.weight", bf16 ? "BF16" : "F32", {r, w.in},
                     EncodeSafeTensorFloats(w.a.data() + l * a_size, a_size, bf16)});
      out.push_back({key + ".lora_B.weight", bf16 ? "BF16" : "F32", {w.out, r},
                     EncodeSafeTensorFloats(w.b.data() + l * b_size, b_size, bf16)});
    }
  }
  return out;
}

std::string PeftAdapterConfigJson(const Gpt2Lora& lora, const std::string& base_model) {
  std::vector<std::string> modules;
  for (const Gpt2LoraWeight& w : lora.weights) {
    modules.push_back(JsonString(ModuleOfParam(w.param)->hf));
  }
  return absl::StrFormat(
      "{\n"
      "  \"alpha_pattern\": {},\n"
      "  \"base_model_name_or_path\": %s,\n"
      "  \"bias\": \"none\",\n"
      "  \"fan_in_fan_out\": true,\n"
      "  \"inference_mode\": true,\n"
      "  \"init_lora_weights\": true,\n"
      "  \"layers_pattern\": null,\n"
      "  \"layers_to_transform\": null,\n"
      "  \"lora_alpha\": %s,\n"
      "  \"lora_dropout\": 0.0,\n"
      "  \"modules_to_save\": null,\n"
      "  \"peft_type\": \"LORA\",\n"
      "  \"r\": %d,\n"
      "  \"rank_pattern\": {},\n"
      "  \"revision\": null,\n"
      "  \"target_modules\": [%s],\n"
      "  \"task_type\": \"CAUSAL_LM\",\n"
      "  \"use_dora\": false,\n"
      "  \"use_rslora\": false\n"
      "}\n",
      JsonString(base_model), absl::StrFormat("%.17g", lora.alpha), lora.rank,
      absl::StrJoin(modules, ", "));
}

absl::StatusOr<Gpt2Lora> LoraFromPeft(const std::string& config_json,
                                      const std::vector<SafeTensor>& tensors,
                                      const LlmcHeader& h, const std::string& source) {
  google::protobuf::Struct config;
  if (!google::protobuf::util::JsonStringToMessage(config_json, &config,
                                                   google::protobuf::util::JsonParseOptions())
           .ok()) {
    return Bad(source, "adapter_config.json is not a JSON object");
  }
  const auto& f = config.fields();
  auto has = [&](const char* key) { return f.count(key) > 0; };
  auto kind = [&](const char* key) { return f.at(key).kind_case(); };
  using V = google::protobuf::Value;
  if (!has("peft_type") || f.at("peft_type").string_value() != "LORA") {
    return Bad(source, "adapter_config.json: peft_type is not \"LORA\"");
  }
  for (const char* flag : {"use_rslora", "use_dora"}) {
    if (has(flag) && kind(flag) == V::kBoolValue && f.at(flag).bool_value()) {
      return Bad(source, absl::StrCat("adapter_config.json: ", flag,
                                      " is true; Mantissa's LoRA is plain LoRA (alpha/r)"));
    }
  }
  if (has("bias") && kind("bias") == V::kStringValue && f.at("bias").string_value() != "none") {
    return Bad(source, "adapter_config.json: bias is \"" + f.at("bias").string_value() +
                           "\"; Mantissa's adapters train no biases (\"none\")");
  }
  for (const char* pattern : {"rank_pattern", "alpha_pattern"}) {
    if (has(pattern) && kind(pattern) == V::kStructValue &&
        f.at(pattern).struct_value().fields_size() > 0) {
      return Bad(source, absl::StrCat("adapter_config.json: ", pattern,
                                      " is not empty; one rank and alpha for every module"));
    }
  }
  if (has("layers_to_transform") && kind("layers_to_transform") != V::kNullValue) {
    return Bad(source, "adapter_config.json: layers_to_transform is set; every layer has "
                       "Mantissa's adapters");
  }
  if (!has("r") || kind("r") != V::kNumberValue || !(f.at("r").number_value() >= 1) ||
      std::floor(f.at("r").number_value()) != f.at("r").number_value() ||
      f.at("r").number_value() > (1 << 20)) {
    return Bad(source, "adapter_config.json: r is missing or not a rank from 1 to 1048576");
  }
  Gpt2Lora lora;
  lora.rank = static_cast<int64_t>(f.at("r").number_value());
  lora.alpha = 8.0;  // LoraConfig's default
  if (has("lora_alpha")) {
    if (kind("lora_alpha") != V::kNumberValue || !(f.at("lora_alpha").number_value() > 0) ||
        !std::isfinite(f.at("lora_alpha").number_value())) {
      return Bad(source, "adapter_config.json: lora_alpha is not a positive number");
    }
    lora.alpha = f.at("lora_alpha").number_value();
  }
  lora.n_layer = h.n_layer;
  const int64_t C = h.channels, L = h.n_layer, r = lora.rank;
  // (module, layer) -> A, B.
  std::map<std::pair<const Module*, int64_t>, std::pair<const SafeTensor*, const SafeTensor*>> found;
  for (const SafeTensor& t : tensors) {
    std::string key = t.name;
    if (key.rfind(kPeftPrefix, 0) == 0) key = key.substr(std::strlen(kPeftPrefix));
    const std::vector<std::string> parts = absl::StrSplit(key, '.');
    // transformer h <i> <attn|mlp> <module> lora_A|lora_B weight
    int64_t layer = -1;
    const Module* module = nullptr;
    if (parts.size() == 7 && parts[0] == "transformer" && parts[1] == "h" &&
        absl::SimpleAtoi(parts[2], &layer) && layer >= 0 && layer < L &&
        (parts[5] == "lora_A" || parts[5] == "lora_B") && parts[6] == "weight") {
      for (const Module& m : kModules) {
        if (parts[3] + "." + parts[4] == m.hf) module = &m;
      }
    }
    if (module == nullptr) {
      return Bad(source, absl::StrCat(
                             "adapter_model.safetensors: '", t.name,
                             "' is not a LoRA weight of GPT-2's attn.c_attn, attn.c_proj, "
                             "mlp.c_fc or mlp.c_proj in layers 0..", L - 1));
    }
    const bool is_a = parts[5] == "lora_A";
    const std::vector<int64_t> want = is_a ? std::vector<int64_t>{r, module->in_per_c * C}
                                           : std::vector<int64_t>{module->out_per_c * C, r};
    if (t.shape != want) {
      return Bad(source, absl::StrCat("adapter_model.safetensors: '", t.name, "' has shape [",
                                      absl::StrJoin(t.shape, ", "), "], expected [",
                                      absl::StrJoin(want, ", "), "] (r=", r, ", n_embd=", C,
                                      ")"));
    }
    auto& slot = found[{module, layer}];
    const SafeTensor*& dst = is_a ? slot.first : slot.second;
    if (dst != nullptr) {
      return Bad(source, "adapter_model.safetensors: '" + t.name + "' appears twice");
    }
    dst = &t;
  }
  for (const Module& m : kModules) {
    int64_t layers = 0;
    for (int64_t l = 0; l < L; ++l) {
      auto it = found.find({&m, l});
      if (it == found.end()) continue;
      if (it->second.first == nullptr || it->second.second == nullptr) {
        return Bad(source, absl::StrCat("adapter_model.safetensors: layer ", l, "'s ", m.hf,
                                        " has lora_", it->second.first == nullptr ? "B" : "A",
                                        " without lora_",
                                        it->second.first == nullptr ? "A" : "B"));
      }
      ++layers;
    }
    if (layers == 0) continue;
    if (layers != L) {
      return Bad(source, absl::StrCat("adapter_model.safetensors: ", m.hf, " has adapters in ",
                                      layers, " of ", L,
                                      " layers; Mantissa's adapters are in every layer"));
    }
    Gpt2LoraWeight w;
    w.param = m.param;
    w.out = m.out_per_c * C;
    w.in = m.in_per_c * C;
    for (int64_t l = 0; l < L; ++l) {
      const auto& [a, b] = found.at({&m, l});
      const std::vector<float> av = DecodeSafeTensorFloats(*a), bv = DecodeSafeTensorFloats(*b);
      w.a.insert(w.a.end(), av.begin(), av.end());
      w.b.insert(w.b.end(), bv.begin(), bv.end());
    }
    lora.weights.push_back(std::move(w));
  }
  if (lora.weights.empty()) return Bad(source, "adapter_model.safetensors holds no adapter");
  return lora;
}

absl::Status MergeLora(const Gpt2Lora& lora, LlmcModel* model) {
  const int64_t r = lora.rank;
  const double s = lora.scale();
  for (const Gpt2LoraWeight& w : lora.weights) {
    size_t k = 0;
    while (k < model->specs.size() && model->specs[k].name != w.param) ++k;
    if (k == model->specs.size()) return absl::InternalError("no parameter " + w.param);
    std::vector<float>& weights = model->params[k];
    if (weights.size() != static_cast<size_t>(lora.n_layer * w.out * w.in)) {
      return absl::InternalError("parameter " + w.param + " does not fit its adapters");
    }
    for (int64_t l = 0; l < lora.n_layer; ++l) {
      const float* a = w.a.data() + l * r * w.in;
      const float* b = w.b.data() + l * w.out * r;
      float* wl = weights.data() + l * w.out * w.in;
      for (int64_t o = 0; o < w.out; ++o) {
        for (int64_t i = 0; i < w.in; ++i) {
          double sum = 0;
          for (int64_t j = 0; j < r; ++j) sum += static_cast<double>(b[o * r + j]) * a[j * w.in + i];
          wl[o * w.in + i] = static_cast<float>(static_cast<double>(wl[o * w.in + i]) + s * sum);
        }
      }
    }
  }
  return absl::OkStatus();
}

std::string LoraModelOptionsOf(const Gpt2Lora& lora) {
  std::vector<std::string> targets;
  for (const Gpt2LoraWeight& w : lora.weights) targets.push_back(w.param);
  return absl::StrCat("lora_r=", lora.rank, ",lora_alpha=", absl::StrFormat("%.17g", lora.alpha),
                      ",lora_dropout=0,lora_targets=", absl::StrJoin(targets, "|"));
}

absl::StatusOr<Gpt2Lora> FreshLora(const LlmcModel& base, const std::string& lora_flag,
                                   uint64_t seed, const std::string& source) {
  auto options = trainer::LoraModelOptions(lora_flag);
  if (!options.ok()) return options.status();
  models::LoraConfig config;
  std::string rest;
  if (auto s = sdk::ToAbsl(models::TakeLoraOptions("gpt2", options->c_str(), &config, &rest));
      !s.ok()) {
    return s;
  }
  std::unique_ptr<models::LoraAdapters> adapters;
  if (auto s = sdk::ToAbsl(models::LoraAdapters::Create("gpt2", config, base.specs,
                                                        sdk::BackendClient(), &adapters));
      !s.ok()) {
    return s;
  }
  Gpt2Lora lora;
  lora.rank = config.rank;
  lora.alpha = config.alpha;
  lora.n_layer = base.header.n_layer;
  const auto& specs = adapters->specs();
  for (size_t k = 0; k + 1 < specs.size(); k += 2) {
    const std::string param = specs[k].name.substr(0, specs[k].name.size() - 7);  // ".lora_A"
    const Module* m = ModuleOfParam(param);
    if (m == nullptr) {
      return Bad(source, "--lora: '" + param +
                             "' has no PEFT GPT-2 module (target qkvw, attprojw, fcw, fcprojw)");
    }
    Gpt2LoraWeight w;
    w.param = param;
    w.out = m->out_per_c * base.header.channels;
    w.in = m->in_per_c * base.header.channels;
    for (size_t j : {k, k + 1}) {
      int64_t n = 1;
      for (int64_t d : specs[j].dims) n *= d;
      trainer::InitParameter(specs[j].init, specs[j].init_scale, seed,
                             static_cast<int64_t>(base.specs.size() + j), n,
                             j == k ? &w.a : &w.b);
    }
    lora.weights.push_back(std::move(w));
  }
  return lora;
}

std::string LoraFlagOf(const Gpt2Lora& lora) {
  std::vector<std::string> targets;
  for (const Gpt2LoraWeight& w : lora.weights) targets.push_back(w.param);
  return absl::StrCat("r=", lora.rank, ",alpha=", absl::StrFormat("%.17g", lora.alpha),
                      ",dropout=0,targets=", absl::StrJoin(targets, ","));
}

absl::Status AddLoraToCheckpoint(const Gpt2Lora& lora, const std::string& optimizer,
                                 CheckpointData* ckpt) {
  ckpt->set_model_options(ckpt->model_options().empty()
                              ? LoraModelOptionsOf(lora)
                              : absl::StrCat(ckpt->model_options(), ",", LoraModelOptionsOf(lora)));
  // The base is frozen: no optimizer state (training_checkpoint.cc).
  auto* tensors = ckpt->mutable_tensors();
  for (int i = tensors->size() - 1; i >= 0; --i) {
    if (tensors->Get(i).name().rfind("opt.", 0) == 0) tensors->DeleteSubrange(i, 1);
  }
  const int slots = optimizer == "sgd" ? 1 : 2;
  auto add = [&](const std::string& name, const std::vector<int64_t>& dims,
                 const std::vector<float>* values) {
    TensorData* t = ckpt->add_tensors();
    t->set_name(name);
    t->set_dtype(MNT_DTYPE_F32);
    int64_t n = 1;
    for (int64_t d : dims) {
      t->add_dims(d);
      n *= d;
    }
    if (values != nullptr && values->size() != static_cast<size_t>(n)) {
      return absl::InternalError("adapter " + name + " does not fit its shape");
    }
    std::string* bytes = t->mutable_data();
    bytes->assign(static_cast<size_t>(n) * sizeof(float), '\0');
    if (values != nullptr) std::memcpy(bytes->data(), values->data(), bytes->size());
    return absl::OkStatus();
  };
  for (const Gpt2LoraWeight& w : lora.weights) {
    for (const auto& [suffix, dims, values] :
         {std::tuple{".lora_A", std::vector<int64_t>{lora.n_layer, lora.rank, w.in}, &w.a},
          std::tuple{".lora_B", std::vector<int64_t>{lora.n_layer, w.out, lora.rank}, &w.b}}) {
      const std::string name = w.param + suffix;
      // The trainer's order: parameter, then its optimizer state.
      if (auto s = add(name, dims, values); !s.ok()) return s;
      for (int k = 1; k <= slots; ++k) {
        if (auto s = add(absl::StrCat("opt.state", k, "/", name), dims, nullptr); !s.ok()) return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace mnt::gpt2
