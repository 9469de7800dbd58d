#include "models/gpt2/gpt2_network.h"

#include <cmath>
#include <utility>

#include "plugins/sdk/model/views.h"
#include "plugins/sdk/tensor.h"

namespace mnt::gpt2 {
namespace {

using models::Layer;
using sdk::Status;

constexpr float kInitStd = 0.02f;  // GPT-2 / llm.c
constexpr models::WeightLayout kOutIn = models::WeightLayout::kOutIn;

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
  // The blocks' tensors stack the L layers' copies (ABI 1.15's stacked_dims).
  const auto layers = [](ParamSpec spec) {
    spec.stacked_dims = 1;
    return spec;
  };
  // The token and position tables are embeddings (ABI 1.16's role).
  const auto embedding = [](ParamSpec spec) {
    spec.role = MNT_PARAM_ROLE_EMBEDDING;
    return spec;
  };
  return {
      embedding({"wte", {padded_vocab, C}, normal, kInitStd, true}),
      embedding({"wpe", {c.seq_len, C}, normal, kInitStd, true}),
      layers({"ln1w", {L, C}, ones, 0.0f, false}),
      layers({"ln1b", {L, C}, zeros, 0.0f, false}),
      layers({"qkvw", {L, 3 * C, C}, normal, kInitStd, true}),
      layers({"qkvb", {L, 3 * C}, zeros, 0.0f, false}),
      layers({"attprojw", {L, C, C}, normal, proj_std, true}),
      layers({"attprojb", {L, C}, zeros, 0.0f, false}),
      layers({"ln2w", {L, C}, ones, 0.0f, false}),
      layers({"ln2b", {L, C}, zeros, 0.0f, false}),
      layers({"fcw", {L, 4 * C, C}, normal, kInitStd, true}),
      layers({"fcb", {L, 4 * C}, zeros, 0.0f, false}),
      layers({"fcprojw", {L, C, 4 * C}, normal, proj_std, true}),
      layers({"fcprojb", {L, C}, zeros, 0.0f, false}),
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

Status Gpt2Network::CheckData(const MNT_DataSpec& data) {
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
  return Status::Ok();
}

Status Gpt2Network::Init(const MNT_Model_Create_Args& args) {
  MNT_RETURN_IF_ERROR(ParseGpt2Options(args.options, &config_));
  MNT_RETURN_IF_ERROR(models::CheckCreateArgs(
      {"gpt2",
       {MNT_OP_GEMM, MNT_OP_BIAS_GRAD, MNT_OP_ACTIVATION_FORWARD,
        MNT_OP_ACTIVATION_BACKWARD, MNT_OP_ADD, MNT_OP_CROSS_ENTROPY,
        MNT_OP_LAYERNORM_FORWARD, MNT_OP_LAYERNORM_BACKWARD,
        MNT_OP_EMBEDDING_FORWARD, MNT_OP_EMBEDDING_BACKWARD, MNT_OP_REDUCE,
        MNT_OP_COUNT_CORRECT, MNT_OP_ATTENTION_FORWARD,
        MNT_OP_ATTENTION_BACKWARD},
       " (ABI 1.2)",
       config_.fused ? std::vector<MNT_Op>{MNT_OP_RESIDUAL_LAYERNORM_FORWARD,
                                           MNT_OP_RESIDUAL_LAYERNORM_BACKWARD,
                                           MNT_OP_GEMM_BIAS_GELU, MNT_OP_GEMM_DGELU,
                                           MNT_OP_GEMM_BIAS_GRAD,
                                           MNT_OP_FUSED_CLASSIFIER}
                     : std::vector<MNT_Op>{}},
      args, [this](const MNT_DataSpec& d) { return CheckData(d); }, &setup_));
  models::ExampleShape example;
  example.noun = "sequences";
  example.input_dtype = MNT_DTYPE_I32;
  example.input_dims = {t_};
  example.target_dims = {t_};
  io_ = models::ModelIo("gpt2", Gpt2ParamSpecs(config_, padded_vocab_),
                        example, setup_.precision.weight_dtype,
                        setup_.precision.gradient_dtype, setup_.max_batch);

  recompute_ = models::Recompute(config_.checkpointing, static_cast<int>(config_.n_layer));
  PlanActivations();
  MNT_RETURN_IF_ERROR(models::AllocateActivations(setup_, &activations_));
  const int64_t n = setup_.max_batch * t_;
  losses_ = workspace_.Reserve(MNT_DTYPE_F32, n);
  ids_ = workspace_.Reserve(MNT_DTYPE_I32, n);
  targets_ = workspace_.Reserve(MNT_DTYPE_I32, n);
  positions_ = workspace_.Reserve(MNT_DTYPE_I32, n);
  dlogits_multiplier_ = workspace_.Reserve(MNT_DTYPE_F32, 1);
  MNT_RETURN_IF_ERROR(workspace_.Allocate(setup_.client, MNT_MEMORY_WORKSPACE));
  std::vector<int32_t> positions(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) positions[i] = static_cast<int32_t>(i % t_);
  return setup_.client.ToDevice(workspace_.View(positions_, {n}).data,
                                positions.data(), positions.size() * 4);
}

// Every saved tensor of one block (all L blocks, or one shared, recomputed
// block with checkpointing), the L+1 residual streams, the head, and the
// gradient scratch.
void Gpt2Network::PlanActivations() {
  const double n = static_cast<double>(setup_.max_batch * t_);
  const double C = static_cast<double>(config_.d_model);
  const MNT_DType act = setup_.precision.activation_dtype;
  const MNT_DType f32 = MNT_DTYPE_F32;
  models::DeviceArena& a = activations_;
  // ln1(x), ln2(x), the GELU output and lnf(x) are read by their Linear
  // layers' GEMMs only (the norms' backward reads x, mean and rstd). When
  // the facade keeps those inputs itself (FP8: quantized), they are written
  // and read within one layer and share one buffer instead of one each.
  const bool transient_inputs = setup_.ops.KeepsGemmInputs();
  const Slot gemm_inputs = transient_inputs ? a.Reserve(act, n * 4 * C) : Slot{};
  auto input = [&](double elements) {
    return transient_inputs ? gemm_inputs : a.Reserve(act, elements);
  };
  for (int i = 0; i < recompute_.sets(); ++i) {
    BlockSlots b;
    b.ln1 = input(n * C);
    b.mean1 = a.Reserve(f32, n);
    b.rstd1 = a.Reserve(f32, n);
    b.qkv = a.Reserve(act, n * 3 * C);
    b.atty = a.Reserve(act, n * C);
    b.lse = a.Reserve(f32, n * config_.n_head);
    b.res2 = a.Reserve(act, n * C);
    b.ln2 = input(n * C);
    b.mean2 = a.Reserve(f32, n);
    b.rstd2 = a.Reserve(f32, n);
    b.fch = a.Reserve(act, n * 4 * C);
    b.fchg = input(n * 4 * C);
    blocks_.push_back(b);
  }
  for (int l = 0; l <= config_.n_layer; ++l) {
    residual_.push_back(a.Reserve(act, n * C));
  }
  lnf_ = input(n * C);
  meanf_ = a.Reserve(f32, n);
  rstdf_ = a.Reserve(f32, n);
  logits_ = a.Reserve(act, n * padded_vocab_);
  // The fused classifier writes dlogits over the logits (with a host or a
  // device loss multiplier): the [n, Vp] buffer only without it.
  if (!setup_.ops.Supports(MNT_OP_FUSED_CLASSIFIER)) {
    dlogits_ = a.Reserve(act, n * padded_vocab_);
  }
  dres_ = a.Reserve(act, n * C);
  dtmp_ = a.Reserve(act, n * C);
  dtmp2_ = a.Reserve(act, n * C);
  dbig_ = a.Reserve(act, n * 4 * C);
  dqkv_ = a.Reserve(act, n * 3 * C);
}

Gpt2Network::BlockParams Gpt2Network::LayerOf(const MNT_Tensor* p, int l) {
  return {Layer(p[kLn1w], l),     Layer(p[kLn1b], l),    Layer(p[kQkvw], l),
          Layer(p[kQkvb], l),     Layer(p[kAttprojw], l), Layer(p[kAttprojb], l),
          Layer(p[kLn2w], l),     Layer(p[kLn2b], l),    Layer(p[kFcw], l),
          Layer(p[kFcb], l),      Layer(p[kFcprojw], l), Layer(p[kFcprojb], l)};
}

Gpt2Network::BlockActivations Gpt2Network::BlockViews(int l,
                                                      int64_t batch) const {
  const BlockSlots& s = blocks_[recompute_.SetOf(l)];
  const int64_t n = batch * t_, C = config_.d_model;
  const auto& a = activations_;
  return {{Rows(s.ln1, n, C), a.View(s.mean1, {n}), a.View(s.rstd1, {n})},
          Rows(s.qkv, n, 3 * C),
          Rows(s.atty, n, C),
          a.View(s.lse, {batch, config_.n_head, t_}),
          Rows(s.res2, n, C),
          {Rows(s.ln2, n, C), a.View(s.mean2, {n}), a.View(s.rstd2, {n})},
          Rows(s.fch, n, 4 * C),
          Rows(s.fchg, n, 4 * C)};
}

models::LayerNormOutput Gpt2Network::FinalNorm(int64_t n) const {
  return {Rows(lnf_, n, config_.d_model), activations_.View(meanf_, {n}),
          activations_.View(rstdf_, {n})};
}

MNT_Tensor Gpt2Network::Logits(int64_t batch) const {
  return Rows(logits_, batch * t_, padded_vocab_);
}

Status Gpt2Network::BlockForward(const BlockParams& w, const MNT_Tensor& x,
                                 const BlockActivations& a, int64_t batch,
                                 const NextNorm* next) {
  const models::Ops& ops = setup_.ops;
  // res2 = x + attproj(attention(qkv(ln1(x)))); ln1(x) is already in a.ln1
  // (the previous block's fused residual add, or the caller).
  MNT_RETURN_IF_ERROR(ops.Linear(a.ln1.y, w.qkvw, w.qkvb, a.qkv, kOutIn));
  MNT_RETURN_IF_ERROR(
      ops.CausalSelfAttention(a.qkv, batch, config_.n_head, a.atty, a.lse));
  MNT_RETURN_IF_ERROR(
      ops.Linear(a.atty, w.attprojw, w.attprojb, a.res2, kOutIn));
  // y = res2 + fcproj(gelu(fc(ln2(res2)))); the residual add and ln2 fused,
  // fc's bias and GELU in its GEMM's epilogue.
  MNT_RETURN_IF_ERROR(ops.ResidualLayerNorm(a.res2, x, w.ln2w, w.ln2b, a.res2, a.ln2));
  MNT_RETURN_IF_ERROR(ops.LinearGelu(a.ln2.y, w.fcw, w.fcb, a.fch, a.fchg, kOutIn));
  if (next == nullptr) return Status::Ok();  // recomputing: the block's output is kept
  // The MLP's residual add fused with the layer norm that reads its sum
  // (the next block's ln1, or lnf).
  MNT_RETURN_IF_ERROR(ops.Linear(a.fchg, w.fcprojw, w.fcprojb, next->y, kOutIn));
  return ops.ResidualLayerNorm(next->y, a.res2, next->weight, next->bias, next->y,
                               next->norm);
}

Status Gpt2Network::Forward(const models::ForwardCall& call) {
  saved_batch_ = 0;
  dlogits_in_logits_ = false;
  int64_t batch = 0;
  MNT_RETURN_IF_ERROR(io_.CheckForward(call, &batch));
  const models::Ops& ops = setup_.ops;
  const MNT_Tensor* p = call.params;
  const int64_t n = batch * t_, C = config_.d_model;
  const MNT_Tensor ids = workspace_.View(ids_, {n});
  const MNT_Tensor targets = workspace_.View(targets_, {n});
  // Inputs and targets are borrowed; Backward needs both.
  MNT_RETURN_IF_ERROR(ops.Copy(*call.inputs, ids));
  MNT_RETURN_IF_ERROR(ops.Copy(*call.targets, targets));

  // x0 = wte[ids] + wpe[positions].
  const MNT_Tensor x0 = Residual(0, n), pos_emb = Rows(dtmp_, n, C);
  MNT_RETURN_IF_ERROR(ops.Embedding(p[kWte], ids, x0));
  MNT_RETURN_IF_ERROR(
      ops.Embedding(p[kWpe], workspace_.View(positions_, {n}), pos_emb));
  MNT_RETURN_IF_ERROR(ops.Add(x0, pos_emb, x0));

  // Block l's output x_{l+1} and the layer norm that reads it (block l+1's
  // ln1, lnf after the last) come from one fused residual add + layer norm.
  const int L = static_cast<int>(config_.n_layer);
  const models::LayerNormOutput lnf = FinalNorm(n);
  if (L == 0) {
    MNT_RETURN_IF_ERROR(ops.LayerNorm(x0, p[kLnfw], p[kLnfb], lnf));
  } else {
    const BlockParams first = LayerOf(p, 0);
    MNT_RETURN_IF_ERROR(ops.LayerNorm(x0, first.ln1w, first.ln1b, BlockViews(0, batch).ln1));
  }
  for (int l = 0; l < L; ++l) {
    NextNorm next;
    next.y = Residual(l + 1, n);
    if (l + 1 < L) {
      const BlockParams w = LayerOf(p, l + 1);
      next.weight = w.ln1w;
      next.bias = w.ln1b;
      next.norm = BlockViews(l + 1, batch).ln1;
    } else {
      next.weight = p[kLnfw];
      next.bias = p[kLnfb];
      next.norm = lnf;
    }
    MNT_RETURN_IF_ERROR(
        BlockForward(LayerOf(p, l), Residual(l, n), BlockViews(l, batch), batch, &next));
  }

  // logits = lnf(x_L) @ wteᵀ (tied), loss over the first `vocab` columns.
  const MNT_Tensor logits = Logits(batch);
  MNT_RETURN_IF_ERROR(ops.Linear(lnf.y, p[kWte], std::nullopt, logits, kOutIn));
  MNT_RETURN_IF_ERROR(ops.CrossEntropyLoss(
      logits, targets, vocab_, workspace_.View(losses_, {n}), *call.loss_out,
      models::Optional(call.correct_out)));
  if (call.training) saved_batch_ = batch;
  return Status::Ok();
}

Status Gpt2Network::BlockBackward(const BlockParams& w, const BlockParams& dw,
                                  const MNT_Tensor& x,
                                  const BlockActivations& a, int64_t batch,
                                  bool accumulate) {
  const models::Ops& ops = setup_.ops;
  const int64_t n = batch * t_, C = config_.d_model;
  const MNT_Tensor dres = Rows(dres_, n, C), dtmp = Rows(dtmp_, n, C),
                   dtmp2 = Rows(dtmp2_, n, C), dbig = Rows(dbig_, n, 4 * C),
                   dqkv = Rows(dqkv_, n, 3 * C);

  // MLP: y = res2 + fcproj(gelu(fc(ln2(res2)))).
  // fcproj's weight and bias gradients; its input gradient goes straight
  // through the GELU into dbig = d(fc output), with fc's bias gradient.
  MNT_RETURN_IF_ERROR(ops.LinearBackward(a.fchg, w.fcprojw, dres, dw.fcprojw,
                                         dw.fcprojb, std::nullopt, accumulate,
                                         kOutIn));
  MNT_RETURN_IF_ERROR(ops.LinearBackwardThroughGelu(dres, w.fcprojw, a.fch, dbig,
                                                    dw.fcb, accumulate, kOutIn));
  MNT_RETURN_IF_ERROR(ops.LinearBackward(a.ln2.y, w.fcw, dbig, dw.fcw,
                                         std::nullopt, dtmp, accumulate, kOutIn));
  MNT_RETURN_IF_ERROR(ops.LayerNormBackwardAdd(dtmp, a.res2, w.ln2w, a.ln2, dtmp2,
                                               dres, dw.ln2w, dw.ln2b, accumulate));

  // Attention: res2 = x + attproj(attention(qkv(ln1(x)))).
  MNT_RETURN_IF_ERROR(ops.LinearBackward(a.atty, w.attprojw, dres, dw.attprojw,
                                         dw.attprojb, dtmp, accumulate, kOutIn));
  MNT_RETURN_IF_ERROR(ops.CausalSelfAttentionBackward(
      dtmp, a.qkv, a.atty, a.lse, batch, config_.n_head, dqkv));
  MNT_RETURN_IF_ERROR(ops.LinearBackward(a.ln1.y, w.qkvw, dqkv, dw.qkvw,
                                         dw.qkvb, dtmp, accumulate, kOutIn));
  return ops.LayerNormBackwardAdd(dtmp, x, w.ln1w, a.ln1, dtmp2, dres, dw.ln1w,
                                  dw.ln1b, accumulate);
}

// The logits are gone, but dlogits are linear in the scale: scaled by
// new / old, each formed as the kernel forms it (multiplier * (1/(B*T)) in
// fp32), so a host and a device multiplier give the same bits. A device
// multiplier is read to the host here, on this second Backward only.
Status Gpt2Network::RescaleDlogits(const MNT_Tensor& dlogits,
                                   const models::GradScale& grad_scale) {
  const models::Ops& ops = setup_.ops;
  float old_scale = dlogits_scale_, new_scale = grad_scale.host;
  if (dlogits_scale_on_device_) {
    float m = 0.0f;
    MNT_RETURN_IF_ERROR(setup_.client.ToHost(
        &m, workspace_.View(dlogits_multiplier_, {1}).data, sizeof(float)));
    old_scale = m * dlogits_scale_;
  }
  if (grad_scale.device != nullptr) {
    float m = 0.0f;
    MNT_RETURN_IF_ERROR(setup_.client.ToHost(&m, grad_scale.device->data, sizeof(float)));
    new_scale = m * grad_scale.host;
  }
  if (new_scale == old_scale) return Status::Ok();
  if (old_scale == 0.0f) {
    return sdk::FailedPrecondition(
        "gpt2: a second Backward after one with loss_multiplier 0 needs a new "
        "Forward (the fused classifier wrote its gradient over the logits)");
  }
  MNT_RETURN_IF_ERROR(ops.Scale(dlogits, new_scale / old_scale, dlogits));
  // The dlogits now hold the new scale, as a host value.
  dlogits_scale_ = new_scale;
  dlogits_scale_on_device_ = false;
  return Status::Ok();
}

Status Gpt2Network::Backward(const models::BackwardCall& call) {
  MNT_RETURN_IF_ERROR(io_.CheckBackward(call, saved_batch_));
  const models::Ops& ops = setup_.ops;
  const MNT_Tensor* p = call.params;
  const MNT_Tensor* g = call.grads;
  const bool accumulate = call.accumulate;
  const int64_t batch = saved_batch_, n = batch * t_, C = config_.d_model;
  const MNT_Tensor ids = workspace_.View(ids_, {n});
  const MNT_Tensor dres = Rows(dres_, n, C), dlnf = Rows(dtmp_, n, C);

  // dlogits = (softmax - onehot) * multiplier / (B*T): written over the
  // logits by the fused classifier where the backend has it (the
  // multiplier on the host or, ABI 1.6's sync-free step, on the device),
  // else by CROSS_ENTROPY into dlogits_.
  const models::GradScale grad_scale =
      models::MeanLossGradScale(call.loss_multiplier, call.loss_multiplier_device, n);
  const MNT_Tensor targets = workspace_.View(targets_, {n});
  const MNT_Tensor losses = workspace_.View(losses_, {n});
  MNT_Tensor dlogits = Logits(batch);
  if (ops.Supports(MNT_OP_FUSED_CLASSIFIER)) {
    if (!dlogits_in_logits_) {
      MNT_RETURN_IF_ERROR(
          ops.CrossEntropyBackwardInPlace(dlogits, targets, vocab_, grad_scale, losses));
      dlogits_in_logits_ = true;
      dlogits_scale_ = grad_scale.host;
      dlogits_scale_on_device_ = grad_scale.device != nullptr;
      if (dlogits_scale_on_device_) {
        // Kept for a second Backward of this Forward: the caller may change
        // its multiplier tensor in between.
        MNT_RETURN_IF_ERROR(
            ops.Copy(*grad_scale.device, workspace_.View(dlogits_multiplier_, {1})));
      }
    } else {
      MNT_RETURN_IF_ERROR(RescaleDlogits(dlogits, grad_scale));
    }
  } else {
    dlogits = Rows(dlogits_, n, padded_vocab_);
    MNT_RETURN_IF_ERROR(ops.CrossEntropyBackward(Logits(batch), targets, vocab_,
                                                 grad_scale, losses, dlogits));
  }
  // Tied head: logits = lnf @ wteᵀ.
  const models::LayerNormOutput lnf = FinalNorm(n);
  MNT_RETURN_IF_ERROR(ops.LinearBackward(lnf.y, p[kWte], dlogits, g[kWte],
                                         std::nullopt, dlnf, accumulate, kOutIn));
  MNT_RETURN_IF_ERROR(ops.LayerNormBackward(dlnf, Residual(config_.n_layer, n),
                                            p[kLnfw], lnf, dres, g[kLnfw],
                                            g[kLnfb], accumulate));
  // ABI 1.11 hand-over: the final norm's gradients are final; wte's is not
  // (the embedding backward adds to it last).
  call.ReadyWhole(kLnfw);
  call.ReadyWhole(kLnfb);

  for (int l = static_cast<int>(config_.n_layer) - 1; l >= 0; --l) {
    const BlockParams w = LayerOf(p, l);
    const BlockActivations a = BlockViews(l, batch);
    MNT_RETURN_IF_ERROR(recompute_.Restore(l, [&]() -> Status {
      MNT_RETURN_IF_ERROR(ops.LayerNorm(Residual(l, n), w.ln1w, w.ln1b, a.ln1));
      return BlockForward(w, Residual(l, n), a, batch, nullptr);
    }));
    MNT_RETURN_IF_ERROR(BlockBackward(w, LayerOf(g, l), Residual(l, n), a,
                                      batch, accumulate));
    // Layer l's slice of every stacked parameter's gradient is final (as
    // LayerOf slices it: dims[1..] elements from l times that).
    for (int i = kLn1w; i <= kFcprojb; ++i) {
      const int64_t per_layer = sdk::NumElements(g[i]) / config_.n_layer;
      call.Ready(i, l * per_layer, per_layer);
    }
  }

  // Embeddings: wte already holds the head's gradient, so always add.
  MNT_RETURN_IF_ERROR(ops.EmbeddingBackward(dres, ids, g[kWte], true));
  call.ReadyWhole(kWte);
  // Overwriting zeroes the rows past the data's T (no gradient there).
  MNT_RETURN_IF_ERROR(ops.EmbeddingBackward(dres, workspace_.View(positions_, {n}), g[kWpe],
                                            accumulate));
  call.ReadyWhole(kWpe);
  return Status::Ok();
}

}  // namespace mnt::gpt2
