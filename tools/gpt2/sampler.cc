#include "tools/gpt2/sampler.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "models/gpt2/gpt2_model.h"
#include "plugins/backends/cpu/cpu_backend.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/backend_client.h"
#include "plugins/sdk/tensor.h"
#include "tools/gpt2/llmc_convert.h"

namespace mnt::gpt2 {
namespace {

std::string Take(const MNT_Plugin_Api* plugin, MNT_Error* e) {
  if (e == nullptr) return "";
  std::string m = plugin->Error_Message(e);
  plugin->Error_Destroy(e);
  return m;
}

// splitmix64: the same stream on every platform (no <random> distributions).
double NextUniform(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

}  // namespace

int64_t PickToken(const std::vector<float>& logits, float temperature,
                  int64_t top_k, double uniform) {
  const int64_t n = static_cast<int64_t>(logits.size());
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return logits[a] > logits[b];
  });
  if (temperature <= 0.0f) return order[0];
  const int64_t k = top_k <= 0 ? n : std::min(top_k, n);
  std::vector<double> p(static_cast<size_t>(k));
  const double top = logits[order[0]];
  double sum = 0;
  for (int64_t i = 0; i < k; ++i) {
    p[i] = std::exp((logits[order[i]] - top) / temperature);
    sum += p[i];
  }
  double target = uniform * sum;
  for (int64_t i = 0; i < k; ++i) {
    target -= p[i];
    if (target < 0) return order[i];
  }
  return order[k - 1];
}

struct Gpt2Sampler::State {
  const MNT_Plugin_Api* backend_plugin = nullptr;
  sdk::BackendClient client;
  MNT_Model* model = nullptr;
  std::vector<sdk::DeviceBuffer> buffers;
  std::vector<MNT_Tensor> params;
  MNT_Tensor ids{}, targets{}, loss{};
  int64_t vocab = 0, padded_vocab = 0, context = 0;

  ~State() {
    if (model != nullptr) {
      MNT_Model_Destroy_Args d{};
      d.struct_size = MNT_Model_Destroy_Args_STRUCT_SIZE;
      d.model = model;
      Take(Gpt2PluginApi(), Gpt2PluginApi()->model->Model_Destroy(&d));
    }
    buffers.clear();
    if (client.backend() != nullptr) {
      MNT_Backend_Destroy_Args d{};
      d.struct_size = MNT_Backend_Destroy_Args_STRUCT_SIZE;
      d.backend = client.backend();
      Take(backend_plugin, backend_plugin->backend->Backend_Destroy(&d));
    }
  }

  absl::StatusOr<MNT_Tensor> Alloc(MNT_DType dtype,
                                   const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    buffers.emplace_back();
    if (auto s = sdk::ToAbsl(client.Allocate(
            static_cast<size_t>(n) * sdk::DTypeSize(dtype), MNT_MEMORY_DATA,
            &buffers.back()));
        !s.ok())
      return s;
    return sdk::MakeTensor(buffers.back().data(), dtype,
                           static_cast<int32_t>(dims.size()), dims.data());
  }
};

Gpt2Sampler::Gpt2Sampler(std::unique_ptr<State> state)
    : state_(std::move(state)) {}
Gpt2Sampler::~Gpt2Sampler() = default;
int64_t Gpt2Sampler::vocab() const { return state_->vocab; }
int64_t Gpt2Sampler::context() const { return state_->context; }

