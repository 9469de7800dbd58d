#include "models/gpt2/gpt2_network.h"

#include <cmath>
#include <numeric>

#include "models/common/tensor_checks.h"
#include "plugins/sdk/tensor.h"

namespace mnt::gpt2 {
namespace {

using sdk::Status;

constexpr float kInitStd = 0.02f;  // GPT-2 / llm.c
constexpr float kLayerNormEps = 1e-5f;
constexpr double kMaxActivationBytes = 1e15;

MNT_Tensor View(void* data, MNT_DType dtype, std::vector<int64_t> dims) {
  return sdk::MakeTensor(data, dtype, static_cast<int32_t>(dims.size()),
                         dims.data());
}

// Layer `layer` of a stacked [L, ...] parameter (or gradient).
MNT_Tensor Slice(const MNT_Tensor& stacked, int layer) {
  std::vector<int64_t> dims(stacked.dims + 1, stacked.dims + stacked.rank);
  const int64_t per_layer = std::accumulate(dims.begin(), dims.end(), int64_t{1},
                                            std::multiplies<int64_t>());
  char* base = static_cast<char*>(stacked.data) +
               layer * per_layer * sdk::DTypeSize(stacked.dtype);
  return View(base, stacked.dtype, dims);
}

Status CheckFloatDType(const char* what, MNT_DType t) {
  if (!sdk::IsFloatStorage(t)) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: precision.%s is %s, expected f32, f16 or bf16", what,
        sdk::DTypeName(t)));
  }
  return Status::Ok();
}

MNT_GemmParams Gemm(MNT_ComputeMode compute, bool trans_a, bool trans_b,
                    bool accumulate) {
  MNT_GemmParams g{};
  g.struct_size = MNT_GemmParams_STRUCT_SIZE;
  g.trans_a = trans_a ? 1 : 0;
  g.trans_b = trans_b ? 1 : 0;
  g.alpha = 1.0f;
  g.beta = accumulate ? 1.0f : 0.0f;
  g.compute = compute;
  return g;
}

MNT_LayerNormParams LayerNorm(bool accumulate) {
  return {MNT_LayerNormParams_STRUCT_SIZE, kLayerNormEps, accumulate ? 1 : 0};
}

MNT_AddParams Add() { return {MNT_AddParams_STRUCT_SIZE, 1.0f, 1.0f}; }

}  // namespace

std::vector<ParamSpec> Gpt2ParamSpecs(const Gpt2Config& c,
                                      int64_t padded_vocab) {
  const int64_t L = c.n_layer, C = c.d_model;
  // Residual projections scaled by 1/sqrt(2L) (GPT-2 paper, llm.c).
  const float proj_std =
      kInitStd / std::sqrt(2.0f * static_cast<float>(L));
  const auto normal = MNT_PARAM_INIT_NORMAL;
  const auto zeros = MNT_PARAM_INIT_ZEROS;
  const auto ones = MNT_PARAM_INIT_ONES;
  return {
      {"wte", {padded_vocab, C}, normal, kInitStd, true},
      {"wpe", {c.seq_len, C}, normal, kInitStd, true},
      {"ln1w", {L, C}, ones, 0.0f, false},
      {"ln1b", {L, C}, zeros, 0.0f, false},
      {"qkvw", {L, 3 * C, C}, normal, kInitStd, true},
      {"qkvb", {L, 3 * C}, zeros, 0.0f, false},
      {"attprojw", {L, C, C}, normal, proj_std, true},
      {"attprojb", {L, C}, zeros, 0.0f, false},
      {"ln2w", {L, C}, ones, 0.0f, false},
      {"ln2b", {L, C}, zeros, 0.0f, false},
      {"fcw", {L, 4 * C, C}, normal, kInitStd, true},
      {"fcb", {L, 4 * C}, zeros, 0.0f, false},
      {"fcprojw", {L, C, 4 * C}, normal, proj_std, true},
      {"fcprojb", {L, C}, zeros, 0.0f, false},
      {"lnfw", {C}, ones, 0.0f, false},
      {"lnfb", {C}, zeros, 0.0f, false},
  };
}

