#include "trainer/core/run_parts.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plugins/sdk/absl/status.h"
#include "plugins/sdk/tensor.h"
#include "trainer/core/fault_observer.h"
#include "trainer/core/fp8_observer.h"
#include "trainer/core/freeze_patterns.h"
#include "trainer/core/loss_scale_config.h"
#include "trainer/core/loss_scaling_choice.h"
#include "trainer/core/tracer_observer.h"
#include "trainer/debug/op_tracer.h"

namespace mnt::trainer {
namespace {

// --freeze: which of the model's parameters are frozen, for a model that
// takes a frozen parameter's missing gradient (ABI 1.13).
absl::StatusOr<std::vector<bool>> FrozenParams(const sdk::ModelClient& model,
                                               const mantissa::TrainConfig& config) {
  if (config.freeze().empty()) return std::vector<bool>{};
  if (!model.TakesFrozenParams()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--freeze: model '", config.model(), "' does not take frozen parameters (ABI 1.13's "
        "MODEL_FROZEN_PARAMS; a model on the SDK's model layer gets it by rebuilding)"));
  }
  int64_t count = 0;
  if (auto s = sdk::ToAbsl(model.ParamCount(&count)); !s.ok()) return s;
  std::vector<std::string> names;
  for (int64_t i = 0; i < count; ++i) {
    sdk::ParamSpec spec;
    if (auto s = sdk::ToAbsl(model.GetParamSpec(i, &spec)); !s.ok()) return s;
    names.push_back(spec.name != nullptr ? spec.name : absl::StrCat("param", i));
  }
  return MatchFrozen(names, config.freeze());
}

// A line said once before the first step, and nothing else.
class Note : public StepObserver {
 public:
  explicit Note(std::string line) : line_(std::move(line)) {}
  std::string Announcement() const override { return line_; }