absl::StatusOr<std::unique_ptr<Gpt2Sampler>> Gpt2Sampler::Create(
    const trainer::CheckpointData& ckpt, const VocabHint& vocab,
    const std::string& source) {
  // The llm.c view resolves the vocabulary and checks every tensor.
  auto weights = LlmcFromCheckpoint(ckpt, vocab, source);
  if (!weights.ok()) return weights.status();
  auto st = std::make_unique<State>();
  st->vocab = weights->header.vocab;
  st->padded_vocab = weights->header.padded_vocab;
  st->context = weights->header.max_seq_len;

  st->backend_plugin = cpu::CpuBackendPluginApi();
  MNT_Backend_Create_Args bc{};
  bc.struct_size = MNT_Backend_Create_Args_STRUCT_SIZE;
  if (std::string e = Take(st->backend_plugin,
                           st->backend_plugin->backend->Backend_Create(&bc));
      !e.empty())
    return absl::InternalError(e);
  st->client = sdk::BackendClient(st->backend_plugin, bc.backend);

  // Checkpointing only matters for training; the rest of the options stand.
  const std::string options = ckpt.model_options();
  MNT_Model_Create_Args mc{};
  mc.struct_size = MNT_Model_Create_Args_STRUCT_SIZE;
  mc.options = options.c_str();
  mc.backend_plugin = st->backend_plugin;
  mc.backend = st->client.backend();
  mc.data_spec.struct_size = MNT_DataSpec_STRUCT_SIZE;
  mc.data_spec.input_dtype = MNT_DTYPE_I32;
  mc.data_spec.input_rank = 1;
  mc.data_spec.input_dims[0] = st->context;
  mc.data_spec.num_classes = st->vocab;
  mc.data_spec.targets_per_example = static_cast<int32_t>(st->context);
  mc.precision = {MNT_ModelPrecision_STRUCT_SIZE, MNT_DTYPE_F32, MNT_DTYPE_F32,
                  MNT_DTYPE_F32, MNT_COMPUTE_F32};
  mc.max_batch_size = 1;
  if (std::string e =
          Take(Gpt2PluginApi(), Gpt2PluginApi()->model->Model_Create(&mc));
      !e.empty())
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", e));
  st->model = mc.model;

  for (size_t k = 0; k < weights->specs.size(); ++k) {
    auto t = st->Alloc(MNT_DTYPE_F32, weights->specs[k].dims);
    if (!t.ok()) return t.status();
    const std::vector<float>& v = weights->params[k];
    if (auto s = sdk::ToAbsl(st->client.ToDevice(t->data, v.data(), v.size() * 4));
        !s.ok())
      return s;
    st->params.push_back(*t);
  }
  // A LoRA run's adapters (plugins/sdk/model/lora.h) follow the network's
  // parameters: the checkpoint's tensors of the names the model gives them.
  MNT_Model_GetParamCount_Args count{};
  count.struct_size = MNT_Model_GetParamCount_Args_STRUCT_SIZE;
  count.model = st->model;
  if (std::string e = Take(Gpt2PluginApi(), Gpt2PluginApi()->model->Model_GetParamCount(&count));
      !e.empty())
    return absl::InternalError(e);
  for (int64_t k = static_cast<int64_t>(st->params.size()); k < count.num_params; ++k) {
    MNT_Model_GetParamSpec_Args spec{};
    spec.struct_size = MNT_Model_GetParamSpec_Args_STRUCT_SIZE;
    spec.model = st->model;
    spec.index = k;
    if (std::string e = Take(Gpt2PluginApi(), Gpt2PluginApi()->model->Model_GetParamSpec(&spec));
        !e.empty())
      return absl::InternalError(e);
    const std::vector<int64_t> dims(spec.dims, spec.dims + spec.rank);
    const trainer::TensorData* found = nullptr;
    for (const trainer::TensorData& t : ckpt.tensors()) {
      if (t.name() == spec.name) found = &t;
    }
    if (found == nullptr || found->dtype() != MNT_DTYPE_F32 ||
        std::vector<int64_t>(found->dims().begin(), found->dims().end()) != dims) {
      return absl::InvalidArgumentError(absl::StrCat(
          source, ": checkpoint has no fp32 tensor '", spec.name, "' of the model's shape"));
    }
    auto t = st->Alloc(MNT_DTYPE_F32, dims);
    if (!t.ok()) return t.status();
    if (auto s = sdk::ToAbsl(
            st->client.ToDevice(t->data, found->data().data(), found->data().size()));
        !s.ok())
      return s;
    st->params.push_back(*t);
  }
  auto ids = st->Alloc(MNT_DTYPE_I32, {1, st->context});
  auto targets = st->Alloc(MNT_DTYPE_I32, {1, st->context});
  auto loss = st->Alloc(MNT_DTYPE_F32, {1});
  if (!ids.ok()) return ids.status();
  if (!targets.ok()) return targets.status();
  if (!loss.ok()) return loss.status();
  st->ids = *ids;
  st->targets = *targets;
  st->loss = *loss;
  std::vector<int32_t> zeros(static_cast<size_t>(st->context), 0);
  if (auto s = sdk::ToAbsl(st->client.ToDevice(st->targets.data, zeros.data(),
                                           zeros.size() * 4));
      !s.ok())
    return s;
  return std::unique_ptr<Gpt2Sampler>(new Gpt2Sampler(std::move(st)));
}