Status Gpt2Network::Create(const MNT_Model_Create_Args& args,
                           std::unique_ptr<Gpt2Network>* out) {
  std::unique_ptr<Gpt2Network> net(new Gpt2Network());
  MNT_RETURN_IF_ERROR(net->Init(args));
  *out = std::move(net);
  return Status::Ok();
}

Status Gpt2Network::Init(const MNT_Model_Create_Args& args) {
  MNT_RETURN_IF_ERROR(ParseGpt2Options(args.options, &config_));
  if (args.backend_plugin == nullptr ||
      args.backend_plugin->backend == nullptr || args.backend == nullptr) {
    return sdk::InvalidArgument(
        "gpt2: backend_plugin (with a backend API) and backend are required");
  }
  client_ = sdk::BackendClient(args.backend_plugin, args.backend);

  const MNT_DataSpec& data = args.data_spec;
  if (data.struct_size < MNT_DataSpec_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: data_spec.struct_size %zu is smaller than %zu", data.struct_size,
        static_cast<size_t>(MNT_DataSpec_STRUCT_SIZE)));
  }
  if (data.input_dtype != MNT_DTYPE_I32 || data.input_rank != 1) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: the data gives %s inputs of rank %d per example; the GPT takes "
        "i32 token ids [seq_len] (use --dataset=text or --dataset=shards)",
        sdk::DTypeName(data.input_dtype), data.input_rank));
  }
  t_ = data.input_dims[0];
  if (t_ < 1 || t_ > config_.seq_len) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: the data's sequence length %lld is outside 1..%lld (the "
        "model's seq_len option)",
        (long long)t_, (long long)config_.seq_len));
  }
  if (data.targets_per_example != t_) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: targets_per_example is %d, expected one per token (%lld)",
        data.targets_per_example, (long long)t_));
  }
  if (config_.vocab != 0 && config_.vocab != data.num_classes) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: vocab=%lld but the data has %lld token ids",
        (long long)config_.vocab, (long long)data.num_classes));
  }
  vocab_ = data.num_classes;
  if (vocab_ < 2 || vocab_ > (int64_t{1} << 24)) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: num_classes (vocabulary) is %lld, expected 2..%lld",
        (long long)vocab_, (long long)(int64_t{1} << 24)));
  }
  config_.vocab = vocab_;
  padded_vocab_ = PaddedVocab(vocab_);

  precision_ = args.precision;
  if (precision_.struct_size < MNT_ModelPrecision_STRUCT_SIZE) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: precision.struct_size %zu is smaller than %zu",
        precision_.struct_size,
        static_cast<size_t>(MNT_ModelPrecision_STRUCT_SIZE)));
  }
  MNT_RETURN_IF_ERROR(CheckFloatDType("weight_dtype", precision_.weight_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType("gradient_dtype", precision_.gradient_dtype));
  MNT_RETURN_IF_ERROR(
      CheckFloatDType("activation_dtype", precision_.activation_dtype));
  if (args.max_batch_size < 1) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2: max_batch_size is %lld, expected at least 1",
        (long long)args.max_batch_size));
  }
  max_batch_ = args.max_batch_size;

  for (MNT_Op op :
       {MNT_OP_GEMM, MNT_OP_BIAS_GRAD, MNT_OP_ACTIVATION_FORWARD,
        MNT_OP_ACTIVATION_BACKWARD, MNT_OP_ADD, MNT_OP_CROSS_ENTROPY,
        MNT_OP_LAYERNORM_FORWARD, MNT_OP_LAYERNORM_BACKWARD,
        MNT_OP_EMBEDDING_FORWARD, MNT_OP_EMBEDDING_BACKWARD, MNT_OP_REDUCE,
        MNT_OP_COUNT_CORRECT, MNT_OP_ATTENTION_FORWARD,
        MNT_OP_ATTENTION_BACKWARD}) {
    MNT_Backend_GetOpSupport_Args s{};
    s.struct_size = MNT_Backend_GetOpSupport_Args_STRUCT_SIZE;
    s.backend = args.backend;
    s.op = op;
    MNT_RETURN_IF_ERROR(sdk::StatusFromPluginError(
        args.backend_plugin,
        args.backend_plugin->backend->Backend_GetOpSupport(&s)));
    if (!s.supported) {
      return sdk::Unimplemented(sdk::Format(
          "gpt2: backend '%s' does not support %s (ABI 1.2)",
          args.backend_plugin->name, sdk::OpName(op)));
    }
  }

  specs_ = Gpt2ParamSpecs(config_, padded_vocab_);

  // Activations: every saved tensor of one block (all L blocks, or one
  // shared, recomputed block with checkpointing), the L+1 residual streams,
  // the head, and the gradient scratch.
  const int64_t n = max_batch_ * t_, C = config_.d_model;
  const size_t act = sdk::DTypeSize(precision_.activation_dtype);
  double planned = 0;
  auto reserve = [&](int64_t elements, size_t bytes_each) {
    planned += static_cast<double>(elements) * bytes_each;
    return activations_.Reserve(static_cast<size_t>(elements) * bytes_each);
  };
  const int num_blocks = config_.checkpointing ? 1 : int(config_.n_layer);
  for (int i = 0; i < num_blocks; ++i) {
    BlockBuffers b;
    b.ln1 = reserve(n * C, act);
    b.mean1 = reserve(n, 4);
    b.rstd1 = reserve(n, 4);
    b.qkv = reserve(n * 3 * C, act);
    b.atty = reserve(n * C, act);
    b.lse = reserve(n * config_.n_head, 4);
    b.res2 = reserve(n * C, act);
    b.ln2 = reserve(n * C, act);
    b.mean2 = reserve(n, 4);
    b.rstd2 = reserve(n, 4);
    b.fch = reserve(n * 4 * C, act);
    b.fchg = reserve(n * 4 * C, act);
    blocks_.push_back(b);
  }
  for (int l = 0; l <= config_.n_layer; ++l) residual_.push_back(reserve(n * C, act));
  lnf_ = reserve(n * C, act);
  meanf_ = reserve(n, 4);
  rstdf_ = reserve(n, 4);
  logits_ = reserve(n * padded_vocab_, act);
  dlogits_ = reserve(n * padded_vocab_, act);
  dres_ = reserve(n * C, act);
  dtmp_ = reserve(n * C, act);
  dtmp2_ = reserve(n * C, act);
  dbig_ = reserve(n * 4 * C, act);
  dqkv_ = reserve(n * 3 * C, act);
  if (planned > kMaxActivationBytes) {
    return sdk::ResourceExhausted(sdk::Format(
        "gpt2: activations for max_batch_size %lld would take %.3g bytes",
        (long long)max_batch_, planned));
  }
  MNT_RETURN_IF_ERROR(activations_.Allocate(client_, MNT_MEMORY_ACTIVATIONS));

  losses_ = workspace_.Reserve(static_cast<size_t>(n) * 4);
  ids_ = workspace_.Reserve(static_cast<size_t>(n) * 4);
  targets_ = workspace_.Reserve(static_cast<size_t>(n) * 4);
  positions_ = workspace_.Reserve(static_cast<size_t>(n) * 4);
  MNT_RETURN_IF_ERROR(workspace_.Allocate(client_, MNT_MEMORY_WORKSPACE));
  std::vector<int32_t> positions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) positions[i] = static_cast<int32_t>(i % t_);
  return client_.ToDevice(workspace_.Data(positions_), positions.data(),
                          positions.size() * 4);
}

