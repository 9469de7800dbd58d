#include "trainer/core/trainer.h"

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "trainer/checkpoint/checkpoint_history.h"
#include "trainer/checkpoint/run_config_file.h"
#include "trainer/core/lr_schedule.h"
#include "trainer/core/marked_step.h"
#include "trainer/core/memory_report.h"
#include "trainer/core/out_of_memory_advice.h"
#include "trainer/core/overflow_names.h"
#include "trainer/core/skip_guard.h"
#include "trainer/core/static_scale_search.h"
#include "trainer/core/throughput.h"
#include "trainer/debug/op_tracer.h"

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


// `body` timed into phase `name` of `phases` (nullptr: not timed).
template <typename Body>
absl::Status Timed(PhaseTimes* phases, const char* name, Body body) {
  Stopwatch clock;
  absl::Status s = body();
  if (name != nullptr) phases->Add(name, clock.Seconds());
  return s;
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
  t->targets_per_example_ = train_data->spec().targets_per_example;
  absl::Status s = AssembleRun(t->config_, registry, t->ranks_, std::move(train_data),
                               std::move(eval_data), &t->p_);
  if (!s.ok()) return WithMemoryAdvice(s, t->config_, t->p_.train_data.get(), t->p_.plugins.get());
  // Fault injection's inf gradient goes in before the step's first exchange.
  Trainer* trainer = t.get();
  t->p_.sync->set_before_exchange(
      [trainer] { return trainer->p_.observers.BeforeExchange(trainer->context_); });
  return t;
}

Trainer::~Trainer() = default;

absl::Status Trainer::TrainStep(bool report, StepMetrics* metrics) {
  if (auto s = BeginStep(report, metrics); !s.ok()) return s;
  // The step's work between the backend's step markers, so a backend may
  // capture it and replay it (CUDA graphs): the first batch is uploaded
  // before the step begins. Later micro-batches upload inside it, and reads
  // (the host loss-scaling path's loss and found_inf) happen inside it: the
  // backend then runs that step as issued, with the same results.
  MarkedStep marked(p_.plugins->backend->client(), p_.step_markers);
  double loss_sum = 0;
  for (context_.micro = 0; context_.micro < context_.micro_batches; ++context_.micro) {
    if (auto s = LoadMicroBatch(); !s.ok()) return s;
    if (context_.micro == 0) {
      if (auto s = marked.Begin(); !s.ok()) return s;
    }
    auto loss = Forward();
    if (!loss.ok()) return loss.status();
    loss_sum += *loss;
    if (auto s = Backward(); !s.ok()) return s;
  }
  metrics->loss = loss_sum / static_cast<double>(context_.micro_batches);
  // The global batch's gradient on every rank (ZeRO-1: of its share): from
  // here on every rank unscales, finds inf/NaN, clips, skips and steps on
  // the same bits.
  if (auto s = Timed(&phases_, ranks_ != nullptr ? "gradient exchange" : nullptr,
                     [&] { return p_.sync->FinishExchange(); });
      !s.ok())
    return s;
  Stopwatch phase;
  if (auto s = OptimizerStep(metrics); !s.ok()) return s;
  bool replayed = false;
  if (auto s = marked.End(&replayed); !s.ok()) return s;
  replayed_steps_ += replayed ? 1 : 0;
  phases_.Add("optimizer", phase.Seconds());
  ++step_;
  return absl::OkStatus();
}

absl::Status Trainer::BeginStep(bool report, StepMetrics* metrics) {
  StepContext& c = context_;
  c = StepContext{};
  c.step = step_ + 1;
  c.micro_batches = MicroBatches(config_);
  // The scheduled lr goes to the device before the step's first op (one
  // host -> device copy), so the step's ops are the same every step.
  metrics->lr = LearningRateAt(config_, step_);
  if (auto s = p_.optimizer->SetLearningRate(metrics->lr); !s.ok()) return s;
  auto multiplier =
      StepLossMultiplier(*p_.scaling, p_.device_loss_multiplier, report, c.micro_batches);
  if (!multiplier.ok()) return multiplier.status();
  metrics->loss_scale = multiplier->scale;
  c.loss_multiplier = multiplier->value;
  c.device_loss_multiplier = multiplier->device;
  c.weights = p_.params->WeightTensors();
  c.grads = p_.params->GradTensors();
  c.inputs = p_.batch->Inputs(p_.train_data->spec(), config_.batch_size());
  c.targets = p_.batch->Targets(p_.train_data->spec(), config_.batch_size());
  return p_.observers.OnStepBegin(c);
}

