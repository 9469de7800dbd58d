#include "trainer/core/trainer.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/checkpoint/checkpoint_history.h"
#include "trainer/checkpoint/run_config_file.h"
#include "trainer/parallel/bucket_readiness.h"
#include "trainer/core/device_batch.h"
#include "trainer/core/device_scalars.h"
#include "trainer/core/eval_policy.h"
#include "trainer/core/evaluator.h"
#include "trainer/core/fp8_scaling.h"
#include "trainer/core/loss_scale_config.h"
#include "trainer/core/loss_scaling.h"
#include "trainer/core/loss_scaling_choice.h"
#include "trainer/core/lr_schedule.h"
#include "trainer/core/memory_report.h"
#include "trainer/core/optimizer.h"
#include "trainer/core/out_of_memory_advice.h"
#include "trainer/core/parameters.h"
#include "trainer/core/run_plugins.h"
#include "trainer/core/skip_guard.h"
#include "trainer/core/static_scale_search.h"
#include "trainer/core/throughput.h"
#include "trainer/core/training_checkpoint.h"
#include "trainer/data/sampler.h"
#include "trainer/debug/op_tracer.h"
#include "trainer/parallel/data_parallel.h"
#include "trainer/parallel/fault_injection.h"
#include "trainer/parallel/host_comm.h"
#include "trainer/parallel/rank_agreement.h"