MNT_Tensor Gpt2Network::Act(size_t handle, int64_t rows, int64_t width) const {
  return View(activations_.Data(handle), precision_.activation_dtype,
              {rows, width});
}

MNT_Tensor Gpt2Network::Act3(size_t handle, int64_t batch,
                             int64_t width) const {
  return View(activations_.Data(handle), precision_.activation_dtype,
              {batch, t_, width});
}

MNT_Tensor Gpt2Network::Stat(size_t handle, int64_t rows) const {
  return View(activations_.Data(handle), MNT_DTYPE_F32, {rows});
}

MNT_Tensor Gpt2Network::Logits(int64_t batch) const {
  return Act(logits_, batch * t_, padded_vocab_);
}

Status Gpt2Network::CheckParams(const char* call, const char* what,
                                const MNT_Tensor* tensors, size_t count,
                                MNT_DType dtype) const {
  const std::string context = std::string("gpt2 ") + call;
  if (count != specs_.size()) {
    return sdk::InvalidArgument(sdk::Format("%s: got %zu %s, expected %zu",
                                            context.c_str(), count, what,
                                            specs_.size()));
  }
  if (tensors == nullptr) {
    return sdk::InvalidArgument(context + ": " + what + " is NULL");
  }
  for (size_t i = 0; i < count; ++i) {
    MNT_RETURN_IF_ERROR(models::CheckTensor(
        context, std::string(what) + "[" + std::to_string(i) + "] " +
                     specs_[i].name,
        &tensors[i], dtype, specs_[i].dims));
  }
  return Status::Ok();
}