absl::Status Gpt2Sampler::CheckTokens(const std::vector<int32_t>& tokens) const {
  if (tokens.empty()) return absl::InvalidArgumentError("the prompt needs at least one token");
  for (int32_t t : tokens) {
    if (t < 0 || t >= state_->vocab) {
      return absl::InvalidArgumentError(absl::StrCat(
          "prompt token ", t, " is outside the vocabulary [0, ", state_->vocab, ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Gpt2Sampler::Forward(const std::vector<int32_t>& tokens) {
  State& st = *state_;
  // The last `context` tokens, zero-padded on the right: attention is
  // causal, so the padding does not change the rows before it.
  const int64_t n = std::min<int64_t>(tokens.size(), st.context);
  std::vector<int32_t> window(static_cast<size_t>(st.context), 0);
  std::copy(tokens.end() - n, tokens.end(), window.begin());
  if (auto s = sdk::ToAbsl(st.client.ToDevice(st.ids.data, window.data(), window.size() * 4));
      !s.ok())
    return s;
  MNT_Model_Forward_Args f{};
  f.struct_size = MNT_Model_Forward_Args_STRUCT_SIZE;
  f.model = st.model;
  f.params = st.params.data();
  f.num_params = st.params.size();
  f.inputs = &st.ids;
  f.targets = &st.targets;
  f.training = 0;
  f.loss_out = &st.loss;
  if (std::string e = Take(Gpt2PluginApi(), Gpt2PluginApi()->model->Model_Forward(&f));
      !e.empty())
    return absl::InternalError(e);
  return n;
}

absl::Status Gpt2Sampler::LogitsRow(int64_t row, std::vector<float>* out) {
  State& st = *state_;
  const MNT_Tensor logits = NetworkOf(st.model)->Logits(1);
  std::vector<float> padded(static_cast<size_t>(st.padded_vocab));
  const char* base = static_cast<const char*>(logits.data);
  if (auto s = sdk::ToAbsl(st.client.ToHost(padded.data(),
                                            base + row * st.padded_vocab * sizeof(float),
                                            padded.size() * sizeof(float)));
      !s.ok())
    return s;
  out->assign(padded.begin(), padded.begin() + st.vocab);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<float>> Gpt2Sampler::Logits(const std::vector<int32_t>& tokens) {
  if (auto s = CheckTokens(tokens); !s.ok()) return s;
  if (static_cast<int64_t>(tokens.size()) > state_->context) {
    return absl::InvalidArgumentError(absl::StrCat(tokens.size(), " tokens do not fit the ",
                                                   state_->context, "-token context"));
  }
  auto n = Forward(tokens);
  if (!n.ok()) return n.status();
  std::vector<float> all, row;
  for (int64_t r = 0; r < *n; ++r) {
    if (auto s = LogitsRow(r, &row); !s.ok()) return s;
    all.insert(all.end(), row.begin(), row.end());
  }
  return all;
}

absl::StatusOr<std::vector<int32_t>> Gpt2Sampler::Generate(
    const std::vector<int32_t>& prompt, const SampleOptions& o) {
  if (auto s = CheckTokens(prompt); !s.ok()) return s;
  std::vector<int32_t> tokens = prompt, out;
  uint64_t rng = o.seed;
  std::vector<float> real;
  for (int64_t step = 0; step < o.max_new_tokens; ++step) {
    auto n = Forward(tokens);
    if (!n.ok()) return n.status();
    if (auto s = LogitsRow(*n - 1, &real); !s.ok()) return s;
    const int64_t next = PickToken(real, o.temperature, o.top_k, NextUniform(&rng));
    tokens.push_back(static_cast<int32_t>(next));
    out.push_back(static_cast<int32_t>(next));
  }
  return out;
}

}  // namespace mnt::gpt2
