// Hugging Face GPT-2 conversion: random models round-trip bit for bit
// through model.safetensors (fp32; bf16 files round-trip as files), the
// Conv1D weights come out transposed, the reader refuses malformed files,
// and the importer refuses what Mantissa's GPT-2 cannot compute.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "plugins/backends/common/float_convert.h"
#include "models/gpt2/hf_gpt2.h"
#include "models/gpt2/safetensors.h"

namespace mnt::gpt2 {
namespace {

LlmcModel RandomModel(uint32_t seed, int64_t vocab = 200) {
  LlmcModel m;
  m.header.vocab = vocab;
  m.header.padded_vocab = PaddedVocab(vocab);
  m.header.max_seq_len = 16;
  m.header.n_layer = 2;
  m.header.n_head = 2;
  m.header.channels = 8;
  m.specs = Gpt2ParamSpecs(ConfigOfHeader(m.header), m.header.padded_vocab);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  for (const ParamSpec& s : m.specs) {
    int64_t n = 1;
    for (int64_t d : s.dims) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = normal(rng);
    if (s.name == "wte") {  // llm.c's padding rows are zero
      std::fill(v.begin() + vocab * m.header.channels, v.end(), 0.0f);
    }
    m.params.push_back(std::move(v));
  }
  return m;
}

const std::vector<float>& Param(const LlmcModel& m, const std::string& name) {
  for (size_t i = 0; i < m.specs.size(); ++i) {
    if (m.specs[i].name == name) return m.params[i];
  }
  static const std::vector<float> none;
  ADD_FAILURE() << "no " << name;
  return none;
}

const SafeTensor* Find(const std::vector<SafeTensor>& ts, const std::string& name) {
  for (const SafeTensor& t : ts) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

float F32At(const SafeTensor& t, int64_t i) {
  float f;
  std::memcpy(&f, t.bytes.data() + 4 * i, 4);
  return f;
}

std::string File(const LlmcModel& m, bool bf16) {
  auto tensors = HfTensorsFromLlmc(m, bf16);
  EXPECT_TRUE(tensors.ok()) << tensors.status();
  return EncodeSafetensors(*tensors, {{"format", "pt"}});
}

TEST(HfGpt2Test, Fp32RoundTripsBitForBit) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    const LlmcModel m = RandomModel(seed);
    const std::string file = File(m, false);
    auto parsed = ParseSafetensors(file, "model.safetensors");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->size(), 4u + 12u * 2u);  // wte, wpe, ln_f x2, 12 per layer
    auto back = LlmcFromHf(HfConfigJson(m.header, false), *parsed, "hf");
    ASSERT_TRUE(back.ok()) << back.status();
    ASSERT_EQ(back->params.size(), m.params.size());
    for (size_t i = 0; i < m.params.size(); ++i) {
      ASSERT_EQ(back->params[i].size(), m.params[i].size());
      EXPECT_EQ(std::memcmp(back->params[i].data(), m.params[i].data(),
                            m.params[i].size() * sizeof(float)), 0)
          << m.specs[i].name;
    }
    EXPECT_EQ(File(*back, false), file);
  }
}

TEST(HfGpt2Test, Conv1DWeightsAreTransposedAndWteLosesItsPadding) {
  const LlmcModel m = RandomModel(7);
  auto tensors = HfTensorsFromLlmc(m, false);
  ASSERT_TRUE(tensors.ok());
  const int64_t C = m.header.channels;
  const SafeTensor* c_attn = Find(*tensors, "transformer.h.1.attn.c_attn.weight");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_EQ(c_attn->shape, (std::vector<int64_t>{C, 3 * C}));
  // HF [in=i][out=o] is llm.c's qkvw[layer 1][o][i].
  const std::vector<float>& qkvw = Param(m, "qkvw");
  for (int64_t i : {0, 3, 7}) {
    for (int64_t o : {0, 5, 23}) {
      EXPECT_EQ(F32At(*c_attn, i * 3 * C + o), qkvw[static_cast<size_t>(1 * 3 * C * C + o * C + i)]);
    }
  }
  const SafeTensor* fc_proj = Find(*tensors, "transformer.h.0.mlp.c_proj.weight");
  ASSERT_NE(fc_proj, nullptr);
  EXPECT_EQ(fc_proj->shape, (std::vector<int64_t>{4 * C, C}));
  const SafeTensor* wte = Find(*tensors, "transformer.wte.weight");
  ASSERT_NE(wte, nullptr);
  EXPECT_EQ(wte->shape, (std::vector<int64_t>{200, C}));  // not the padded 256
  EXPECT_EQ(Find(*tensors, "lm_head.weight"), nullptr);   // tied to wte
}

TEST(HfGpt2Test, Bf16IsRoundedToNearestEvenAndRoundTripsAsAFile) {
  const LlmcModel m = RandomModel(11);
  const std::string file = File(m, true);
  auto parsed = ParseSafetensors(file, "bf16");
  ASSERT_TRUE(parsed.ok());
  const SafeTensor* wpe = Find(*parsed, "transformer.wpe.weight");
  ASSERT_NE(wpe, nullptr);
  EXPECT_EQ(wpe->dtype, "BF16");
  const std::vector<float>& src = Param(m, "wpe");
  for (size_t i = 0; i < src.size(); ++i) {
    uint16_t b;
    std::memcpy(&b, wpe->bytes.data() + 2 * i, 2);
    ASSERT_EQ(b, FloatToBf16Bits(src[i])) << i;
  }
  auto back = LlmcFromHf(HfConfigJson(m.header, true), *parsed, "bf16");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(File(*back, true), file);
}