Status Gpt2Network::BlockForward(const MNT_Tensor* p, int l, int64_t batch,
                                 bool recompute) {
  const int64_t n = batch * t_, C = config_.d_model;
  const BlockBuffers& b = Block(l);
  const MNT_ComputeMode cm = precision_.matmul_compute;
  const MNT_GemmParams linear = Gemm(cm, false, true, false);
  const MNT_LayerNormParams ln = LayerNorm(false);
  const MNT_AddParams add = Add();
  const MNT_Tensor x = Act(residual_[l], n, C);

  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_LAYERNORM_FORWARD, {x, Slice(p[kLn1w], l), Slice(p[kLn1b], l)},
      {Act(b.ln1, n, C), Stat(b.mean1, n), Stat(b.rstd1, n)}, &ln));
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_GEMM,
      {Act(b.ln1, n, C), Slice(p[kQkvw], l), Slice(p[kQkvb], l)},
      {Act(b.qkv, n, 3 * C)}, &linear));
  MNT_AttentionParams attn{MNT_AttentionParams_STRUCT_SIZE,
                           static_cast<int32_t>(config_.n_head), 1, 0.0f};
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_ATTENTION_FORWARD, {Act3(b.qkv, batch, 3 * C)},
      {Act3(b.atty, batch, C),
       View(activations_.Data(b.lse), MNT_DTYPE_F32,
            {batch, config_.n_head, t_})},
      &attn));
  // res2 = x + atty @ attprojw^T + attprojb.
  const MNT_Tensor res2 = Act(b.res2, n, C);
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_GEMM,
      {Act(b.atty, n, C), Slice(p[kAttprojw], l), Slice(p[kAttprojb], l)},
      {res2}, &linear));
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ADD, {res2, x}, {res2}, &add));
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_LAYERNORM_FORWARD, {res2, Slice(p[kLn2w], l), Slice(p[kLn2b], l)},
      {Act(b.ln2, n, C), Stat(b.mean2, n), Stat(b.rstd2, n)}, &ln));
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_GEMM, {Act(b.ln2, n, C), Slice(p[kFcw], l), Slice(p[kFcb], l)},
      {Act(b.fch, n, 4 * C)}, &linear));
  MNT_ActivationParams gelu{MNT_ActivationParams_STRUCT_SIZE,
                            MNT_ACTIVATION_GELU_TANH};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ACTIVATION_FORWARD,
                                  {Act(b.fch, n, 4 * C)},
                                  {Act(b.fchg, n, 4 * C)}, &gelu));
  if (recompute) return Status::Ok();  // the block's output is already kept
  const MNT_Tensor y = Act(residual_[l + 1], n, C);
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_GEMM,
      {Act(b.fchg, n, 4 * C), Slice(p[kFcprojw], l), Slice(p[kFcprojb], l)},
      {y}, &linear));
  return client_.Run(MNT_OP_ADD, {y, res2}, {y}, &add);
}

