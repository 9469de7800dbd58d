#include "trainer/core/trainer.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <optional>
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
#include "trainer/core/fault_observer.h"
#include "trainer/core/fp8_observer.h"
#include "trainer/core/overflow_names.h"
#include "trainer/core/tracer_observer.h"
#include "trainer/debug/op_tracer.h"
#include "trainer/parallel/gradient_sync.h"
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


// The step's loss multiplier: scale * (1/micro-batches), as one fp32
// product on either side. With the scale on the device and a model that
// takes it there (ABI 1.6), nothing is read back unless the step is
// reported.
struct LossMultiplier {
  float scale = 1.0f;
  float value = 1.0f;
  std::optional<MNT_Tensor> device;
};

absl::StatusOr<LossMultiplier> StepLossMultiplier(LossScaling& scaling, bool on_device,
                                                  bool report, int64_t micro_batches) {
  LossMultiplier m;
  if (on_device) {
    auto d = scaling.DeviceLossMultiplier();
    if (!d.ok()) return d.status();
    m.device = *d;
  }
  if (!m.device.has_value() || report) {
    auto s = scaling.StepScale();
    if (!s.ok()) return s.status();
    m.scale = *s;
  }
  m.value = m.scale * (1.0f / static_cast<float>(micro_batches));
  return m;
}

// `body` timed into phase `name` of `phases` (nullptr: not timed).
template <typename Body>
absl::Status Timed(PhaseTimes* phases, const char* name, Body body) {
  Stopwatch clock;
  absl::Status s = body();
  if (name != nullptr) phases->Add(name, clock.Seconds());
  return s;
}

// What the ranks compare to check they hold one training state.
std::string StateFingerprint(const CheckpointData& ckpt) {
  uint64_t hash = kFnv1aOffset;
  for (const TensorData& t : ckpt.tensors()) hash = Fnv1a(t.data(), Fnv1a(t.name(), hash));
  return absl::StrCat(absl::Hex(hash, absl::kZeroPad16), " scale ", ckpt.loss_scale(),
                      " skipped ", ckpt.loss_scale_skipped_steps());
}

// A step opened with Backend_StepBegin (ABI 1.7), closed on every way out of
// TrainStep: an error return keeps its own message (the step failed
// already; StepEnd then only issues or drops what was deferred).
class MarkedStep {
 public:
  MarkedStep(const sdk::BackendClient& backend, bool enabled)
      : backend_(backend), enabled_(enabled && backend.HasStepMarkers()) {}
  MarkedStep(const MarkedStep&) = delete;
  MarkedStep& operator=(const MarkedStep&) = delete;
  ~MarkedStep() {
    if (open_) (void)backend_.StepEnd();
  }
  absl::Status Begin() {
    if (!enabled_) return absl::OkStatus();
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
  const bool enabled_;
  bool open_ = false;
};

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
  loss_scaling_active_ =
      LossScalingActive(config_.loss_scale(), plugins_->policy.loss_scaling);

  const GradientSync::Setup sync{&config_, ranks_, &client, plugins_->device_name};
  auto params = ParameterStore::Create(plugins_->model, client, plugins_->policy,
                                       state_slots, config_.seed(), GradientSync::ShardOf(sync));
  if (!params.ok()) return params.status();
  params_ = std::move(*params);
  auto synced = GradientSync::Create(sync, params_.get(), &plugins_->model);
  if (!synced.ok()) return synced.status();
  sync_ = std::move(*synced);
  sync_->set_before_exchange([this] { return observers_.BeforeExchange(context_); });
  if (plugins_->scaling_recipe.recipe != MNT_SCALING_RECIPE_NONE) {
    std::vector<Fp8Scaling::ParamShape> shapes;
    for (const Param& p : params_->params()) shapes.push_back({p.name, p.dims});
    auto fp8 = Fp8Scaling::Create(client, plugins_->scaling_recipe, shapes);
    if (!fp8.ok()) return fp8.status();
    fp8_ = std::move(*fp8);
    plugins_->model.UseFp8Tensors(fp8_->tensors());
  }
  // ZeRO-1: the other shares start from their ranks' rounding.
  if (auto s = sync_->AfterOptimizer(); !s.ok()) return s;
  AddObservers();
  auto batch = DeviceBatch::Create(client, *train_data_, config_.batch_size());
  if (!batch.ok()) return batch.status();
  batch_ = std::move(*batch);
  scalars_ = std::make_unique<StepScalars>();
  if (auto s = scalars_->Allocate(client); !s.ok()) return s;
  sampler_ = std::make_unique<BatchSampler>(train_data_->size(), config_.seed());
  return InitStep();
}

