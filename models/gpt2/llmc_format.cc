#include "models/gpt2/llmc_format.h"

#include <cstring>

#include "plugins/backends/common/float_convert.h"

namespace mnt::gpt2 {
namespace {

int64_t Numel(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

int64_t TotalParams(const std::vector<ParamSpec>& specs) {
  int64_t n = 0;
  for (const ParamSpec& s : specs) n += Numel(s.dims);
  return n;
}

// Header sizes are int32 in the file; these bounds keep every product of
// them far from overflowing int64.
sdk::Status CheckHeader(const LlmcHeader& h, const std::string& source) {
  struct Field { const char* name; int64_t value; };
  const Field fields[] = {{"max_seq_len", h.max_seq_len}, {"vocab_size", h.vocab},
                          {"num_layers", h.n_layer},      {"num_heads", h.n_head},
                          {"channels", h.channels},
                          {"padded_vocab_size", h.padded_vocab}};
  for (const Field& f : fields) {
    if (f.value < 1 || f.value > (int64_t{1} << 24)) {
      return sdk::InvalidArgument(sdk::Format(
          "%s: llm.c header field %s=%lld is out of range", source.c_str(),
          f.name, static_cast<long long>(f.value)));
    }
  }
  if (h.channels % h.n_head != 0) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: llm.c header channels=%lld does not divide by num_heads=%lld",
        source.c_str(), (long long)h.channels, (long long)h.n_head));
  }
  if (h.padded_vocab != PaddedVocab(h.vocab)) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: llm.c header padded_vocab_size=%lld, expected %lld (vocab_size "
        "%lld rounded up to a multiple of %lld)",
        source.c_str(), (long long)h.padded_vocab,
        (long long)PaddedVocab(h.vocab), (long long)h.vocab,
        (long long)kVocabMultiple));
  }
  return sdk::Status::Ok();
}

}  // namespace

Gpt2Config ConfigOfHeader(const LlmcHeader& header) {
  Gpt2Config c;
  c.preset = "";
  c.n_layer = header.n_layer;
  c.n_head = header.n_head;
  c.d_model = header.channels;
  c.seq_len = header.max_seq_len;
  c.vocab = header.vocab;
  return c;
}

sdk::Status ParseLlmc(const std::string& bytes, const std::string& source,
                      LlmcModel* out) {
  if (bytes.size() < kLlmcHeaderBytes) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: truncated llm.c checkpoint: %zu bytes, the header alone is %zu",
        source.c_str(), bytes.size(), kLlmcHeaderBytes));
  }
  int32_t raw[kLlmcHeaderInts];
  std::memcpy(raw, bytes.data(), kLlmcHeaderBytes);
  if (raw[0] != kLlmcMagic) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: not an llm.c GPT-2 checkpoint (magic %d, expected %d)",
        source.c_str(), raw[0], kLlmcMagic));
  }
  if (raw[1] != kLlmcVersionF32 && raw[1] != kLlmcVersionBf16) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: unsupported llm.c checkpoint version %d (supported: 3 fp32, 5 "
        "bf16)",
        source.c_str(), raw[1]));
  }
  LlmcModel m;
  m.header.version = raw[1];
  m.header.max_seq_len = raw[2];
  m.header.vocab = raw[3];
  m.header.n_layer = raw[4];
  m.header.n_head = raw[5];
  m.header.channels = raw[6];
  m.header.padded_vocab = raw[7];
  MNT_RETURN_IF_ERROR(CheckHeader(m.header, source));
  m.specs = Gpt2ParamSpecs(ConfigOfHeader(m.header), m.header.padded_vocab);
  const size_t elem = m.header.version == kLlmcVersionF32 ? 4 : 2;
  const size_t expected =
      kLlmcHeaderBytes + static_cast<size_t>(TotalParams(m.specs)) * elem;
  if (bytes.size() != expected) {
    return sdk::InvalidArgument(sdk::Format(
        "%s: %s llm.c checkpoint: %zu bytes, the header's configuration needs "
        "%zu",
        source.c_str(), bytes.size() < expected ? "truncated" : "over-long",
        bytes.size(), expected));
  }
  const char* p = bytes.data() + kLlmcHeaderBytes;
  for (const ParamSpec& s : m.specs) {
    std::vector<float> t(static_cast<size_t>(Numel(s.dims)));
    if (elem == 4) {
      std::memcpy(t.data(), p, t.size() * 4);
    } else {
      for (size_t i = 0; i < t.size(); ++i) {
        uint16_t b;
        std::memcpy(&b, p + 2 * i, 2);
        t[i] = BitsToFloat(Bf16BitsToF32Bits(b));
      }
    }
    p += t.size() * elem;
    m.params.push_back(std::move(t));
  }
  *out = std::move(m);
  return sdk::Status::Ok();
}