Status Gpt2Network::Forward(const models::ForwardCall& call) {
  const MNT_Tensor* params = call.params;
  const size_t num_params = call.num_params;
  const MNT_Tensor* inputs = call.inputs;
  const MNT_Tensor* targets = call.targets;
  const bool training = call.training;
  const MNT_Tensor* loss_out = call.loss_out;
  const MNT_Tensor* correct_out = call.correct_out;
  saved_batch_ = 0;
  MNT_RETURN_IF_ERROR(CheckParams("Forward", "params", params, num_params,
                                  precision_.weight_dtype));
  if (inputs == nullptr || targets == nullptr) {
    return sdk::InvalidArgument("gpt2 Forward: inputs and targets are required");
  }
  const int64_t batch = inputs->rank >= 1 ? inputs->dims[0] : 0;
  if (batch < 1 || batch > max_batch_) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2 Forward: batch of %lld sequences (inputs %s), expected 1..%lld",
        (long long)batch, sdk::Describe(*inputs).c_str(),
        (long long)max_batch_));
  }
  MNT_RETURN_IF_ERROR(models::CheckTensor("gpt2 Forward", "inputs", inputs,
                                          MNT_DTYPE_I32, {batch, t_}));
  MNT_RETURN_IF_ERROR(models::CheckTensor("gpt2 Forward", "targets", targets,
                                          MNT_DTYPE_I32, {batch, t_}));
  MNT_RETURN_IF_ERROR(
      models::CheckScalar("gpt2 Forward", "loss_out", loss_out, MNT_DTYPE_F32));
  if (correct_out != nullptr) {
    MNT_RETURN_IF_ERROR(models::CheckScalar("gpt2 Forward", "correct_out",
                                            correct_out, MNT_DTYPE_F32));
  }
  const int64_t n = batch * t_, C = config_.d_model;
  const size_t id_bytes = static_cast<size_t>(n) * 4;
  // Inputs and targets are borrowed; Backward needs both.
  MNT_RETURN_IF_ERROR(client_.Copy(workspace_.Data(ids_), inputs->data,
                                   id_bytes, MNT_COPY_DEVICE_TO_DEVICE));
  MNT_RETURN_IF_ERROR(client_.Copy(workspace_.Data(targets_), targets->data,
                                   id_bytes, MNT_COPY_DEVICE_TO_DEVICE));
  const MNT_Tensor ids = View(workspace_.Data(ids_), MNT_DTYPE_I32, {n});
  const MNT_Tensor pos = View(workspace_.Data(positions_), MNT_DTYPE_I32, {n});
  const MNT_Tensor tgt = View(workspace_.Data(targets_), MNT_DTYPE_I32, {n});

  // Token + position embeddings.
  const MNT_AddParams add = Add();
  const MNT_Tensor x0 = Act(residual_[0], n, C);
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_EMBEDDING_FORWARD, {params[kWte], ids}, {x0}));
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_EMBEDDING_FORWARD, {params[kWpe], pos},
                                  {Act(dtmp_, n, C)}));
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_ADD, {x0, Act(dtmp_, n, C)}, {x0}, &add));

  for (int l = 0; l < config_.n_layer; ++l) {
    MNT_RETURN_IF_ERROR(BlockForward(params, l, batch, false));
  }

  const MNT_LayerNormParams ln = LayerNorm(false);
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_LAYERNORM_FORWARD,
      {Act(residual_[config_.n_layer], n, C), params[kLnfw], params[kLnfb]},
      {Act(lnf_, n, C), Stat(meanf_, n), Stat(rstdf_, n)}, &ln));
  const MNT_GemmParams tied = Gemm(precision_.matmul_compute, false, true, false);
  const MNT_Tensor logits = Logits(batch);
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_GEMM, {Act(lnf_, n, C), params[kWte]},
                                  {logits}, &tied));

  MNT_CrossEntropyParams ce{};
  ce.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  ce.grad_scale = 1.0f;
  ce.num_classes = vocab_;
  const MNT_Tensor losses = View(workspace_.Data(losses_), MNT_DTYPE_F32, {n});
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_CROSS_ENTROPY, {logits, tgt}, {losses}, &ce));
  MNT_ReduceParams mean{MNT_ReduceParams_STRUCT_SIZE, MNT_REDUCE_MEAN};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_REDUCE, {losses}, {*loss_out}, &mean));
  if (correct_out != nullptr) {
    MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_COUNT_CORRECT, {logits, tgt},
                                    {*correct_out}, &ce));
  }
  last_batch_ = batch;
  if (training) saved_batch_ = batch;
  return Status::Ok();
}