void Trainer::AddObservers() {
  if (fp8_ != nullptr) {
    observers_.Add(std::make_unique<Fp8Observer>(
        fp8_.get(), &plugins_->model, config_.log_every(), config_.steps(),
        [this](const MNT_Tensor& t) { return sync_->MaxOverRanks(t); }));
  }
  if (OpTracer* tracer = plugins_->tracer.get()) {
    for (const Param& p : params_->params()) {
      tracer->Name(p.weights.data(), p.weights.size(), p.name);
      tracer->Name(p.grads.data(), p.grads.size(), "grad of " + p.name);
      tracer->Name(p.master.data(), p.master.size(), "master of " + p.name);
      tracer->Name(p.master_grads.data(), p.master_grads.size(), "grad of " + p.name);
    }
    observers_.Add(std::make_unique<TracerObserver>(tracer));
  }
  if (FaultObserver::Requested()) {
    observers_.Add(std::make_unique<FaultObserver>(&plugins_->backend->client(), params_.get(),
                                                   ranks_ != nullptr ? ranks_->rank() : 0));
  }
  // Data parallel: no markers. A collective is no Backend_Run op, so a
  // backend that defers a marked step's ops would issue it out of order.
  // --debug_overflow: none either (every op is read back as it runs).
  step_markers_ = ranks_ == nullptr && plugins_->tracer == nullptr;
}

absl::Status Trainer::InitStep() {
  const sdk::BackendClient& client = plugins_->backend->client();
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
  context.max_over_ranks = sync_->found_inf_reduction();
  context.sum_over_ranks = sync_->norm_reduction();
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
    parts.gather_working_weights = [this] { return sync_->AfterOptimizer(); };
    parts.all_gather = sync_->all_gather();
  }
  checkpoint_ = std::make_unique<TrainingCheckpoint>(parts);
  return absl::OkStatus();
}