namespace mnt::trainer {
namespace {

// `s` with "<prefix>" before its message.
absl::Status Prefixed(const absl::Status& s, const std::string& prefix) {
  return absl::Status(s.code(), absl::StrCat(prefix, s.message()));
}

// An error that stops the run at `step` says so, once: "step N: ...".
absl::Status AtStep(const absl::Status& s, int64_t step) {
  if (s.ok() || absl::StartsWith(s.message(), "step ")) return s;
  return Prefixed(s, absl::StrCat("step ", step, ": "));
}

int64_t MicroBatches(const mantissa::TrainConfig& config) {
  return std::max<int64_t>(1, config.grad_accum_steps());
}

double LearningRateAt(const mantissa::TrainConfig& config, int64_t step) {
  const mantissa::ScheduleConfig& s = config.schedule();
  return LearningRate({s.kind(), config.optimizer().lr(),
                       WarmupSteps(s.warmup_steps(), s.warmup_ratio(), config.steps()),
                       config.steps(), s.min_lr_ratio()},
                      step);
}

// An allocation that failed says what to do about it
// (out_of_memory_advice.h), once the plugins say the precision and memory.
absl::Status WithMemoryAdvice(const absl::Status& s, const mantissa::TrainConfig& config,
                              const BatchSource* train_data, const RunPlugins* plugins) {
  if (plugins == nullptr || train_data == nullptr) return s;  // RunPlugins::Create advised
  return WithOutOfMemoryAdvice(s, {&config, train_data->spec(), plugins->precision_name,
                                   plugins->total_memory_bytes});
}

}  // namespace

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(
    const mantissa::TrainConfig& config, PluginRegistry* registry,
    std::unique_ptr<BatchSource> train_data,
    std::unique_ptr<BatchSource> eval_data, HostComm* ranks) {
  std::unique_ptr<Trainer> t(new Trainer());
  t->config_ = config;
  t->registry_ = registry;
  t->ranks_ = ranks != nullptr && ranks->world_size() > 1 ? ranks : nullptr;
  absl::Status s = t->Init(std::move(train_data), std::move(eval_data));
  if (!s.ok()) return WithMemoryAdvice(s, t->config_, t->train_data_.get(), t->plugins_.get());
  return t;
}

// Members go in reverse declaration order: device buffers first, then the
// model, the loss scaler and the backend instance (RunPlugins).
Trainer::~Trainer() = default;

absl::Status Trainer::Init(std::unique_ptr<BatchSource> train_data,
                           std::unique_ptr<BatchSource> eval_data) {
  train_data_ = std::move(train_data);
  eval_data_ = std::move(eval_data);
  if (train_data_->size() < 1) {
    return absl::InvalidArgumentError("training set is empty");
  }
  targets_per_example_ = train_data_->spec().targets_per_example;
  const int state_slots = Optimizer::StateSlots(config_.optimizer());
  auto plugins = RunPlugins::Create(config_, registry_, train_data_->spec(), state_slots,
                                    ranks_ != nullptr ? ranks_->local_rank() : 0);
  if (!plugins.ok()) return plugins.status();
  plugins_ = std::move(*plugins);
  const sdk::BackendClient& client = plugins_->backend->client();
  if (ranks_ != nullptr) {
    auto dp = DataParallel::Create(ranks_, client);
    if (!dp.ok()) return dp.status();
    data_parallel_ = std::move(*dp);
  }
  loss_scaling_active_ =
      LossScalingActive(config_.loss_scale(), plugins_->policy.loss_scaling);

  ParamShard shard;
  if (ranks_ != nullptr) {
    shard = {ranks_->rank(), ranks_->world_size(), config_.zero_stage() == 1,
             static_cast<int64_t>(config_.bucket_mb() * (1 << 20))};
  }
  auto params = ParameterStore::Create(plugins_->model, client, plugins_->policy,
                                       state_slots, config_.seed(), shard);
  if (!params.ok()) return params.status();
  params_ = std::move(*params);
  if (plugins_->scaling_recipe.recipe != MNT_SCALING_RECIPE_NONE) {
    std::vector<Fp8Scaling::ParamShape> shapes;
    for (const Param& p : params_->params()) shapes.push_back({p.name, p.dims});
    auto fp8 = Fp8Scaling::Create(client, plugins_->scaling_recipe, shapes);
    if (!fp8.ok()) return fp8.status();
    fp8_ = std::move(*fp8);
    plugins_->model.UseFp8Tensors(fp8_->tensors());
  }
  // Exchange in backward (ABI 1.11): with a model that hands over finished
  // gradients, each bucket goes as soon as backward has finished it.
  if (data_parallel_ != nullptr && config_.exchange_in_backward() != "off" &&
      plugins_->model.HandsOverGradients()) {
    readiness_ = std::make_unique<BucketReadiness>(params_->layout());
    plugins_->model.UseGradientReady(&Trainer::OnGradientReady, this);
  }
  // ZeRO-1: the other shares start from their ranks' rounding.
  if (auto s = GatherWorkingWeights(); !s.ok()) return s;
  if (OpTracer* tracer = plugins_->tracer.get()) {
    for (const Param& p : params_->params()) {
      tracer->Name(p.weights.data(), p.weights.size(), p.name);
      tracer->Name(p.grads.data(), p.grads.size(), "grad of " + p.name);
      tracer->Name(p.master.data(), p.master.size(), "master of " + p.name);
      tracer->Name(p.master_grads.data(), p.master_grads.size(), "grad of " + p.name);
    }
  }
  auto batch = DeviceBatch::Create(client, *train_data_, config_.batch_size());
  if (!batch.ok()) return batch.status();
  batch_ = std::move(*batch);
  scalars_ = std::make_unique<StepScalars>();
  if (auto s = scalars_->Allocate(client); !s.ok()) return s;
  sampler_ = std::make_unique<BatchSampler>(train_data_->size(), config_.seed());

  // Where loss scaling runs is decided here, once.
  auto plan = PlanLossScaling(config_, *plugins_->backend, plugins_->device_name,
                              plugins_->scaler, plugins_->precision_name,
                              loss_scaling_active_);
  if (!plan.ok()) return plan.status();
  loss_scaling_description_ = plan->description;
  loss_scale_floor_ = plan->min_scale;
  // ABI 1.6: the device scale goes to the model as a tensor (no per-step read).
  device_loss_multiplier_ = plan->on_device && loss_scaling_active_ &&
                            plugins_->model.TakesDeviceLossMultiplier();
  if (auto s = Optimizer::CheckStochasticRounding(config_.optimizer(), *plugins_->backend,
                                                  params_->mixed(), params_->weight_dtype(),
                                                  plugins_->precision_name,
                                                  params_->splits_parameters());
      !s.ok())
    return s;
  // ABI 1.7: on the device path the lr is a device scalar too.
  auto optimizer = Optimizer::Create(
      config_.optimizer(), params_.get(), client, /*skips_on_device=*/plan->on_device,
      Optimizer::UsesMultiTensor(config_.optimizer(), *plugins_->backend),
      /*device_lr=*/plan->on_device && Optimizer::TakesDeviceLr(*plugins_->backend));
  if (!optimizer.ok()) return optimizer.status();
  optimizer_ = std::move(*optimizer);
  // A checkpoint restores the seed it was saved with.
  optimizer_->set_rounding_seed(Optimizer::RoundingSeedFor(config_.seed()));
  LossScalingContext context;
  context.client = &client;
  context.scaler = &plugins_->scaler;
  context.scalars = scalars_.get();
  context.max_grad_norm = static_cast<float>(config_.clip_grad_norm());
  context.micro_batches = MicroBatches(config_);
  context.precision_name = plugins_->precision_name;
  if (params_->sharded()) {  // each rank checked its share for inf/NaN
    context.max_over_ranks = [this](const MNT_Tensor& t) { return data_parallel_->MaxInPlace(t); };
  }
  if (params_->norm_is_partial()) {  // each rank adds its share's norm
    context.sum_over_ranks = [this](const MNT_Tensor& t) { return data_parallel_->SumInPlace(t); };
  }
  auto scaling = MakeLossScaling(*plan, context, loss_scaling_active_,
                                 optimizer_.get(), plugins_->device_name);
  if (!scaling.ok()) return scaling.status();
  scaling_ = std::move(*scaling);

  evaluator_ = std::make_unique<Evaluator>(&plugins_->model, &client, params_.get(),
                                           batch_.get(), scalars_.get(),
                                           config_.batch_size(), config_.eval_batches());
  if (ranks_ != nullptr) evaluator_->SplitAcrossRanks(ranks_);
  // The sampler hands out every rank's part of every micro-batch.
  eval_policy_ = std::make_unique<EvalPolicy>(
      config_, sampler_.get(),
      MicroBatches(config_) * config_.batch_size() *
          (ranks_ != nullptr ? ranks_->world_size() : 1));
  TrainingCheckpoint::Parts parts;
  parts.config = &config_;
  parts.precision_name = plugins_->precision_name;
  parts.client = &client;
  parts.params = params_.get();
  parts.optimizer = optimizer_.get();
  parts.sampler = sampler_.get();
  parts.scaler = &plugins_->scaler;
  parts.scaling = scaling_.get();
  parts.fp8 = fp8_.get();
  parts.eval_policy = eval_policy_.get();
  if (params_->sharded()) {
    parts.gather_working_weights = [this] { return GatherWorkingWeights(); };
    parts.all_gather = [this](const std::string& mine) { return ranks_->AllGather(mine); };
  }
  checkpoint_ = std::make_unique<TrainingCheckpoint>(parts);
  return absl::OkStatus();
}

namespace {

// A step opened with Backend_StepBegin (ABI 1.7), closed on every way out of
// TrainStep: an error return keeps its own message (the step failed
// already; StepEnd then only issues or drops what was deferred).
class MarkedStep {
 public:
  explicit MarkedStep(const sdk::BackendClient& backend) : backend_(backend) {}
  MarkedStep(const MarkedStep&) = delete;
  MarkedStep& operator=(const MarkedStep&) = delete;
  ~MarkedStep() {
    if (open_) (void)backend_.StepEnd();
  }
  // Data parallel: no markers. A collective is no Backend_Run op, so a
  // backend that defers a marked step's ops would issue it out of order.
  // --debug_overflow: none either (every op is read back as it runs).
  absl::Status Begin(bool data_parallel) {
    if (data_parallel || !backend_.HasStepMarkers()) return absl::OkStatus();
    if (auto s = sdk::ToAbsl(backend_.StepBegin()); !s.ok()) return s;
    open_ = true;
    return absl::OkStatus();
  }
  absl::Status End(bool* replayed) {
    *replayed = false;
    if (!open_) return absl::OkStatus();
    open_ = false;
    return sdk::ToAbsl(backend_.StepEnd(replayed));
  }