Status Gpt2Network::LinearBackward(const MNT_Tensor& x, const MNT_Tensor& w,
                                   const MNT_Tensor& dy, const MNT_Tensor& dw,
                                   const MNT_Tensor& db, const MNT_Tensor* dx,
                                   bool accumulate) {
  const MNT_ComputeMode cm = precision_.matmul_compute;
  const MNT_GemmParams weight_grad = Gemm(cm, true, false, accumulate);
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_GEMM, {dy, x}, {dw}, &weight_grad));
  MNT_AccumulateParams bias{MNT_AccumulateParams_STRUCT_SIZE,
                            accumulate ? 1 : 0};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_BIAS_GRAD, {dy}, {db}, &bias));
  if (dx == nullptr) return Status::Ok();
  const MNT_GemmParams input_grad = Gemm(cm, false, false, false);
  return client_.Run(MNT_OP_GEMM, {dy, w}, {*dx}, &input_grad);
}

// On entry dres holds dL/d(block output); on exit dL/d(block input).
Status Gpt2Network::BlockBackward(const MNT_Tensor* p, const MNT_Tensor* g,
                                  int l, int64_t batch, bool accumulate) {
  const int64_t n = batch * t_, C = config_.d_model;
  const BlockBuffers& b = Block(l);
  const MNT_AddParams add = Add();
  const MNT_LayerNormParams ln = LayerNorm(accumulate);
  const MNT_Tensor dres = Act(dres_, n, C), dtmp = Act(dtmp_, n, C),
                   dtmp2 = Act(dtmp2_, n, C), dbig = Act(dbig_, n, 4 * C);

  // MLP: y = res2 + fcproj(gelu(fc(ln2(res2)))).
  MNT_RETURN_IF_ERROR(LinearBackward(Act(b.fchg, n, 4 * C), Slice(p[kFcprojw], l),
                                     dres, Slice(g[kFcprojw], l),
                                     Slice(g[kFcprojb], l), &dbig, accumulate));
  MNT_ActivationParams gelu{MNT_ActivationParams_STRUCT_SIZE,
                            MNT_ACTIVATION_GELU_TANH};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ACTIVATION_BACKWARD,
                                  {Act(b.fch, n, 4 * C), dbig}, {dbig}, &gelu));
  MNT_RETURN_IF_ERROR(LinearBackward(Act(b.ln2, n, C), Slice(p[kFcw], l), dbig,
                                     Slice(g[kFcw], l), Slice(g[kFcb], l),
                                     &dtmp, accumulate));
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_LAYERNORM_BACKWARD,
      {dtmp, Act(b.res2, n, C), Slice(p[kLn2w], l), Stat(b.mean2, n),
       Stat(b.rstd2, n)},
      {dtmp2, Slice(g[kLn2w], l), Slice(g[kLn2b], l)}, &ln));
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_ADD, {dres, dtmp2}, {dres}, &add));

  // Attention: res2 = x + attproj(attn(qkv(ln1(x)))).
  MNT_RETURN_IF_ERROR(LinearBackward(Act(b.atty, n, C), Slice(p[kAttprojw], l),
                                     dres, Slice(g[kAttprojw], l),
                                     Slice(g[kAttprojb], l), &dtmp, accumulate));
  MNT_AttentionParams attn{MNT_AttentionParams_STRUCT_SIZE,
                           static_cast<int32_t>(config_.n_head), 1, 0.0f};
  const MNT_Tensor dqkv3 = Act3(dqkv_, batch, 3 * C);
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_ATTENTION_BACKWARD,
      {Act3(dtmp_, batch, C), Act3(b.qkv, batch, 3 * C), Act3(b.atty, batch, C),
       View(activations_.Data(b.lse), MNT_DTYPE_F32,
            {batch, config_.n_head, t_})},
      {dqkv3}, &attn));
  MNT_RETURN_IF_ERROR(LinearBackward(Act(b.ln1, n, C), Slice(p[kQkvw], l),
                                     Act(dqkv_, n, 3 * C), Slice(g[kQkvw], l),
                                     Slice(g[kQkvb], l), &dtmp, accumulate));
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_LAYERNORM_BACKWARD,
      {dtmp, Act(residual_[l], n, C), Slice(p[kLn1w], l), Stat(b.mean1, n),
       Stat(b.rstd1, n)},
      {dtmp2, Slice(g[kLn1w], l), Slice(g[kLn1b], l)}, &ln));
  return client_.Run(MNT_OP_ADD, {dres, dtmp2}, {dres}, &add);
}