TEST(HfGpt2Test, TheOriginalFilesNamesAndBuffersAndATiedHeadAreAccepted) {
  const LlmcModel m = RandomModel(5);
  auto tensors = HfTensorsFromLlmc(m, false);
  ASSERT_TRUE(tensors.ok());
  std::vector<SafeTensor> hub;  // openai-community/gpt2's names: no prefix
  for (SafeTensor t : *tensors) {
    t.name = t.name.substr(std::string("transformer.").size());
    hub.push_back(t);
  }
  hub.push_back({"h.0.attn.bias", "F32", {1}, std::string(4, '\0')});
  SafeTensor head = *Find(*tensors, "transformer.wte.weight");
  head.name = "lm_head.weight";
  hub.push_back(head);
  auto back = LlmcFromHf(HfConfigJson(m.header, false),
                         *ParseSafetensors(EncodeSafetensors(hub, {}), "hub"), "hub");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->params, m.params);
}

TEST(HfGpt2Test, F16TensorsWidenExactly) {
  const LlmcModel m = RandomModel(9);
  auto tensors = HfTensorsFromLlmc(m, false);
  ASSERT_TRUE(tensors.ok());
  for (SafeTensor& t : *tensors) {  // as fp16, then what the importer must read
    std::string half(t.bytes.size() / 2, '\0');
    for (size_t i = 0; i < t.bytes.size() / 4; ++i) {
      const uint16_t h = FloatToHalfBits(F32At(t, static_cast<int64_t>(i)));
      std::memcpy(half.data() + 2 * i, &h, 2);
    }
    t.dtype = "F16";
    t.bytes = half;
  }
  auto back = LlmcFromHf(HfConfigJson(m.header, false), *tensors, "f16");
  ASSERT_TRUE(back.ok()) << back.status();
  const std::vector<float>& src = Param(m, "lnfw");
  const std::vector<float>& got = Param(*back, "lnfw");
  for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(got[i], HalfBitsToFloat(FloatToHalfBits(src[i])));
}

std::string ErrorOf(const std::string& file) {
  auto parsed = ParseSafetensors(file, "x.safetensors");
  return parsed.ok() ? "" : std::string(parsed.status().message());
}

TEST(SafetensorsTest, MalformedFilesAreRefusedInOneLine) {
  const std::vector<SafeTensor> ts = {{"a", "F32", {2}, std::string(8, '\1')},
                                      {"b", "BF16", {3}, std::string(6, '\2')}};
  const std::string good = EncodeSafetensors(ts, {{"format", "pt"}});
  EXPECT_EQ(ErrorOf(good), "");
  EXPECT_EQ((good.size() - 8 - 14) % 8, 0u);  // the header is padded to 8 bytes
  for (const std::string& bad :
       {good.substr(0, 5), good.substr(0, good.size() - 1), good + "x",
        std::string("\x02\0\0\0\0\0\0\0{]", 10),
        EncodeSafetensors({{"a", "F64", {1}, std::string(8, '\0')}}, {}),
        EncodeSafetensors({{"a", "F32", {3}, std::string(8, '\0')}}, {})}) {
    const std::string e = ErrorOf(bad);
    EXPECT_NE(e.find("x.safetensors: not a safetensors file: "), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // A gap: b's offsets moved one element on.
  std::string gap = good;
  const size_t at = gap.find("[8,14]");
  ASSERT_NE(at, std::string::npos);
  gap.replace(at, 6, "[9,15]");
  EXPECT_NE(ErrorOf(gap).find("data_offsets"), std::string::npos) << ErrorOf(gap);
}

TEST(HfGpt2Test, WhatMantissasGpt2CannotComputeIsRefused) {
  const LlmcModel m = RandomModel(3);
  auto tensors = HfTensorsFromLlmc(m, false);
  ASSERT_TRUE(tensors.ok());
  const std::string config = HfConfigJson(m.header, false);
  auto error = [&](const std::string& cfg, const std::vector<SafeTensor>& ts) {
    auto r = LlmcFromHf(cfg, ts, "hf_model");
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  std::string relu = config;
  relu.replace(relu.find("gelu_new"), 8, "relu");
  EXPECT_NE(error(relu, *tensors).find("activation_function 'relu'"), std::string::npos);
  std::string eps = config;
  eps.replace(eps.find("1e-05"), 5, "1e-06");
  EXPECT_NE(error(eps, *tensors).find("layer_norm_epsilon"), std::string::npos);
  EXPECT_NE(error("[]", *tensors).find("not a JSON object"), std::string::npos);
  std::vector<SafeTensor> missing(tensors->begin() + 1, tensors->end());
  EXPECT_NE(error(config, missing).find("has no transformer.wte.weight"), std::string::npos);
  std::vector<SafeTensor> extra = *tensors;
  extra.push_back({"transformer.h.0.attn.q_norm.weight", "F32", {1}, std::string(4, '\0')});
  EXPECT_NE(error(config, extra).find("q_norm"), std::string::npos);
  std::vector<SafeTensor> untied = *tensors;
  SafeTensor head = *Find(*tensors, "transformer.wte.weight");
  head.name = "lm_head.weight";
  head.bytes[0] ^= 1;
  untied.push_back(head);
  EXPECT_NE(error(config, untied).find("untied"), std::string::npos);
  std::vector<SafeTensor> misshapen = *tensors;
  misshapen[1].shape = {8, 16};
  EXPECT_NE(error(config, misshapen).find("has shape [8,16]"), std::string::npos);
}

}  // namespace
}  // namespace mnt::gpt2