 private:
  const sdk::BackendClient& backend_;
  bool open_ = false;
};

}  // namespace

absl::Status Trainer::TrainStep(bool report, StepMetrics* metrics) {
  const int64_t accum = MicroBatches(config_);
  const int64_t batch = config_.batch_size();
  const sdk::ModelClient& model = plugins_->model;
  // The scheduled lr goes to the device before the step's first op (one
  // host -> device copy), so the step's ops are the same every step.
  metrics->lr = LearningRateAt(config_, step_);
  if (auto s = optimizer_->SetLearningRate(metrics->lr); !s.ok()) return s;
  // The loss multiplier: scale * (1/accum), as one fp32 product on either
  // side. With the scale on the device and a model that takes it there (ABI
  // 1.6), nothing is read back unless this step is reported.
  float scale = 1.0f;
  std::optional<MNT_Tensor> device_multiplier;
  if (device_loss_multiplier_) {
    auto m = scaling_->DeviceLossMultiplier();
    if (!m.ok()) return m.status();
    device_multiplier = *m;
  }
  if (!device_multiplier.has_value() || report) {
    auto s = scaling_->StepScale();
    if (!s.ok()) return s.status();
    scale = *s;
  }
  metrics->loss_scale = scale;
  const float multiplier = scale * (1.0f / static_cast<float>(accum));

  const std::vector<MNT_Tensor> weights = params_->WeightTensors();
  const std::vector<MNT_Tensor> grads = params_->GradTensors();
  const MNT_DataSpec spec = train_data_->spec();
  const MNT_Tensor inputs = batch_->Inputs(spec, batch);
  const MNT_Tensor targets = batch_->Targets(spec, batch);
  double loss_sum = 0;
  // The step's work between the backend's step markers, so a backend may
  // capture it and replay it (CUDA graphs): the first batch is uploaded
  // before the step begins. Later micro-batches upload inside it, and reads
  // (the host loss-scaling path's loss and found_inf) happen inside it: the
  // backend then runs that step as issued, with the same results.
  if (auto s = MaybeFillWeights(); !s.ok()) return s;
  MarkedStep marked(plugins_->backend->client());
  for (int64_t micro = 0; micro < accum; ++micro) {
    Stopwatch phase;
    if (auto s = batch_->Upload(*train_data_, NextLocalBatch()); !s.ok()) return s;
    phases_.Add("data", phase.Seconds());
    if (micro == 0 && step_ == 0 && fp8_ != nullptr && fp8_->delayed() &&
        fp8_->recipe().calibrate != 0) {
      if (auto s = CalibrateFp8(inputs, targets, multiplier,
                                device_multiplier.has_value() ? &*device_multiplier : nullptr);
          !s.ok())
        return s;
    }
    if (micro == 0) {
      if (auto s = marked.Begin(data_parallel_ != nullptr || plugins_->tracer != nullptr);
          !s.ok())
        return s;
    }

    phase.Restart();
    if (plugins_->tracer) plugins_->tracer->BeginPhase(step_ + 1, "forward");
    if (auto s = sdk::ToAbsl(model.Forward(weights, inputs, targets, /*training=*/true,
                                            scaling_->LossOutput(micro)));
        !s.ok())
      return Prefixed(s, "model forward: ");
    if (auto s = StopIfTraced(); !s.ok()) return s;
    // Every rank reads (when it reads) the global batch's mean loss.
    if (data_parallel_ != nullptr) {
      if (auto s = data_parallel_->AverageInPlace(scaling_->LossOutput(micro)); !s.ok()) return s;
    }
    auto loss = scaling_->MicroBatchLoss(micro);
    if (!loss.ok()) return loss.status();
    loss_sum += *loss;
    phases_.Add("forward", phase.Seconds());

    phase.Restart();
    // fp32 grads accumulate in place; 16-bit grads are per micro-batch and
    // summed into the fp32 master gradients.
    const bool accumulate = !params_->mixed() && micro > 0;
    if (plugins_->tracer) plugins_->tracer->BeginPhase(step_ + 1, "backward");
    // Exchange in backward: the model hands over finished slices, which are
    // accumulated there and (last micro-batch) exchanged bucket by bucket.
    if (readiness_ != nullptr) {
      readiness_->Reset();
      handover_ = {true, micro, micro + 1 == accum, absl::OkStatus()};
    }
    absl::Status backward = sdk::ToAbsl(model.Backward(
        weights, grads, multiplier,
        device_multiplier.has_value() ? &*device_multiplier : nullptr, accumulate));
    handover_.armed = false;
    if (!backward.ok()) return Prefixed(backward, "model backward: ");
    if (auto s = StopIfTraced(); !s.ok()) return s;
    if (readiness_ != nullptr) {
      if (auto s = FinishHandover(); !s.ok()) return s;
    } else if (auto s = params_->AccumulateMasterGradients(micro); !s.ok()) {
      return s;
    }
    // FP8: this micro-batch's amax into the history and the next pass's
    // scales (on the device), after every forward and backward as
    // Transformer Engine's fp8_autocast per micro-batch: with gradient
    // accumulation every micro-batch is measured.
    if (auto s = UpdateFp8Scales(); !s.ok()) return s;
    phases_.Add("backward", phase.Seconds());
  }
  metrics->loss = loss_sum / static_cast<double>(accum);

  // Data parallel: injected before bucket 0's exchange (ExchangeBucket).
  if (data_parallel_ == nullptr) {
    if (auto s = MaybeInjectInfGradient(); !s.ok()) return s;
  }
  Stopwatch phase;
  // The global batch's gradient on every rank (ZeRO-1: of its share): from
  // here on every rank unscales, finds inf/NaN, clips, skips and steps on
  // the same bits.
  if (data_parallel_ != nullptr) {
    Stopwatch exchange;
    if (auto s = ExchangeGradients(); !s.ok()) return s;
    phases_.Add("gradient exchange", exchange.Seconds());
    phase.Restart();
  }
  auto gate = scaling_->UnscaleUpdateAndClip(
      scale, {params_->UnscaledGradTensors(), params_->NormGradTensors()}, metrics);
  if (!gate.ok()) return gate.status();
  if (gate->run_optimizer) {
    if (auto s = optimizer_->Step(metrics->lr, gate->found_inf, gate->multiplier, step_ + 1);
        !s.ok())
      return s;
    if (params_->sharded()) {
      Stopwatch gather;
      if (auto s = GatherWorkingWeights(); !s.ok()) return s;
      phases_.Add("weight gather", gather.Seconds());
    }
  }
  bool replayed = false;
  if (auto s = marked.End(&replayed); !s.ok()) return s;
  if (replayed) ++replayed_steps_;
  phases_.Add("optimizer", phase.Seconds());
  ++step_;
  return absl::OkStatus();
}

std::string Trainer::Fp8Description() const {
  const MNT_Precision_GetScalingRecipe_Args& r = fp8_->recipe();
  const std::string formats = absl::StrCat(sdk::DTypeName(r.forward_dtype), " forward, ",
                                           sdk::DTypeName(r.backward_dtype), " gradients");
  std::string recipe;
  if (fp8_->delayed()) {
    recipe = absl::StrCat("delayed scaling, amax history ", r.history_length, " (",
                          r.amax_algo == MNT_AMAX_ALGO_MAX ? "max" : "most recent", ")",
                          r.calibrate != 0 ? ", calibrated on the first batch" : "");
  } else {
    recipe = "current scaling";
  }
  return absl::StrCat("FP8 GEMMs: ", formats, ", ", recipe, ", margin ", r.margin,
                      r.fast_accumulation_forward != 0 ? ", fast accumulation forward" : "",
                      "; scaling state ", absl::StrFormat("%.1f KiB", fp8_->device_bytes() / 1024.0),
                      " on the device (", 3 * fp8_->slots(), " tensor slots)");
}

absl::Status Trainer::UpdateFp8Scales() {
  if (fp8_ == nullptr || !fp8_->delayed()) return absl::OkStatus();
  // Data parallel: every rank scales with the same amax, so the ranks' FP8
  // operands are quantized alike.
  if (data_parallel_ != nullptr) {
    if (auto s = data_parallel_->MaxInPlace(fp8_->flat_amax()); !s.ok()) return s;
  }
  return fp8_->Update();
}

absl::Status Trainer::CalibrateFp8(const MNT_Tensor& inputs, const MNT_Tensor& targets,
                                   float multiplier, const MNT_Tensor* device_multiplier) {
  // The gradients it writes are overwritten by the step's first backward.
  const sdk::ModelClient& model = plugins_->model;
  const std::vector<MNT_Tensor> weights = params_->WeightTensors();
  if (auto s = sdk::ToAbsl(model.Forward(weights, inputs, targets, /*training=*/true,
                                          scaling_->LossOutput(0)));
      !s.ok())
    return Prefixed(s, "FP8 calibration forward: ");
  if (auto s = sdk::ToAbsl(model.Backward(weights, params_->GradTensors(), multiplier,
                                           device_multiplier, /*accumulate=*/false));
      !s.ok())
    return Prefixed(s, "FP8 calibration backward: ");
  return UpdateFp8Scales();
}

absl::Status Trainer::MaybeFillWeights() {
  const auto& fault = FillWeightsFault();
  if (!fault.has_value() || fault->step != step_ + 1) return absl::OkStatus();
  for (const Param& p : params_->params()) {
    if (p.name != fault->param) continue;
    const MNT_FillParams fill{MNT_FillParams_STRUCT_SIZE, fault->value};
    return sdk::ToAbsl(
        plugins_->backend->client().Run(MNT_OP_FILL, {}, {params_->WorkingWeights(p)}, &fill));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("MANTISSA_FAULT_FILL_WEIGHTS: the model has no parameter '", fault->param, "'"));
}

absl::StatusOr<std::vector<std::string>> Trainer::NonFiniteGradientParams() {
  // The skipped step's gradients are not used again (the next backward
  // overwrites them), so the check may scale them in place: per piece,
  // NONFINITE_CHECK_UNSCALE into the zeroed `correct` scalar, read back.
  const sdk::BackendClient& client = plugins_->backend->client();
  const MNT_FillParams zero{MNT_FillParams_STRUCT_SIZE, 0.0};
  std::set<int64_t> flagged;  // parameter indices
  for (const ParamPiece& piece : params_->steps()) {
    if (flagged.count(piece.param) != 0) continue;
    const MNT_Tensor flag = F32Scalar(scalars_->correct);
    const MNT_Tensor grad = params_->PieceGrad(piece);
    if (auto s = sdk::ToAbsl(client.Run(MNT_OP_FILL, {}, {flag}, &zero)); !s.ok()) return s;
    if (auto s = sdk::ToAbsl(client.Run(MNT_OP_NONFINITE_CHECK_UNSCALE,
                                        {F32Scalar(scalars_->inv_scale), grad}, {flag, grad}));
        !s.ok())
      return s;
    auto found = ReadScalar<float>(client, scalars_->correct.data());
    if (!found.ok()) return found.status();
    if (*found != 0) flagged.insert(piece.param);
  }
  // ZeRO-1: each rank holds the averaged gradient of its share only; the
  // ranks' findings are joined (every rank calls this, see TrainUntil).
  if (params_->sharded()) {
    auto all = ranks_->AllGather(absl::StrJoin(flagged, ","));
    if (!all.ok()) return all.status();
    for (const std::string& part : *all) {
      for (absl::string_view index : absl::StrSplit(part, ',', absl::SkipEmpty())) {
        int64_t i = 0;
        if (!absl::SimpleAtoi(index, &i) || i < 0 ||
            i >= static_cast<int64_t>(params_->params().size())) {
          return absl::InternalError(absl::StrCat("a rank sent parameter index '", index, "'"));
        }
        flagged.insert(i);
      }
    }
  }
  // In the order backward reaches them: the model's last first.
  std::vector<std::string> names;
  for (auto i = flagged.rbegin(); i != flagged.rend(); ++i) {
    names.push_back(params_->params()[*i].name);
  }
  return names;
}

std::string Trainer::debug_overflow_report() const {
  const OpTracer* tracer = plugins_ != nullptr ? plugins_->tracer.get() : nullptr;
  return tracer != nullptr && tracer->tripped() ? tracer->Report() : "";
}

absl::Status Trainer::StopIfTraced() {
  const OpTracer* tracer = plugins_->tracer.get();
  if (tracer == nullptr || !tracer->tripped()) return absl::OkStatus();
  return absl::AbortedError(tracer->Summary());
}

absl::Status Trainer::ExchangeGradients() {
  // The buckets backward did not complete (all of them without the
  // hand-over), in order.
  std::vector<int64_t> buckets;
  if (readiness_ != nullptr) {
    buckets = readiness_->Unfinished();
  } else {
    for (size_t b = 0; b < params_->layout().buckets().size(); ++b) {
      buckets.push_back(static_cast<int64_t>(b));
    }
  }
  for (int64_t b : buckets) {
    if (auto s = ExchangeBucket(b); !s.ok()) return s;
  }
  // The exchanges started in backward and above, finished: what is left of
  // them now is the exchange backward could not hide.
  return data_parallel_->Join();
}

absl::Status Trainer::ExchangeBucket(int64_t b) {
  if (b == 0) {  // the fault test's inf goes into flat element 0
    if (auto s = MaybeInjectInfGradient(); !s.ok()) return s;
  }
  ++buckets_exchanged_;
  const ShardLayout& layout = params_->layout();
  const auto [begin, end] = layout.buckets()[b];
  // Started: it runs while backward computes the buckets still to come (a
  // finished bucket's gradients are written no more) and is joined in
  // ExchangeGradients.
  if (!params_->sharded()) {
    return data_parallel_->StartAverage(params_->FlatOptimizerGrads(begin, end));
  }
  // ZeRO-1: the bucket reduce-scattered, so a rank receives the average of
  // its chunk only, into its share's gradient buffer.
  const MNT_Tensor mine = params_->ShardGrads(layout.ShardOffset(b), (end - begin) / layout.world());
  return data_parallel_->StartAverageScattered(params_->FlatOptimizerGrads(begin, end), mine);
}

void Trainer::OnGradientReady(void* trainer, int64_t param, int64_t first, int64_t count) {
  Trainer* t = static_cast<Trainer*>(trainer);
  if (!t->handover_.armed || !t->handover_.error.ok()) return;
  t->handover_.error = t->HandleGradientReady(param, first, count);
}

absl::Status Trainer::HandleGradientReady(int64_t param, int64_t first, int64_t count) {
  std::vector<int64_t> completed;
  if (auto s = readiness_->Mark(param, first, count, &completed); !s.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model plugin '", config_.model(), "' broke the gradient hand-over (capability "
        "MODEL_GRADIENT_READY): ", s.message(), "; --exchange_in_backward=off works around it"));
  }
  if (auto s = params_->AccumulateMasterGradients(handover_.micro, param, first, count);
      !s.ok())
    return s;
  if (!handover_.last_micro) return absl::OkStatus();
  for (int64_t b : completed) {
    if (auto s = ExchangeBucket(b); !s.ok()) return s;
    ++buckets_in_backward_;
  }
  return absl::OkStatus();
}