sdk::Status EncodeLlmc(const LlmcModel& model, int32_t version,
                       std::string* bytes) {
  if (version != kLlmcVersionF32 && version != kLlmcVersionBf16) {
    return sdk::InvalidArgument(sdk::Format(
        "llm.c export: version %d is not 3 (fp32) or 5 (bf16)", version));
  }
  LlmcHeader h = model.header;
  h.version = version;
  MNT_RETURN_IF_ERROR(CheckHeader(h, "llm.c export"));
  const std::vector<ParamSpec> specs =
      Gpt2ParamSpecs(ConfigOfHeader(h), h.padded_vocab);
  if (model.params.size() != specs.size()) {
    return sdk::InvalidArgument(sdk::Format(
        "llm.c export: %zu parameter tensors, the configuration has %zu",
        model.params.size(), specs.size()));
  }
  int32_t raw[kLlmcHeaderInts] = {};
  raw[0] = kLlmcMagic;
  raw[1] = version;
  raw[2] = static_cast<int32_t>(h.max_seq_len);
  raw[3] = static_cast<int32_t>(h.vocab);
  raw[4] = static_cast<int32_t>(h.n_layer);
  raw[5] = static_cast<int32_t>(h.n_head);
  raw[6] = static_cast<int32_t>(h.channels);
  raw[7] = static_cast<int32_t>(h.padded_vocab);
  const size_t elem = version == kLlmcVersionF32 ? 4 : 2;
  std::string b(reinterpret_cast<const char*>(raw), kLlmcHeaderBytes);
  b.reserve(kLlmcHeaderBytes + static_cast<size_t>(TotalParams(specs)) * elem);
  for (size_t k = 0; k < specs.size(); ++k) {
    const std::vector<float>& t = model.params[k];
    if (static_cast<int64_t>(t.size()) != Numel(specs[k].dims)) {
      return sdk::InvalidArgument(sdk::Format(
          "llm.c export: tensor '%s' has %zu elements, the configuration "
          "needs %lld",
          specs[k].name.c_str(), t.size(),
          static_cast<long long>(Numel(specs[k].dims))));
    }
    if (elem == 4) {
      b.append(reinterpret_cast<const char*>(t.data()), t.size() * 4);
    } else {
      for (float v : t) {
        const uint16_t h16 = FloatToBf16Bits(v);
        b.append(reinterpret_cast<const char*>(&h16), 2);
      }
    }
  }
  *bytes = std::move(b);
  return sdk::Status::Ok();
}

sdk::Status CheckLlmcMatchesConfig(const LlmcHeader& header,
                                   const Gpt2Config& config,
                                   const std::string& source) {
  struct Field { const char* name; int64_t file, model; };
  const Field fields[] = {
      {"num_layers vs n_layer", header.n_layer, config.n_layer},
      {"num_heads vs n_head", header.n_head, config.n_head},
      {"channels vs d_model", header.channels, config.d_model},
      {"max_seq_len vs seq_len", header.max_seq_len, config.seq_len},
      {"vocab_size vs vocab", header.vocab,
       config.vocab == 0 ? header.vocab : config.vocab},
  };
  for (const Field& f : fields) {
    if (f.file != f.model) {
      return sdk::InvalidArgument(sdk::Format(
          "%s: llm.c checkpoint does not match the model options: %s: file "
          "%lld, model %lld",
          source.c_str(), f.name, (long long)f.file, (long long)f.model));
    }
  }
  return sdk::Status::Ok();
}

}  // namespace mnt::gpt2