absl::Status Trainer::LoadMicroBatch() {
  const auto draw = [this](int64_t n) { return p_.sampler->NextBatch(n); };
  if (auto s = Timed(&phases_, "data", [&] {
        return p_.batch->Upload(*p_.train_data,
                                p_.sync->LocalBatch(draw, config_.batch_size()));
      });
      !s.ok())
    return s;
  context_.loss_out = p_.scaling->LossOutput(context_.micro);
  return p_.observers.OnMicroBatchBegin(context_);
}

absl::Status Trainer::OptimizerStep(StepMetrics* metrics) {
  auto gate = p_.scaling->UnscaleUpdateAndClip(
      metrics->loss_scale, {p_.params->UnscaledGradTensors(), p_.params->NormGradTensors()},
      metrics);
  if (!gate.ok()) return gate.status();
  if (!gate->run_optimizer) return absl::OkStatus();
  if (auto s = p_.optimizer->Step(metrics->lr, gate->found_inf, gate->multiplier, context_.step);
      !s.ok())
    return s;
  return Timed(&phases_, p_.params->sharded() ? "weight gather" : nullptr,
               [&] { return p_.sync->AfterOptimizer(); });
}

absl::StatusOr<double> Trainer::Forward() {
  const StepContext& c = context_;
  Stopwatch phase;
  if (auto s = p_.observers.BeforePass(c, Pass::kForward); !s.ok()) return s;
  if (auto s = sdk::ToAbsl(p_.plugins->model.Forward(c.weights, c.inputs, c.targets,
                                                    /*training=*/true, c.loss_out));
      !s.ok())
    return Prefixed(s, "model forward: ");
  if (auto s = p_.observers.AfterPass(c, Pass::kForward); !s.ok()) return s;
  if (auto s = p_.sync->AverageLoss(c.loss_out); !s.ok()) return s;
  auto loss = p_.scaling->MicroBatchLoss(c.micro);
  phases_.Add("forward", phase.Seconds());
  return loss;
}

absl::Status Trainer::Backward() {
  const StepContext& c = context_;
  Stopwatch phase;
  // fp32 grads accumulate in place; 16-bit grads are per micro-batch and
  // summed into the fp32 master gradients (by the synchronisation, which
  // under data parallelism also exchanges them as backward finishes them).
  const bool accumulate = !p_.params->mixed() && c.micro > 0;
  if (auto s = p_.observers.BeforePass(c, Pass::kBackward); !s.ok()) return s;
  p_.sync->BeforeBackward(c.micro, c.micro_batches);
  if (auto s = sdk::ToAbsl(p_.plugins->model.Backward(c.weights, c.grads, c.loss_multiplier,
                                                      c.DeviceLossMultiplier(), accumulate));
      !s.ok())
    return Prefixed(s, "model backward: ");
  if (auto s = p_.observers.AfterPass(c, Pass::kBackward); !s.ok()) return s;
  if (auto s = p_.sync->AfterBackward(c.micro); !s.ok()) return s;
  if (auto s = p_.observers.OnMicroBatchEnd(c); !s.ok()) return s;
  phases_.Add("backward", phase.Seconds());
  return absl::OkStatus();
}

std::string Trainer::debug_overflow_report() const {
  const OpTracer* tracer = p_.plugins != nullptr ? p_.plugins->tracer.get() : nullptr;
  return tracer != nullptr && tracer->tripped() ? tracer->Report() : "";
}

std::string Trainer::data_parallel_description() const { return p_.sync->Description(); }
double Trainer::collective_seconds() const { return p_.sync->Stats().collective_seconds; }
int64_t Trainer::collective_calls() const { return p_.sync->Stats().collective_calls; }

absl::Status Trainer::Train(MetricsSink* sink) {
  return WithMemoryAdvice(TrainUntil(config_.steps(), sink), config_, p_.train_data.get(),
                          p_.plugins.get());
}

