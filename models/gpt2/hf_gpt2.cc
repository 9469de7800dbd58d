#include "models/gpt2/hf_gpt2.h"

#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/backends/common/float_convert.h"

namespace mnt::gpt2 {
namespace {

// Where an HF tensor comes from in the llm.c model: spec `param`, layer
// `layer` (-1: the whole tensor), `rows` x `cols` of it, transposed for
// Conv1D weights, the first `rows` rows only for wte.
struct Place {
  std::string hf_name;
  std::string param;
  int64_t layer = -1;
  int64_t rows = 0, cols = 0;  // the llm.c slice (cols 0: a vector of `rows`)
  bool transpose = false;
};

std::vector<Place> Places(const LlmcHeader& h) {
  const int64_t C = h.channels;
  std::vector<Place> p;
  p.push_back({"transformer.wte.weight", "wte", -1, h.vocab, C, false});
  p.push_back({"transformer.wpe.weight", "wpe", -1, h.max_seq_len, C, false});
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string b = absl::StrCat("transformer.h.", l, ".");
    p.push_back({b + "ln_1.weight", "ln1w", l, C, 0, false});
    p.push_back({b + "ln_1.bias", "ln1b", l, C, 0, false});
    p.push_back({b + "attn.c_attn.weight", "qkvw", l, 3 * C, C, true});
    p.push_back({b + "attn.c_attn.bias", "qkvb", l, 3 * C, 0, false});
    p.push_back({b + "attn.c_proj.weight", "attprojw", l, C, C, true});
    p.push_back({b + "attn.c_proj.bias", "attprojb", l, C, 0, false});
    p.push_back({b + "ln_2.weight", "ln2w", l, C, 0, false});
    p.push_back({b + "ln_2.bias", "ln2b", l, C, 0, false});
    p.push_back({b + "mlp.c_fc.weight", "fcw", l, 4 * C, C, true});
    p.push_back({b + "mlp.c_fc.bias", "fcb", l, 4 * C, 0, false});
    p.push_back({b + "mlp.c_proj.weight", "fcprojw", l, C, 4 * C, true});
    p.push_back({b + "mlp.c_proj.bias", "fcprojb", l, C, 0, false});
  }
  p.push_back({"transformer.ln_f.weight", "lnfw", -1, C, 0, false});
  p.push_back({"transformer.ln_f.bias", "lnfb", -1, C, 0, false});
  return p;
}

// HF's shape of a place: Conv1D weights [in, out].
std::vector<int64_t> HfShape(const Place& p) {
  if (p.cols == 0) return {p.rows};
  return p.transpose ? std::vector<int64_t>{p.cols, p.rows} : std::vector<int64_t>{p.rows, p.cols};
}

// Offset of the place's slice in its llm.c tensor.
int64_t SliceOffset(const Place& p) {
  return p.layer < 0 ? 0 : p.layer * p.rows * std::max<int64_t>(p.cols, 1);
}

int SpecIndex(const LlmcModel& m, const std::string& name) {
  for (size_t i = 0; i < m.specs.size(); ++i) {
    if (m.specs[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status Bad(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

}  // namespace

absl::StatusOr<std::vector<SafeTensor>> HfTensorsFromLlmc(const LlmcModel& model, bool bf16) {
  std::vector<SafeTensor> out;
  for (const Place& p : Places(model.header)) {
    const int idx = SpecIndex(model, p.param);
    if (idx < 0) return absl::InternalError("the llm.c model has no parameter " + p.param);
    const std::vector<float>& src = model.params[static_cast<size_t>(idx)];
    const int64_t cols = std::max<int64_t>(p.cols, 1);
    const int64_t offset = SliceOffset(p);
    if (static_cast<int64_t>(src.size()) < offset + p.rows * cols) {
      return absl::InternalError("parameter " + p.param + " is smaller than its spec");
    }
    std::vector<float> v(static_cast<size_t>(p.rows * cols));
    for (int64_t r = 0; r < p.rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        const float x = src[static_cast<size_t>(offset + r * cols + c)];
        v[static_cast<size_t>(p.transpose ? c * p.rows + r : r * cols + c)] = x;
      }
    }
    out.push_back({p.hf_name, bf16 ? "BF16" : "F32", HfShape(p),
                   EncodeSafeTensorFloats(v.data(), v.size(), bf16)});
  }
  return out;
}

std::string HfConfigJson(const LlmcHeader& h, bool bf16) {
  // GPT-2's own tokenizer has <|endoftext|> = 50256; other vocabularies
  // (Mantissa's byte-level 256) have no such token, and transformers'
  // default (50256) would lie outside them.
  const std::string special =
      h.vocab == 50257 ? "  \"bos_token_id\": 50256,\n  \"eos_token_id\": 50256,\n"
                       : "  \"bos_token_id\": null,\n  \"eos_token_id\": null,\n";
  return absl::StrFormat(
      "{\n"
      "  \"architectures\": [\"GPT2LMHeadModel\"],\n"
      "  \"model_type\": \"gpt2\",\n"
      "  \"vocab_size\": %d,\n"
      "  \"n_positions\": %d,\n"
      "  \"n_ctx\": %d,\n"
      "  \"n_embd\": %d,\n"
      "  \"n_layer\": %d,\n"
      "  \"n_head\": %d,\n"
      "  \"n_inner\": null,\n"
      "  \"activation_function\": \"gelu_new\",\n"
      "  \"layer_norm_epsilon\": 1e-05,\n"
      "  \"resid_pdrop\": 0.0,\n"
      "  \"embd_pdrop\": 0.0,\n"
      "  \"attn_pdrop\": 0.0,\n"
      "  \"initializer_range\": 0.02,\n"
      "  \"scale_attn_weights\": true,\n"
      "  \"tie_word_embeddings\": true,\n"
      "%s"
      "  \"torch_dtype\": \"%s\"\n"
      "}\n",
      h.vocab, h.max_seq_len, h.max_seq_len, h.channels, h.n_layer, h.n_head, special,
      bf16 ? "bfloat16" : "float32");
}

absl::StatusOr<LlmcModel> LlmcFromHf(const std::string& config_json,
                                     const std::vector<SafeTensor>& tensors,
                                     const std::string& source) {
  google::protobuf::Struct config;
  if (!google::protobuf::util::JsonStringToMessage(config_json, &config,
                                                   google::protobuf::util::JsonParseOptions())
           .ok()) {
    return Bad(source, "config.json is not a JSON object");
  }
  const auto& f = config.fields();
  auto number = [&](const char* key, int64_t* out) -> absl::Status {
    auto it = f.find(key);
    if (it == f.end() || it->second.kind_case() != google::protobuf::Value::kNumberValue ||
        !(it->second.number_value() >= 1) || it->second.number_value() > (1 << 24) ||
        std::floor(it->second.number_value()) != it->second.number_value()) {
      return Bad(source, absl::StrCat("config.json: ", key, " is missing or not a size in [1, 2^24]"));
    }
    *out = static_cast<int64_t>(it->second.number_value());
    return absl::OkStatus();
  };
  auto text = [&](const char* key, const std::string& fallback) {
    auto it = f.find(key);
    return it == f.end() ? fallback : it->second.string_value();
  };
  if (text("model_type", "gpt2") != "gpt2") {
    return Bad(source, "config.json: model_type is '" + text("model_type", "") + "', not gpt2");
  }
  LlmcModel m;
  LlmcHeader& h = m.header;
  for (auto [key, field] : {std::pair{"vocab_size", &h.vocab}, {"n_positions", &h.max_seq_len},
                            {"n_embd", &h.channels}, {"n_layer", &h.n_layer},
                            {"n_head", &h.n_head}}) {
    if (auto s = number(key, field); !s.ok()) return s;
  }
  if (h.channels % h.n_head != 0) {
    return Bad(source, absl::StrFormat("config.json: n_embd=%d does not divide by n_head=%d",
                                       h.channels, h.n_head));
  }
  const std::string act = text("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh") {
    return Bad(source, "config.json: activation_function '" + act +
                           "' is not GELU's tanh form (gelu_new), which Mantissa's GPT-2 computes");
  }
  if (auto it = f.find("layer_norm_epsilon");
      it != f.end() && it->second.number_value() != 1e-5) {
    return Bad(source, absl::StrFormat("config.json: layer_norm_epsilon=%g, Mantissa's GPT-2 "
                                       "uses 1e-05", it->second.number_value()));
  }
  if (auto it = f.find("n_inner");
      it != f.end() && it->second.kind_case() != google::protobuf::Value::kNullValue &&
      it->second.number_value() != 4.0 * static_cast<double>(h.channels)) {
    return Bad(source, "config.json: n_inner is not 4 x n_embd");
  }
  h.padded_vocab = PaddedVocab(h.vocab);
  h.version = kLlmcVersionF32;
  m.specs = Gpt2ParamSpecs(ConfigOfHeader(h), h.padded_vocab);
  for (const ParamSpec& s : m.specs) {
    int64_t n = 1;
    for (int64_t d : s.dims) n *= d;
    m.params.emplace_back(static_cast<size_t>(n), 0.0f);
  }

  std::map<std::string, const SafeTensor*> by_name;
  for (const SafeTensor& t : tensors) {
    std::string name = t.name;
    if (name.rfind("transformer.", 0) != 0 && name != "lm_head.weight") {
      name = "transformer." + name;  // the original gpt2 files have no prefix
    }
    if (name.find(".attn.bias") != std::string::npos ||
        name.find(".attn.masked_bias") != std::string::npos) {
      continue;  // older files' causal-mask buffers, not parameters
    }
    if (!by_name.emplace(name, &t).second) return Bad(source, "tensor " + name + " appears twice");
  }
  std::set<std::string> used;
  for (const Place& p : Places(h)) {
    auto it = by_name.find(p.hf_name);
    if (it == by_name.end()) return Bad(source, "model.safetensors has no " + p.hf_name);
    const SafeTensor& t = *it->second;
    if (t.shape != HfShape(p)) {
      std::string got, want;
      for (int64_t d : t.shape) absl::StrAppend(&got, got.empty() ? "" : ",", d);
      for (int64_t d : HfShape(p)) absl::StrAppend(&want, want.empty() ? "" : ",", d);
      return Bad(source, absl::StrCat(p.hf_name, " has shape [", got, "], config.json says [",
                                      want, "]"));
    }
    const std::vector<float> v = DecodeSafeTensorFloats(t);
    std::vector<float>& dst = m.params[static_cast<size_t>(SpecIndex(m, p.param))];
    const int64_t cols = std::max<int64_t>(p.cols, 1), offset = SliceOffset(p);
    for (int64_t r = 0; r < p.rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        dst[static_cast<size_t>(offset + r * cols + c)] =
            v[static_cast<size_t>(p.transpose ? c * p.rows + r : r * cols + c)];
      }
    }
    used.insert(p.hf_name);
  }
  for (const auto& [name, t] : by_name) {
    if (used.count(name)) continue;
    if (name == "lm_head.weight") {
      const SafeTensor& wte = *by_name.at("transformer.wte.weight");
      if (t->shape != wte.shape || DecodeSafeTensorFloats(*t) != DecodeSafeTensorFloats(wte)) {
        return Bad(source, "lm_head.weight differs from transformer.wte.weight: untied output "
                           "layers are not supported (Mantissa's GPT-2 ties them)");
      }
      continue;
    }
    return Bad(source, "model.safetensors has " + name + ", which GPT-2 as Mantissa builds it "
                       "does not have");
  }
  return m;
}

}  // namespace mnt::gpt2