 private:
  std::string line_;
};

// With --lora or --freeze: how many parameters train (PEFT's
// print_trainable_parameters).
std::string TrainableNote(const mantissa::TrainConfig& config, const ParameterStore& params) {
  int64_t total = 0, trainable = 0;
  for (const Param& p : params.params()) {
    total += p.numel;
    if (!p.frozen) trainable += p.numel;
  }
  return absl::StrCat(
      config.lora().empty() ? "" : absl::StrCat("LoRA ", config.lora(), ": "),
      "trainable parameters ", trainable, " of ", total, " (",
      absl::StrFormat("%.2f", total > 0 ? 100.0 * trainable / total : 0.0), "%); the other ",
      total - trainable, " are frozen (--freeze=", config.freeze(), ")");
}

// The per-step features the run asks for (step_observer.h).
void AddObservers(const mantissa::TrainConfig& config, HostComm* ranks, RunParts* out) {
  RunParts& p = *out;
  if (!p.plugins->fp8_note.empty()) p.observers.Add(std::make_unique<Note>(p.plugins->fp8_note));
  if (!config.lora().empty() || !config.freeze().empty()) {
    p.observers.Add(std::make_unique<Note>(TrainableNote(config, *p.params)));
  }
  if (p.fp8 != nullptr) {
    p.observers.Add(std::make_unique<Fp8Observer>(
        p.fp8.get(), &p.plugins->model, config.log_every(), config.steps(),
        [out](const MNT_Tensor& t) { return out->sync->MaxOverRanks(t); }));
  }
  if (OpTracer* tracer = p.plugins->tracer.get()) {
    for (const Param& p : p.params->params()) {
      tracer->Name(p.weights.data(), p.weights.size(), p.name);
      tracer->Name(p.grads.data(), p.grads.size(), "grad of " + p.name);
      tracer->Name(p.master.data(), p.master.size(), "master of " + p.name);
      tracer->Name(p.master_grads.data(), p.master_grads.size(), "grad of " + p.name);
    }
    p.observers.Add(std::make_unique<TracerObserver>(tracer));
  }
  if (FaultObserver::Requested()) {
    p.observers.Add(std::make_unique<FaultObserver>(&p.plugins->backend->client(), p.params.get(),
                                                   ranks != nullptr ? ranks->rank() : 0));
  }
  // Every step is marked, whatever else the run does: a backend issues the
  // ops a marked step deferred before anything that observes them (a read
  // to the host, as --debug_overflow makes after every op, or a collective
  // of its extension, as data parallelism issues), and runs the rest of
  // that step as issued, saying so once (common/step_session.h). Such steps
  // are not captured for replay (CUDA graphs): a capture would have to
  // stop at each collective and resume after it, and the ranks' exchanges
  // would then sit between captured segments the backend cannot replay on
  // its own.
  p.step_markers = true;
}

// Loss scaling, the optimizer, evaluation and checkpoints, once the
// parameters and the synchronisation exist.
absl::Status WireStep(const mantissa::TrainConfig& config, HostComm* ranks, RunParts* out) {
  RunParts& p = *out;
  const sdk::BackendClient& client = p.plugins->backend->client();
  // Where loss scaling runs is decided here, once.
  auto plan = PlanLossScaling(config, *p.plugins->backend, p.plugins->device_name,
                              p.plugins->scaler, p.plugins->precision_name,
                              p.loss_scaling_active);
  if (!plan.ok()) return plan.status();
  p.loss_scaling_description = plan->description;
  p.loss_scale_floor = plan->min_scale;
  // ABI 1.6: the device scale goes to the model as a tensor (no per-step read).
  p.device_loss_multiplier = plan->on_device && p.loss_scaling_active &&
                            p.plugins->model.TakesDeviceLossMultiplier();
  if (auto s = Optimizer::CheckStochasticRounding(config.optimizer(), *p.plugins->backend,
                                                  p.params->mixed(), p.params->weight_dtype(),
                                                  p.plugins->precision_name,
                                                  p.params->splits_parameters());
      !s.ok())
    return s;
  if (auto s = Optimizer::CheckBackend(config.optimizer(), *p.plugins->backend); !s.ok()) return s;
  // ABI 1.7: on the device path the lr is a device scalar too.
  auto optimizer = Optimizer::Create(
      config.optimizer(), p.params.get(), client, /*skips_on_device=*/plan->on_device,
      Optimizer::UsesMultiTensor(config.optimizer(), *p.plugins->backend),
      /*device_lr=*/plan->on_device && Optimizer::TakesDeviceLr(*p.plugins->backend));
  if (!optimizer.ok()) return optimizer.status();
  p.optimizer = std::move(*optimizer);
  // A checkpoint restores the seed it was saved with.
  p.optimizer->set_rounding_seed(Optimizer::RoundingSeedFor(config.seed()));
  LossScalingContext context;
  context.client = &client;
  context.scaler = &p.plugins->scaler;
  context.scalars = p.scalars.get();
  context.max_grad_norm = static_cast<float>(config.clip_grad_norm());
  context.micro_batches = MicroBatches(config);
  context.precision_name = p.plugins->precision_name;
  context.max_over_ranks = p.sync->found_inf_reduction();
  context.sum_over_ranks = p.sync->norm_reduction();
  auto scaling = MakeLossScaling(*plan, context, p.loss_scaling_active,
                                 p.optimizer.get(), p.plugins->device_name);
  if (!scaling.ok()) return scaling.status();
  p.scaling = std::move(*scaling);

  p.evaluator = std::make_unique<Evaluator>(&p.plugins->model, &client, p.params.get(),
                                           p.batch.get(), p.scalars.get(),
                                           config.batch_size(), config.eval_batches());
  if (ranks != nullptr) p.evaluator->SplitAcrossRanks(ranks);
  // The sampler hands out every rank's part of every micro-batch.
  p.eval_policy = std::make_unique<EvalPolicy>(
      config, p.sampler.get(),
      MicroBatches(config) * config.batch_size() *
          (ranks != nullptr ? ranks->world_size() : 1));
  TrainingCheckpoint::Parts parts;
  parts.config = &config;
  parts.precision_name = p.plugins->precision_name;
  parts.client = &client;
  parts.params = p.params.get();
  parts.optimizer = p.optimizer.get();
  parts.sampler = p.sampler.get();
  parts.scaler = &p.plugins->scaler;
  parts.scaling = p.scaling.get();
  parts.fp8 = p.fp8.get();
  parts.eval_policy = p.eval_policy.get();
  if (p.params->sharded()) {
    parts.gather_working_weights = [out] { return out->sync->AfterOptimizer(); };
    parts.all_gather = p.sync->all_gather();
  }
  p.checkpoint = std::make_unique<TrainingCheckpoint>(parts);
  return absl::OkStatus();
}

}  // namespace