absl::Status Trainer::TrainStep(bool report, StepMetrics* metrics) {
  StepContext& c = context_;
  c = StepContext{};
  c.step = step_ + 1;
  c.micro_batches = MicroBatches(config_);
  // The scheduled lr goes to the device before the step's first op (one
  // host -> device copy), so the step's ops are the same every step.
  metrics->lr = LearningRateAt(config_, step_);
  if (auto s = optimizer_->SetLearningRate(metrics->lr); !s.ok()) return s;
  auto multiplier =
      StepLossMultiplier(*scaling_, device_loss_multiplier_, report, c.micro_batches);
  if (!multiplier.ok()) return multiplier.status();
  metrics->loss_scale = multiplier->scale;
  c.loss_multiplier = multiplier->value;
  c.device_loss_multiplier = multiplier->device.has_value() ? &*multiplier->device : nullptr;
  const std::vector<MNT_Tensor> weights = params_->WeightTensors();
  const std::vector<MNT_Tensor> grads = params_->GradTensors();
  c.weights = &weights;
  c.grads = &grads;
  c.inputs = batch_->Inputs(train_data_->spec(), config_.batch_size());
  c.targets = batch_->Targets(train_data_->spec(), config_.batch_size());
  if (auto s = observers_.OnStepBegin(c); !s.ok()) return s;
  // The step's work between the backend's step markers, so a backend may
  // capture it and replay it (CUDA graphs): the first batch is uploaded
  // before the step begins. Later micro-batches upload inside it, and reads
  // (the host loss-scaling path's loss and found_inf) happen inside it: the
  // backend then runs that step as issued, with the same results.
  MarkedStep marked(plugins_->backend->client(), step_markers_);
  const auto draw = [this](int64_t n) { return sampler_->NextBatch(n); };
  double loss_sum = 0;
  for (c.micro = 0; c.micro < c.micro_batches; ++c.micro) {
    if (auto s = Timed(&phases_, "data", [&] {
          return batch_->Upload(*train_data_, sync_->LocalBatch(draw, config_.batch_size()));
        });
        !s.ok())
      return s;
    c.loss_out = scaling_->LossOutput(c.micro);
    if (auto s = observers_.OnMicroBatchBegin(c); !s.ok()) return s;
    if (c.micro == 0) {
      if (auto s = marked.Begin(); !s.ok()) return s;
    }
    auto loss = Forward();
    if (!loss.ok()) return loss.status();
    loss_sum += *loss;
    if (auto s = Backward(); !s.ok()) return s;
  }
  metrics->loss = loss_sum / static_cast<double>(c.micro_batches);
  // The global batch's gradient on every rank (ZeRO-1: of its share): from
  // here on every rank unscales, finds inf/NaN, clips, skips and steps on
  // the same bits.
  if (auto s = Timed(&phases_, ranks_ != nullptr ? "gradient exchange" : nullptr,
                     [&] { return sync_->FinishExchange(); });
      !s.ok())
    return s;
  Stopwatch phase;
  auto gate = scaling_->UnscaleUpdateAndClip(
      metrics->loss_scale, {params_->UnscaledGradTensors(), params_->NormGradTensors()},
      metrics);
  if (!gate.ok()) return gate.status();
  if (gate->run_optimizer) {
    if (auto s = optimizer_->Step(metrics->lr, gate->found_inf, gate->multiplier, c.step);
        !s.ok())
      return s;
    if (auto s = Timed(&phases_, params_->sharded() ? "weight gather" : nullptr,
                       [&] { return sync_->AfterOptimizer(); });
        !s.ok())
      return s;
  }
  bool replayed = false;
  if (auto s = marked.End(&replayed); !s.ok()) return s;
  replayed_steps_ += replayed ? 1 : 0;
  phases_.Add("optimizer", phase.Seconds());
  ++step_;
  return absl::OkStatus();
}

absl::StatusOr<double> Trainer::Forward() {
  const StepContext& c = context_;
  Stopwatch phase;
  if (auto s = observers_.BeforePass(c, Pass::kForward); !s.ok()) return s;
  if (auto s = sdk::ToAbsl(plugins_->model.Forward(*c.weights, c.inputs, c.targets,
                                                    /*training=*/true, c.loss_out));
      !s.ok())
    return Prefixed(s, "model forward: ");
  if (auto s = observers_.AfterPass(c, Pass::kForward); !s.ok()) return s;
  if (auto s = sync_->AverageLoss(c.loss_out); !s.ok()) return s;
  auto loss = scaling_->MicroBatchLoss(c.micro);
  phases_.Add("forward", phase.Seconds());
  return loss;
}

absl::Status Trainer::Backward() {
  const StepContext& c = context_;
  Stopwatch phase;
  // fp32 grads accumulate in place; 16-bit grads are per micro-batch and
  // summed into the fp32 master gradients (by the synchronisation, which
  // under data parallelism also exchanges them as backward finishes them).
  const bool accumulate = !params_->mixed() && c.micro > 0;
  if (auto s = observers_.BeforePass(c, Pass::kBackward); !s.ok()) return s;
  sync_->BeforeBackward(c.micro, c.micro_batches);
  if (auto s = sdk::ToAbsl(plugins_->model.Backward(*c.weights, *c.grads, c.loss_multiplier,
                                                     c.device_loss_multiplier, accumulate));
      !s.ok())
    return Prefixed(s, "model backward: ");
  if (auto s = observers_.AfterPass(c, Pass::kBackward); !s.ok()) return s;
  if (auto s = sync_->AfterBackward(c.micro); !s.ok()) return s;
  if (auto s = observers_.OnMicroBatchEnd(c); !s.ok()) return s;
  phases_.Add("backward", phase.Seconds());
  return absl::OkStatus();
}