Status Gpt2Network::Backward(const models::BackwardCall& call) {
  const MNT_Tensor* params = call.params;
  const size_t num_params = call.num_params;
  const MNT_Tensor* grads = call.grads;
  const size_t num_grads = call.num_grads;
  const float loss_multiplier = call.loss_multiplier;
  const bool accumulate = call.accumulate;
  if (saved_batch_ == 0) {
    return sdk::FailedPrecondition(
        "gpt2 Backward: no training Forward to back-propagate (call Forward "
        "with training=1 first)");
  }
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "params", params, num_params,
                                  precision_.weight_dtype));
  MNT_RETURN_IF_ERROR(CheckParams("Backward", "grads", grads, num_grads,
                                  precision_.gradient_dtype));
  if (!std::isfinite(loss_multiplier)) {
    return sdk::InvalidArgument(sdk::Format(
        "gpt2 Backward: loss_multiplier is %g, expected a finite number",
        static_cast<double>(loss_multiplier)));
  }
  const int64_t batch = saved_batch_, n = batch * t_, C = config_.d_model;
  const MNT_Tensor ids = View(workspace_.Data(ids_), MNT_DTYPE_I32, {n});
  const MNT_Tensor pos = View(workspace_.Data(positions_), MNT_DTYPE_I32, {n});
  const MNT_Tensor tgt = View(workspace_.Data(targets_), MNT_DTYPE_I32, {n});

  // dlogits = (softmax - onehot) * multiplier / (B*T).
  MNT_CrossEntropyParams ce{};
  ce.struct_size = MNT_CrossEntropyParams_STRUCT_SIZE;
  ce.grad_scale = loss_multiplier / static_cast<float>(n);
  ce.num_classes = vocab_;
  const MNT_Tensor dlogits = Act(dlogits_, n, padded_vocab_);
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_CROSS_ENTROPY, {Logits(batch), tgt},
      {View(workspace_.Data(losses_), MNT_DTYPE_F32, {n}), dlogits}, &ce));
  // Tied head: logits = lnf @ wte^T.
  const MNT_ComputeMode cm = precision_.matmul_compute;
  const MNT_GemmParams dwte = Gemm(cm, true, false, accumulate);
  MNT_RETURN_IF_ERROR(
      client_.Run(MNT_OP_GEMM, {dlogits, Act(lnf_, n, C)}, {grads[kWte]}, &dwte));
  const MNT_GemmParams dlnf = Gemm(cm, false, false, false);
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_GEMM, {dlogits, params[kWte]},
                                  {Act(dtmp_, n, C)}, &dlnf));
  const MNT_LayerNormParams ln = LayerNorm(accumulate);
  MNT_RETURN_IF_ERROR(client_.Run(
      MNT_OP_LAYERNORM_BACKWARD,
      {Act(dtmp_, n, C), Act(residual_[config_.n_layer], n, C), params[kLnfw],
       Stat(meanf_, n), Stat(rstdf_, n)},
      {Act(dres_, n, C), grads[kLnfw], grads[kLnfb]}, &ln));

  for (int l = static_cast<int>(config_.n_layer) - 1; l >= 0; --l) {
    if (config_.checkpointing) {
      MNT_RETURN_IF_ERROR(BlockForward(params, l, batch, true));
    }
    MNT_RETURN_IF_ERROR(BlockBackward(params, grads, l, batch, accumulate));
  }

  // Embeddings: wte already holds the head's gradient, so always add.
  MNT_AccumulateParams add_into{MNT_AccumulateParams_STRUCT_SIZE, 1};
  MNT_RETURN_IF_ERROR(client_.Run(MNT_OP_EMBEDDING_BACKWARD,
                                  {Act(dres_, n, C), ids}, {grads[kWte]},
                                  &add_into));
  MNT_AccumulateParams wpe_mode{MNT_AccumulateParams_STRUCT_SIZE,
                                accumulate ? 1 : 0};
  // Overwriting zeroes the rows past the data's T (no gradient there).
  return client_.Run(MNT_OP_EMBEDDING_BACKWARD, {Act(dres_, n, C), pos},
                     {grads[kWpe]}, &wpe_mode);
}

}  // namespace mnt::gpt2