int64_t MicroBatches(const mantissa::TrainConfig& config) {
  return std::max<int64_t>(1, config.grad_accum_steps());
}

absl::Status AssembleRun(const mantissa::TrainConfig& config, PluginRegistry* registry,
                         HostComm* ranks, std::unique_ptr<BatchSource> train_data,
                         std::unique_ptr<BatchSource> eval_data, RunParts* out) {
  RunParts& p = *out;
  p.train_data = std::move(train_data);
  p.eval_data = std::move(eval_data);
  if (p.train_data->size() < 1) {
    return absl::InvalidArgumentError("training set is empty");
  }
  const int state_slots = Optimizer::StateSlots(config.optimizer());
  auto plugins = RunPlugins::Create(config, registry, p.train_data->spec(), state_slots,
                                    ranks != nullptr ? ranks->local_rank() : 0);
  if (!plugins.ok()) return plugins.status();
  p.plugins = std::move(*plugins);
  const sdk::BackendClient& client = p.plugins->backend->client();
  p.loss_scaling_active =
      LossScalingActive(config.loss_scale(), p.plugins->policy.loss_scaling);

  const GradientSync::Setup sync{&config, ranks, &client, p.plugins->device_name};
  auto frozen = FrozenParams(p.plugins->model, config);
  if (!frozen.ok()) return frozen.status();
  auto params = ParameterStore::Create(p.plugins->model, client, p.plugins->policy,
                                       state_slots, config.seed(), GradientSync::ShardOf(sync),
                                       *frozen);
  if (!params.ok()) return params.status();
  p.params = std::move(*params);
  auto synced = GradientSync::Create(sync, p.params.get(), &p.plugins->model);
  if (!synced.ok()) return synced.status();
  p.sync = std::move(*synced);
  if (p.plugins->scaling_recipe.recipe != MNT_SCALING_RECIPE_NONE) {
    std::vector<Fp8Scaling::ParamShape> shapes;
    for (const Param& p : p.params->params()) shapes.push_back({p.name, p.dims});
    auto fp8 = Fp8Scaling::Create(client, p.plugins->scaling_recipe, shapes);
    if (!fp8.ok()) return fp8.status();
    p.fp8 = std::move(*fp8);
    p.plugins->model.UseFp8Tensors(p.fp8->tensors());
  }
  // ZeRO-1: the other shares start from their ranks' rounding.
  if (auto s = p.sync->AfterOptimizer(); !s.ok()) return s;
  AddObservers(config, ranks, &p);
  auto batch = DeviceBatch::Create(client, *p.train_data, config.batch_size());
  if (!batch.ok()) return batch.status();
  p.batch = std::move(*batch);
  if (OpTracer* tracer = p.plugins->tracer.get()) {
    // --debug_overflow names the batch, not "activation" and "indices".
    const MNT_DataSpec spec = p.train_data->spec();
    const MNT_Tensor in = p.batch->Inputs(spec, config.batch_size());
    const MNT_Tensor targets = p.batch->Targets(spec, config.batch_size());
    tracer->NameData(in.data, sdk::SizeBytes(in), "inputs");
    tracer->NameData(targets.data, sdk::SizeBytes(targets), "targets");
  }
  p.scalars = std::make_unique<StepScalars>();
  if (auto s = p.scalars->Allocate(client); !s.ok()) return s;
  p.sampler = std::make_unique<BatchSampler>(p.train_data->size(), config.seed());
  return WireStep(config, ranks, &p);
}

}  // namespace mnt::trainer