std::string Trainer::debug_overflow_report() const {
  const OpTracer* tracer = plugins_ != nullptr ? plugins_->tracer.get() : nullptr;
  return tracer != nullptr && tracer->tripped() ? tracer->Report() : "";
}

std::string Trainer::data_parallel_description() const { return sync_->Description(); }
double Trainer::collective_seconds() const { return sync_->Stats().collective_seconds; }
int64_t Trainer::collective_calls() const { return sync_->Stats().collective_calls; }

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
  if (sink != nullptr && !announced_) {
    announced_ = true;
    for (const std::string& line : observers_.Announcements()) sink->OnMessage(line);
  }
  const sdk::BackendClient& client = plugins_->backend->client();
  while (step_ < last_step && !eval_policy_->stop()) {
    StepMetrics m;
    const int64_t reads_before = client.device_to_host_copies();
    const bool will_report = sink != nullptr && sink->NeedsStepMetrics(step_ + 1, total);
    if (auto s = TrainStep(will_report, &m); !s.ok()) return AtStep(s, step_ + 1);
    if (auto s = ReportStep(sink, total, reads_before, &guard, &meter, &m); !s.ok())
      return AtStep(s, step_);
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
      auto agreed = sync_->AgreeStopSignal(stop_check_ != nullptr ? stop_check_() : 0);
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

absl::Status Trainer::ReportStep(MetricsSink* sink, int64_t total, int64_t reads_before,
                                 SkipGuard* guard, ThroughputMeter* meter, StepMetrics* m) {
  const sdk::BackendClient& client = plugins_->backend->client();
  m->step = step_;
  m->total_steps = total;
  meter->OnStep(m);
  const bool wanted = sink != nullptr && sink->NeedsStepMetrics(step_, total);
  auto report = scaling_->CompleteStepMetrics(wanted, m);
  if (!report.ok()) return report.status();
  if (!wanted) unreported_step_reads_ += client.device_to_host_copies() - reads_before;
  // Where the overflow is, on skipped steps a sink reports (under ZeRO-1
  // every rank takes part when rank 0 asks).
  auto name_overflow = sync_->RanksAgreeToAsk(*report && m->skipped && sink != nullptr);
  if (!name_overflow.ok()) return name_overflow.status();
  if (*name_overflow) {
    auto names = NonFiniteGradientParams(client, *params_, *scalars_, *sync_);
    if (!names.ok()) return names.status();
    m->nonfinite_params = std::move(*names);
    if (!m->nonfinite_params.empty()) sink->OnMessage(SkippedStepLine(step_, m->nonfinite_params));
  }
  if (!*report || sink == nullptr) return absl::OkStatus();
  if (auto s = observers_.OnStepReported(context_, m); !s.ok()) return s;
  sink->OnStep(*m);
  if (!loss_scaling_active_) return absl::OkStatus();
  // fp16 that skips step after step learns nothing: say so now.
  auto warning = guard->Observe(*m);
  if (!warning.ok()) return warning.status();
  if (!warning->empty()) sink->OnMessage(*warning);
  return absl::OkStatus();
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
    if (auto s = sync_->CheckRanksHoldOneState(StateFingerprint(*ckpt), step_); !s.ok())
      return s;
  }
  if (!sync_->writes()) {
    last_checkpoint_step_ = step_;
    return absl::OkStatus();
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
    const SyncStats sync = sync_->Stats();
    r.ranks = sync.ranks;
    r.collective_seconds = sync.collective_seconds;
    r.collective_calls = sync.collective_calls;
    r.buckets_exchanged = sync.buckets_exchanged;
    r.buckets_in_backward = sync.buckets_in_backward;
    r.buckets_started = sync.buckets_started;
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
