#include "tools/gpt2/llmc_convert.h"

#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "plugins/abi/mnt_common.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/model/lora.h"

namespace mnt::gpt2 {
namespace {

using trainer::CheckpointData;
using trainer::TensorData;

absl::Status Invalid(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

}  // namespace

absl::StatusOr<CheckpointData> CheckpointFromLlmc(const LlmcModel& model,
                                                  const ImportOptions& o,
                                                  const std::string& source) {
  Gpt2Config config;
  if (auto s = sdk::ToAbsl(ParseGpt2Options(o.model_options.c_str(), &config));
      !s.ok())
    return s;
  if (auto s = sdk::ToAbsl(CheckLlmcMatchesConfig(model.header, config, source));
      !s.ok())
    return s;
  const bool known_precision = o.precision == "fp32" || o.precision == "tf32" ||
                               o.precision == "bf16" || o.precision == "fp16";
  if (!known_precision) {
    return Invalid(source, absl::StrCat("--precision=", o.precision,
                                        " is not fp32, tf32, bf16 or fp16"));
  }
  if (o.optimizer != "adamw" && o.optimizer != "adam" && o.optimizer != "sgd") {
    return Invalid(source, absl::StrCat("--optimizer=", o.optimizer,
                                        " is not adamw, adam or sgd"));
  }
  CheckpointData ckpt;
  ckpt.set_model("gpt2");
  ckpt.set_model_options(o.model_options);
  ckpt.set_precision(o.precision);
  ckpt.set_step(0);
  (*ckpt.mutable_metadata())["applied_steps"] = "0";
  (*ckpt.mutable_metadata())["optimizer"] = o.optimizer;
  (*ckpt.mutable_metadata())[kLlmcVocabKey] = absl::StrCat(model.header.vocab);
  (*ckpt.mutable_metadata())["imported_from"] = source;
  ckpt.set_sampler_seed(o.seed);
  ckpt.set_sampler_epoch(0);
  ckpt.set_sampler_cursor(0);
  ckpt.set_loss_scale(o.precision == "fp16" ? o.init_scale : 1.0f);
  const bool adam = o.optimizer != "sgd";
  for (size_t k = 0; k < model.specs.size(); ++k) {
    const ParamSpec& spec = model.specs[k];
    const std::vector<float>& values = model.params[k];
    auto add = [&](const std::string& name, bool zero) {
      TensorData* t = ckpt.add_tensors();
      t->set_name(name);
      t->set_dtype(MNT_DTYPE_F32);
      for (int64_t d : spec.dims) t->add_dims(d);
      std::string* bytes = t->mutable_data();
      bytes->assign(values.size() * sizeof(float), '\0');
      if (!zero) std::memcpy(bytes->data(), values.data(), bytes->size());
    };
    // The trainer's order: parameter, then its optimizer state.
    add(spec.name, false);
    add("opt.state1/" + spec.name, true);
    if (adam) add("opt.state2/" + spec.name, true);
  }
  return ckpt;
}

absl::StatusOr<LlmcModel> LlmcFromCheckpoint(const CheckpointData& ckpt,
                                             const VocabHint& hint,
                                             const std::string& source) {
  if (ckpt.model() != "gpt2") {
    return Invalid(source, absl::StrCat("checkpoint is for model '",
                                        ckpt.model(), "', not gpt2"));
  }
  // A LoRA run's lora_* options are the model layer's (the adapters are
  // not the llm.c model's: tools/gpt2/peft_lora.h reads them).
  models::LoraConfig lora;
  std::string network_options;
  if (auto s = sdk::ToAbsl(models::TakeLoraOptions("gpt2", ckpt.model_options().c_str(), &lora,
                                                   &network_options));
      !s.ok())
    return Invalid(source, std::string(s.message()));
  Gpt2Config config;
  if (auto s = sdk::ToAbsl(ParseGpt2Options(network_options.c_str(), &config)); !s.ok())
    return Invalid(source, std::string(s.message()));
  const TensorData* wte = nullptr;
  for (const TensorData& t : ckpt.tensors()) {
    if (t.name() == "wte") wte = &t;
  }
  if (wte == nullptr || wte->dims_size() != 2) {
    return Invalid(source, "checkpoint has no 2-D tensor 'wte'");
  }
  const int64_t padded = wte->dims(0);
  int64_t vocab = hint.flag;
  if (vocab == 0) vocab = config.vocab;
  if (vocab == 0) {
    auto it = ckpt.metadata().find(kLlmcVocabKey);
    if (it != ckpt.metadata().end() && !absl::SimpleAtoi(it->second, &vocab)) {
      return Invalid(source, absl::StrCat("bad metadata ", kLlmcVocabKey, "='",
                                          it->second, "'"));
    }
  }
  if (vocab == 0) vocab = hint.run;
  if (vocab == 0 && padded == 50304) vocab = 50257;
  if (vocab == 0 && padded == 256) vocab = 256;
  if (vocab == 0) {
    return Invalid(source, absl::StrCat(
                               "cannot tell the real vocabulary: wte's ", padded,
                               " rows fit any of ", padded - kVocabMultiple + 1, "..",
                               padded, hint.unknown.empty() ? "" : absl::StrCat(", and ", hint.unknown),
                               "; pass --vocab_size=N"));
  }
  if (PaddedVocab(vocab) != padded) {
    return Invalid(source, absl::StrCat("vocab_size ", vocab, " pads to ",
                                        PaddedVocab(vocab), ", but wte has ",
                                        padded, " rows"));
  }
  LlmcModel m;
  m.header.version = kLlmcVersionF32;
  m.header.max_seq_len = config.seq_len;
  m.header.vocab = vocab;
  m.header.n_layer = config.n_layer;
  m.header.n_head = config.n_head;
  m.header.channels = config.d_model;
  m.header.padded_vocab = padded;
  m.specs = Gpt2ParamSpecs(ConfigOfHeader(m.header), padded);
  for (const ParamSpec& spec : m.specs) {
    const TensorData* found = nullptr;
    for (const TensorData& t : ckpt.tensors()) {
      if (t.name() == spec.name) found = &t;
    }
    if (found == nullptr) {
      return Invalid(source, absl::StrCat("checkpoint has no tensor '",
                                          spec.name, "'"));
    }
    const std::vector<int64_t> dims(found->dims().begin(), found->dims().end());
    if (found->dtype() != MNT_DTYPE_F32 || dims != spec.dims) {
      return Invalid(source, absl::StrCat("tensor '", spec.name,
                                          "' is not fp32 of the shape its "
                                          "model options give"));
    }
    std::vector<float> values(found->data().size() / sizeof(float));
    std::memcpy(values.data(), found->data().data(), found->data().size());
    m.params.push_back(std::move(values));
  }
  return m;
}

absl::StatusOr<LlmcModel> LlmcFromCheckpointFile(const std::string& path, const VocabHint& hint) {
  auto ckpt = trainer::ReadCheckpoint(path);
  if (!ckpt.ok()) return ckpt.status();
  return LlmcFromCheckpoint(*ckpt, hint, path);
}

}  // namespace mnt::gpt2