absl::Status Trainer::FinishHandover() {
  if (!handover_.error.ok()) return handover_.error;
  if (readiness_->finished_elements() != readiness_->total_elements()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model plugin '", config_.model(), "' handed over ",
        readiness_->finished_elements(), " of its ", readiness_->total_elements(),
        " gradient elements in a backward (capability MODEL_GRADIENT_READY); "
        "--exchange_in_backward=off works around it"));
  }
  return absl::OkStatus();
}

absl::Status Trainer::GatherWorkingWeights() {
  if (!params_->sharded()) return absl::OkStatus();
  // Every rank's updated chunk of each bucket to every rank, in place: bytes
  // copied, so every rank holds the bits its share's rank rounded.
  for (const auto& [begin, end] : params_->layout().buckets()) {
    if (auto s = data_parallel_->GatherInPlace(params_->FlatWorkingWeights(begin, end)); !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status Trainer::MaybeInjectInfGradient() {
  const auto& fault = InfGradientFault();
  const int rank = ranks_ != nullptr ? ranks_->rank() : 0;
  if (!fault.has_value() || fault->rank != rank || fault->step != step_ + 1) {
    return absl::OkStatus();
  }
  const MNT_Tensor flat = params_->FlatOptimizerGrads();
  if (flat.dtype != MNT_DTYPE_F32) {
    return absl::FailedPreconditionError(
        "MANTISSA_FAULT_INF_GRADIENT: the exchanged gradient is not fp32");
  }
  const float inf = std::numeric_limits<float>::infinity();
  return sdk::ToAbsl(plugins_->backend->client().ToDevice(flat.data, &inf, sizeof inf));
}

std::vector<int64_t> Trainer::NextLocalBatch() {
  const int64_t b = config_.batch_size();
  if (ranks_ == nullptr) return sampler_->NextBatch(b);
  const std::vector<int64_t> global = sampler_->NextBatch(b * ranks_->world_size());
  const auto first = global.begin() + ranks_->rank() * b;
  return std::vector<int64_t>(first, first + b);
}

absl::StatusOr<int> Trainer::AgreedStopSignal() {
  int sig = stop_check_ != nullptr ? stop_check_() : 0;
  if (ranks_ == nullptr) return sig;
  // mpirun hands a Ctrl-C to every rank, not at the same step: the ranks
  // agree at every step boundary, so all stop at the same one.
  auto any = ranks_->SumInRankOrder({static_cast<double>(sig)});
  if (!any.ok()) return any.status();
  if ((*any)[0] == 0) return 0;
  return sig != 0 ? sig : 2;  // a rank not signalled stops as for SIGINT
}

std::string Trainer::data_parallel_description() const {
  if (data_parallel_ == nullptr) return "";
  const std::string buckets =
      params_->sharded()
          ? absl::StrCat(params_->layout().buckets().size(), " bucket(s)")
          : (config_.bucket_mb() > 0 ? absl::StrCat(config_.bucket_mb(), " MiB buckets")
                                     : std::string("one bucket"));
  return absl::StrCat(
      "data parallel: rank ", ranks_->rank(), " of ", ranks_->world_size(), ", global batch ",
      ranks_->world_size() * config_.batch_size(), " (", config_.batch_size(),
      " per rank); gradients ", params_->sharded() ? "reduce-scattered" : "averaged", " in ",
      buckets, " through the ", plugins_->device_name, " backend's collectives extension",
      readiness_ != nullptr ? ", each issued as soon as backward has finished it" : "",
      data_parallel_->starts_collectives()
          ? (readiness_ != nullptr ? " and running while backward goes on"
                                   : ", started together after backward")
          : (readiness_ != nullptr ? " (run at once: the extension's version 1 starts none)"
                                   : ""),
      params_->sharded()
          ? absl::StrCat("; ZeRO-1: this rank keeps the master weights, optimizer state and "
                         "averaged gradient of 1/", ranks_->world_size(), " of the parameters' ",
                         "elements (", params_->layout().share(), "), and the ranks all-gather "
                         "the working weights after each update")
          : std::string());
}

double Trainer::collective_seconds() const {
  return data_parallel_ != nullptr ? data_parallel_->collective_seconds() : 0;
}

int64_t Trainer::collective_calls() const {
  return data_parallel_ != nullptr ? data_parallel_->collective_calls() : 0;
}

absl::Status Trainer::Train(MetricsSink* sink) {
  return WithMemoryAdvice(TrainUntil(config_.steps(), sink), config_, train_data_.get(),
                          plugins_.get());
}

absl::Status Trainer::TrainUntil(int64_t last_step, MetricsSink* sink) {
  const int64_t total = config_.steps();
  last_step = std::min(last_step, total);
  // Samples per step of the whole job: every rank's part of the global batch.
  const int64_t world = ranks_ != nullptr ? ranks_->world_size() : 1;
  ThroughputMeter meter(world * config_.batch_size() * MicroBatches(config_),
                        targets_per_example_);
  MNT_LossScalerState start{};
  if (auto s = sdk::ToAbsl(plugins_->scaler.GetState(&start)); !s.ok())
    return AtStep(s, step_ + 1);
  SkipGuard guard(step_, start.skipped_steps,
                  loss_scaling_active_ && config_.loss_scale().mode() == "static",
                  loss_scale_floor_);
  // A static scale that overflows every step stops the run, with a scale
  // measured on the stopped step's batch as its advice.
  guard.set_scale_finder([this](double failing) {
    const MNT_DataSpec spec = train_data_->spec();
    return StaticScaleSearch({&plugins_->backend->client(), &plugins_->model, params_.get(),
                              scalars_.get(), batch_->Inputs(spec, config_.batch_size()),
                              batch_->Targets(spec, config_.batch_size()), MicroBatches(config_)})
        .Advise(failing);
  });
  const sdk::BackendClient& client = plugins_->backend->client();
  if (fp8_ != nullptr && sink != nullptr && !fp8_announced_) {
    fp8_announced_ = true;
    sink->OnMessage(Fp8Description());
  }
  while (step_ < last_step && !eval_policy_->stop()) {
    StepMetrics m;
    const int64_t reads_before = client.device_to_host_copies();
    const bool will_report = sink != nullptr && sink->NeedsStepMetrics(step_ + 1, total);
    if (auto s = TrainStep(will_report, &m); !s.ok()) return AtStep(s, step_ + 1);
    m.step = step_;
    m.total_steps = total;
    meter.OnStep(&m);
    const bool wanted = sink != nullptr && sink->NeedsStepMetrics(step_, total);
    auto report = scaling_->CompleteStepMetrics(wanted, &m);
    if (!report.ok()) return AtStep(report.status(), step_);
    if (!wanted) unreported_step_reads_ += client.device_to_host_copies() - reads_before;
    bool name_overflow = *report && m.skipped && sink != nullptr;
    if (params_->sharded()) {
      // ZeRO-1: the ranks look at their shares together, when rank 0 (which
      // reports) asks; the others do not read every step's metrics.
      auto asked = ranks_->SumInRankOrder({ranks_->rank() == 0 && name_overflow ? 1.0 : 0.0});
      if (!asked.ok()) return AtStep(asked.status(), step_);
      name_overflow = (*asked)[0] != 0;
    }
    if (name_overflow) {
      // Where the overflow is: one flag read per parameter, skipped steps only.
      auto names = NonFiniteGradientParams();
      if (!names.ok()) return AtStep(names.status(), step_);
      m.nonfinite_params = std::move(*names);
      if (!m.nonfinite_params.empty()) {
        sink->OnMessage(absl::StrCat(
            "step ", step_, " skipped: inf/NaN in the gradient of ", m.nonfinite_params[0],
            m.nonfinite_params.size() > 1
                ? absl::StrCat(" (first reached by backward) and ", m.nonfinite_params.size() - 1,
                               " more (", absl::StrJoin(m.nonfinite_params.begin() + 1,
                                                         m.nonfinite_params.begin() +
                                                             std::min<size_t>(4, m.nonfinite_params.size()),
                                                         ", "),
                               m.nonfinite_params.size() > 4 ? ", ..." : "", ")")
                : std::string(),
            "; --debug_overflow traces the op that made it"));
      }
    }
    // FP8 scales at --log_every (one device read each), like the console.
    const bool fp8_due = step_ == 1 || step_ == total ||
                         (config_.log_every() > 0 && step_ % config_.log_every() == 0);
    if (*report && sink != nullptr && fp8_ != nullptr && fp8_due) {
      auto entries = fp8_->Read();
      if (!entries.ok()) return AtStep(entries.status(), step_);
      for (const Fp8Scaling::Entry& e : *entries) m.fp8_scales.push_back({e.name, e.scale, e.amax});
    }
    if (*report && sink != nullptr) sink->OnStep(m);
    if (*report && loss_scaling_active_) {
      // fp16 that skips step after step learns nothing: say so now.
      auto warning = guard.Observe(m);
      if (!warning.ok()) return AtStep(warning.status(), step_);
      if (!warning->empty() && sink != nullptr) sink->OnMessage(*warning);
    }
    double side_seconds = 0;
    if (auto s = EvaluateAndCheckpointIfDue(step_ == last_step, sink, &side_seconds); !s.ok())
      return AtStep(s, step_);
    meter.Exclude(side_seconds);
    // A log that cannot be written (a full disk) stops the run now.
    if (sink != nullptr) {
      if (absl::Status s = sink->status(); !s.ok()) return AtStep(s, step_);
    }
    // Ctrl-C / SIGTERM: stop here, with this step's work saved.
    if ((stop_check_ != nullptr || ranks_ != nullptr) && step_ < last_step) {
      auto agreed = AgreedStopSignal();
      if (!agreed.ok()) return AtStep(agreed.status(), step_);
      if (const int sig = *agreed; sig != 0) {
        stopped_by_signal_ = sig;
        if (!config_.checkpoint_dir().empty() && last_checkpoint_step_ != step_) {
          Stopwatch phase;
          if (auto s = SaveStepCheckpoint(sink); !s.ok()) return AtStep(s, step_);
          meter.Exclude(phase.Seconds());
        }
        break;
      }
    }
  }
  // One clock reading for both: rate x time = samples exactly.
  train_seconds_ = meter.TrainSeconds();
  samples_per_second_ = train_seconds_ > 0 ? meter.samples() / train_seconds_ : 0;
  // The plugin's scaler is the truth for the report and later checkpoints.
  return AtStep(scaling_->SyncToPlugin(step_), step_);
}

absl::Status Trainer::EvaluateAndCheckpointIfDue(bool last, MetricsSink* sink,
                                                 double* seconds) {
  EvalPolicy::Verdict verdict;
  if (eval_policy_->EvalDue(step_, last)) {
    Stopwatch phase;
    auto eval = Evaluate();
    if (!eval.ok()) return eval.status();
    phases_.Add("eval", phase.Seconds());
    *seconds += phase.Seconds();
    if (sink) sink->OnEval(*eval);
    verdict = eval_policy_->OnEval(*eval);
    if (sink && !verdict.message.empty()) sink->OnMessage(verdict.message);
  }
  const int64_t every = config_.checkpoint_every();
  if (!config_.checkpoint_dir().empty() &&
      ((every > 0 && step_ % every == 0) || last || verdict.save_checkpoint)) {
    Stopwatch phase;
    if (auto s = SaveStepCheckpoint(sink); !s.ok()) return s;
    phases_.Add("checkpoint", phase.Seconds());
    *seconds += phase.Seconds();
  }
  return absl::OkStatus();
}

absl::Status Trainer::SaveStepCheckpoint(MetricsSink* sink) {
  auto ckpt = checkpoint_->Capture(step_);
  if (!ckpt.ok()) return ckpt.status();
  // Every rank holds the same whole state (it checks so here: a rank whose
  // state drifted would otherwise go unnoticed); rank 0 writes it.
  if (ranks_ != nullptr) {
    if (!params_->sharded()) {
      if (auto s = CheckRanksHoldOneState(*ckpt); !s.ok()) return s;
    }
    if (ranks_->rank() != 0) {
      last_checkpoint_step_ = step_;
      return absl::OkStatus();
    }
  }
  const std::string& dir = config_.checkpoint_dir();
  const std::string path = StepCheckpointPath(dir, step_);
  if (auto s = TrainingCheckpoint::Write(path, *ckpt); !s.ok()) return s;
  last_checkpoint_step_ = step_;
  auto best_note = eval_policy_->PublishBest(dir, path, step_);
  if (!best_note.ok()) return best_note.status();
  std::vector<std::string> removed;
  if (auto s = PublishCheckpoint(dir, path, config_.save_total_limit(), &removed); !s.ok())
    return s;
  // The run's config beside its checkpoint, once the checkpoint is safe:
  // `--config` reads it back to resume or evaluate the run.
  std::string config_note;
  if (!wrote_run_config_) {
    auto saved = SaveRunConfig(config_);
    if (!saved.ok()) return saved.status();
    wrote_run_config_ = true;
    config_note = absl::StrCat("; its config: ", *saved, ", which train --resume_from=", dir,
                               " reads back");
  }
  if (sink == nullptr) return absl::OkStatus();
  std::string line = absl::StrCat("checkpoint: ", path, " (step ", step_, "; also ",
                                  LatestCheckpointPath(dir), *best_note, config_note);
  for (const std::string& r : removed) {
    absl::StrAppend(&line, "; removed ", std::filesystem::path(r).filename().string());
  }
  sink->OnMessage(line + ")");
  return absl::OkStatus();
}

absl::StatusOr<EvalMetrics> Trainer::Evaluate() {
  const BatchSource& source = eval_data_ ? *eval_data_ : *train_data_;
  auto m = evaluator_->Run(source, step_);
  if (!m.ok()) return m.status();
  last_eval_ = *m;
  has_eval_ = true;
  return m;
}

absl::Status Trainer::CheckRanksHoldOneState(const CheckpointData& ckpt) {
  uint64_t hash = kFnv1aOffset;
  for (const TensorData& t : ckpt.tensors()) hash = Fnv1a(t.data(), Fnv1a(t.name(), hash));
  const std::string mine = absl::StrCat(absl::Hex(hash, absl::kZeroPad16), " scale ",
                                        ckpt.loss_scale(), " skipped ",
                                        ckpt.loss_scale_skipped_steps());
  auto all = ranks_->AllGather(mine);
  if (!all.ok()) return all.status();
  for (size_t r = 1; r < all->size(); ++r) {
    if ((*all)[r] == (*all)[0]) continue;
    return absl::InternalError(absl::StrCat(
        "data parallel: rank ", r, "'s training state differs from rank 0's at step ", step_,
        " (", (*all)[r], " vs ", (*all)[0],
        "); the ranks must step on the same averaged gradient: does the backend's "
        "all-reduce give every rank the same bits?"));
  }
  return absl::OkStatus();
}

absl::Status Trainer::SaveCheckpoint(const std::string& path) {
  return checkpoint_->Save(path, step_);
}

absl::Status Trainer::RestoreCheckpoint(const std::string& path) {
  return checkpoint_->Restore(path, &step_);
}

const std::string& Trainer::restore_note() const { return checkpoint_->restore_note(); }

FinalReport Trainer::Report() const {
  FinalReport r;
  r.backend = plugins_->backend_description;
  r.precision = plugins_->precision_name;
  r.model = config_.model();
  r.num_parameters = params_->num_parameters();
  const MNT_Precision_GetMemoryPlan_Args& plan = plugins_->plan;
  r.bytes_weights = plan.bytes_weights;
  r.bytes_master_weights = plan.bytes_master_weights;
  r.bytes_gradients = plan.bytes_gradients;
  r.bytes_master_gradients = plan.bytes_master_gradients;
  r.bytes_optimizer_state = plan.bytes_optimizer_state;
  r.memory = MemoryReport(plugins_->backend->client());
  r.phases = phases_.phases();
  r.steps = step_;
  r.replayed_steps = replayed_steps_;
  if (ranks_ != nullptr) {
    r.ranks = ranks_->world_size();
    r.collective_seconds = collective_seconds();
    r.collective_calls = collective_calls();
    r.buckets_exchanged = buckets_exchanged_;
    r.buckets_in_backward = buckets_in_backward_;
    r.buckets_started =
        data_parallel_ != nullptr && data_parallel_->starts_collectives() ? buckets_exchanged_ : 0;
  }
  r.stopped_by_signal = stopped_by_signal_;
  r.stopped_early = eval_policy_->stop();
  MNT_Backend_GetInfo_Args info;
  if (plugins_->backend->GetInfo(&info).ok() &&
      MNT_HAS_FIELD(&info, MNT_Backend_GetInfo_Args, slow_paths) && info.slow_paths != nullptr) {
    r.slow_paths = absl::StrSplit(info.slow_paths, '\n', absl::SkipEmpty());
  }
  MNT_LossScalerState st{};
  if (plugins_->scaler.GetState(&st).ok()) {
    r.skipped_steps = st.skipped_steps;
    r.final_loss_scale = loss_scaling_active_ ? st.scale : 1.0;
  }
  r.samples_per_second = samples_per_second_;
  r.train_seconds = train_seconds_;
  r.tokens_per_second = TokensPerSecond(samples_per_second_, targets_per_example_);
  r.last_eval = last_eval_;
  r.has_eval = has_eval_;
  return r;
}

int64_t Trainer::num_parameters() const { return params_->num_parameters(); }
const std::string& Trainer::precision() const { return plugins_->precision_name; }
const std::string& Trainer::device() const { return plugins_->device_name; }
bool Trainer::device_loss_scaling() const {
  return loss_scaling_active_ && scaling_->on_device();
}
bool Trainer::device_step_scalars() const { return scaling_->on_device(); }

const std::string& Trainer::loss_scaling_description() const {
  return loss_scaling_description_;
}

}  // namespace mnt::trainer