absl::Status Trainer::TrainUntil(int64_t last_step, MetricsSink* sink) {
  const int64_t total = config_.steps();
  last_step = std::min(last_step, total);
  // Samples per step of the whole job: every rank's part of the global batch.
  const int64_t world = ranks_ != nullptr ? ranks_->world_size() : 1;
  ThroughputMeter meter(world * config_.batch_size() * MicroBatches(config_),
                        targets_per_example_);
  MNT_LossScalerState start{};
  if (auto s = sdk::ToAbsl(p_.plugins->scaler.GetState(&start)); !s.ok())
    return AtStep(s, step_ + 1);
  SkipGuard guard(step_, start.skipped_steps,
                  p_.loss_scaling_active && config_.loss_scale().mode() == "static",
                  p_.loss_scale_floor);
  // A static scale that overflows every step stops the run, with a scale
  // measured on the stopped step's batch as its advice.
  guard.set_scale_finder([this](double failing) {
    const MNT_DataSpec spec = p_.train_data->spec();
    return StaticScaleSearch({&p_.plugins->backend->client(), &p_.plugins->model, p_.params.get(),
                              p_.scalars.get(), p_.batch->Inputs(spec, config_.batch_size()),
                              p_.batch->Targets(spec, config_.batch_size()), MicroBatches(config_)})
        .Advise(failing);
  });
  if (sink != nullptr && !announced_) {
    announced_ = true;
    for (const std::string& line : p_.observers.Announcements()) sink->OnMessage(line);
  }
  const sdk::BackendClient& client = p_.plugins->backend->client();
  while (step_ < last_step && !p_.eval_policy->stop()) {
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
      auto agreed = p_.sync->AgreeStopSignal(stop_check_ != nullptr ? stop_check_() : 0);
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
  return AtStep(p_.scaling->SyncToPlugin(step_), step_);
}

absl::Status Trainer::ReportStep(MetricsSink* sink, int64_t total, int64_t reads_before,
                                 SkipGuard* guard, ThroughputMeter* meter, StepMetrics* m) {
  const sdk::BackendClient& client = p_.plugins->backend->client();
  m->step = step_;
  m->total_steps = total;
  meter->OnStep(m);
  const bool wanted = sink != nullptr && sink->NeedsStepMetrics(step_, total);
  auto report = p_.scaling->CompleteStepMetrics(wanted, m);
  if (!report.ok()) return report.status();
  if (!wanted) unreported_step_reads_ += client.device_to_host_copies() - reads_before;
  // Where the overflow is, on skipped steps a sink reports (under ZeRO-1
  // every rank takes part when rank 0 asks).
  auto name_overflow = p_.sync->RanksAgreeToAsk(*report && m->skipped && sink != nullptr);
  if (!name_overflow.ok()) return name_overflow.status();
  if (*name_overflow) {
    auto names = NonFiniteGradientParams(client, *p_.params, *p_.scalars, *p_.sync);
    if (!names.ok()) return names.status();
    m->nonfinite_params = std::move(*names);
    if (!m->nonfinite_params.empty()) sink->OnMessage(SkippedStepLine(step_, m->nonfinite_params));
  }
  if (!*report || sink == nullptr) return absl::OkStatus();
  if (auto s = p_.observers.OnStepReported(context_, m); !s.ok()) return s;
  sink->OnStep(*m);
  if (!p_.loss_scaling_active) return absl::OkStatus();
  // fp16 that skips step after step learns nothing: say so now.
  auto warning = guard->Observe(*m);
  if (!warning.ok()) return warning.status();
  if (!warning->empty()) sink->OnMessage(*warning);
  return absl::OkStatus();
}

absl::Status Trainer::EvaluateAndCheckpointIfDue(bool last, MetricsSink* sink,
                                                 double* seconds) {
  EvalPolicy::Verdict verdict;
  if (p_.eval_policy->EvalDue(step_, last)) {
    Stopwatch phase;
    auto eval = Evaluate();
    if (!eval.ok()) return eval.status();
    phases_.Add("eval", phase.Seconds());
    *seconds += phase.Seconds();
    if (sink) sink->OnEval(*eval);
    verdict = p_.eval_policy->OnEval(*eval);
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
  auto ckpt = p_.checkpoint->Capture(step_);
  if (!ckpt.ok()) return ckpt.status();
  // Every rank holds the same whole state (it checks so here: a rank whose
  // state drifted would otherwise go unnoticed); rank 0 writes it.
  if (ranks_ != nullptr) {
    if (auto s = p_.sync->CheckRanksHoldOneState(TrainingCheckpoint::Fingerprint(*ckpt), step_); !s.ok())
      return s;
  }
  if (!p_.sync->writes()) {
    last_checkpoint_step_ = step_;
    return absl::OkStatus();
  }
  const std::string& dir = config_.checkpoint_dir();
  const std::string path = StepCheckpointPath(dir, step_);
  if (auto s = TrainingCheckpoint::Write(path, *ckpt); !s.ok()) return s;
  last_checkpoint_step_ = step_;
  auto best_note = p_.eval_policy->PublishBest(dir, path, step_);
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
  const BatchSource& source = p_.eval_data ? *p_.eval_data : *p_.train_data;
  auto m = p_.evaluator->Run(source, step_);
  if (!m.ok()) return m.status();
  last_eval_ = *m;
  has_eval_ = true;
  return m;
}

absl::Status Trainer::SaveCheckpoint(const std::string& path) {
  return p_.checkpoint->Save(path, step_);
}

absl::Status Trainer::RestoreCheckpoint(const std::string& path) {
  return p_.checkpoint->Restore(path, &step_);
}

const std::string& Trainer::restore_note() const { return p_.checkpoint->restore_note(); }

FinalReport Trainer::Report() const {
  FinalReport r;
  r.backend = p_.plugins->backend_description;
  r.precision = p_.plugins->precision_name;
  r.model = config_.model();
  r.num_parameters = p_.params->num_parameters();
  const MNT_Precision_GetMemoryPlan_Args& plan = p_.plugins->plan;
  r.bytes_weights = plan.bytes_weights;
  r.bytes_master_weights = plan.bytes_master_weights;
  r.bytes_gradients = plan.bytes_gradients;
  r.bytes_master_gradients = plan.bytes_master_gradients;
  r.optimizer = config_.optimizer().name();
  r.bytes_optimizer_state = p_.optimizer->StateBytesPerParameter();
  r.memory = MemoryReport(p_.plugins->backend->client());
  r.phases = phases_.phases();
  r.steps = step_;
  r.replayed_steps = replayed_steps_;
  if (ranks_ != nullptr) {
    const SyncStats sync = p_.sync->Stats();
    r.ranks = sync.ranks;
    r.collective_seconds = sync.collective_seconds;
    r.collective_calls = sync.collective_calls;
    r.buckets_exchanged = sync.buckets_exchanged;
    r.buckets_in_backward = sync.buckets_in_backward;
    r.buckets_started = sync.buckets_started;
  }
  r.stopped_by_signal = stopped_by_signal_;
  r.stopped_early = p_.eval_policy->stop();
  MNT_Backend_GetInfo_Args info;
  if (p_.plugins->backend->GetInfo(&info).ok() &&
      MNT_HAS_FIELD(&info, MNT_Backend_GetInfo_Args, slow_paths) && info.slow_paths != nullptr) {
    r.slow_paths = absl::StrSplit(info.slow_paths, '\n', absl::SkipEmpty());
  }
  MNT_LossScalerState st{};
  if (p_.plugins->scaler.GetState(&st).ok()) {
    r.skipped_steps = st.skipped_steps;
    r.final_loss_scale = p_.loss_scaling_active ? st.scale : 1.0;
  }
  r.samples_per_second = samples_per_second_;
  r.train_seconds = train_seconds_;
  r.tokens_per_second = TokensPerSecond(samples_per_second_, targets_per_example_);
  r.last_eval = last_eval_;
  r.has_eval = has_eval_;
  return r;
}

int64_t Trainer::num_parameters() const { return p_.params->num_parameters(); }
const std::string& Trainer::precision() const { return p_.plugins->precision_name; }
const std::string& Trainer::device() const { return p_.plugins->device_name; }
bool Trainer::device_loss_scaling() const {
  return p_.loss_scaling_active && p_.scaling->on_device();
}
bool Trainer::device_step_scalars() const { return p_.scaling->on_device(); }

const std::string& Trainer::loss_scaling_description() const {
  return p_.loss_scaling_description;
}

}  // namespace mnt::trainer
