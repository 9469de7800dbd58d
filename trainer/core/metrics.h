// What the training loop reports, and the interface that receives it.
#ifndef MANTISSA_TRAINER_CORE_METRICS_H_
#define MANTISSA_TRAINER_CORE_METRICS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace mnt::trainer {

struct StepMetrics {
  int64_t step = 0;         // 1-based optimizer step just finished
  int64_t total_steps = 0;
  double loss = 0;          // mean training loss over the step's micro-batches
  double lr = 0;
  double loss_scale = 1;    // scale used for this step
  // The scale after this step's update (backoff or growth): the next step's,
  // what the final report gives if the run ends here. 0: not read.
  double next_loss_scale = 0;
  bool skipped = false;     // non-finite gradients: the step was not applied
  int64_t skipped_steps = 0;
  double grad_norm = 0;     // global norm after unscaling, before clipping
  double samples_per_second = 0;
  double tokens_per_second = 0;  // language models: targets per second
  double elapsed_seconds = 0;
  // A skipped step: the parameters whose gradients held inf/NaN, the one
  // backward reached first (the model's last) first.
  std::vector<std::string> nonfinite_params;
  // FP8 GEMMs (reported steps only): every scaled tensor a GEMM used, with
  // the scale the next step quantizes with and the amax of this step.
  struct Fp8Scale {
    std::string name;  // "<param>[.<layer>]/<input|weight|grad_output>"
    double scale = 0;
    double amax = 0;
  };
  std::vector<Fp8Scale> fp8_scales;
};

struct EvalMetrics {
  int64_t step = 0;
  double loss = 0;
  double accuracy = 0;      // fraction of targets predicted correctly
  int64_t examples = 0;
};

struct MemoryLine {
  std::string category;
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
};

struct PhaseTime {
  std::string phase;
  double seconds = 0;
};

// What a run is, told to every sink once before the first step.
struct PluginInfo {
  std::string kind;         // backend | precision | model
  std::string name;
  std::string abi_version;  // "major.minor" the plugin was built against
  std::string origin;       // the file it was loaded from
  std::string description;
};

struct RunHeader {
  double wall_time = 0;      // seconds since the Unix epoch
  std::string config_json;   // the full TrainConfig, every field, as JSON
  std::string config_text;   // the same as text format (--config reads it)
  std::string backend;       // plugin name and device, e.g. "cpu: x86-64 ..."
  std::string device;        // resolved: cpu | cuda | ...
  std::string precision;     // resolved: fp32 | tf32 | bf16 | fp16 | ...
  std::string model;
  int64_t num_parameters = 0;
  int64_t total_steps = 0;
  int64_t start_step = 0;    // > 0 when the run resumes a checkpoint
  std::string resumed_from;  // that checkpoint's path, else ""
  int64_t samples_per_step = 0;      // batch_size x grad_accum_steps x ranks
  int ranks = 1;                     // data parallel: the world size; else 1
  int64_t targets_per_example = 1;   // tokens per sequence for language models
  std::vector<PluginInfo> plugins;   // every plugin the run loaded
  // Where the loss is scaled: "device", "host" or "none" (the run does not
  // scale), and the trainer's one-line reason ("" for none).
  std::string loss_scaling;
  std::string loss_scaling_reason;
  // --precision=auto's probe: its table and verdict, as printed (empty when
  // the precision was given, or taken from the resumed checkpoint).
  std::vector<std::string> precision_probe;
  // Component -> version: mantissa's ABI, protobuf, absl, the compiler.
  std::vector<std::pair<std::string, std::string>> versions;
};

struct FinalReport {
  std::string backend;      // plugin name and device
  std::string precision;
  std::string model;
  int64_t num_parameters = 0;
  // Bytes per parameter from the precision plugin's memory plan; the
  // optimizer state's from the optimizer's own count (optimizer_state.h:
  // adamw8bit's is fractional).
  int32_t bytes_weights = 0, bytes_master_weights = 0, bytes_gradients = 0,
          bytes_master_gradients = 0;
  double bytes_optimizer_state = 0;
  std::string optimizer;  // --optimizer
  std::vector<MemoryLine> memory;  // by category, then "total"
  std::vector<PhaseTime> phases;
  int64_t steps = 0;
  int64_t skipped_steps = 0;
  // Steps the backend issued as a replay of a captured step (ABI 1.7 step
  // markers; CUDA graphs), out of `steps` taken by this process.
  int64_t replayed_steps = 0;
  // The signal (SIGINT, SIGTERM) that stopped the run at a step boundary
  // before its last step, else 0.
  int stopped_by_signal = 0;
  // Early stopping (--early_stopping_patience) ended the run.
  bool stopped_early = false;
  // The backend's slow paths (ABI 1.8 Backend_GetInfo slow_paths), one per
  // entry: "<calls> x <kind>: <shape>"; empty when none or not reported.
  std::vector<std::string> slow_paths;
  // Data parallel (ranks > 1): the seconds this rank (rank 0, the one that
  // reports) spent in collective calls, and how many it made.
  int ranks = 1;
  double collective_seconds = 0;
  int64_t collective_calls = 0;
  // Gradient buckets exchanged (last micro-batches, every step), how many
  // of them were issued during backward (--exchange_in_backward), and how
  // many were started (running while the trainer went on: the backend's
  // collectives extension version 2) rather than run at once.
  int64_t buckets_exchanged = 0;
  int64_t buckets_in_backward = 0;
  int64_t buckets_started = 0;
  double final_loss_scale = 1;
  double samples_per_second = 0;
  double tokens_per_second = 0;  // language models: targets per second
  // Seconds the throughput above is measured over: training steps only
  // (data, forward, backward, optimizer), not evaluation or checkpoints.
  double train_seconds = 0;
  EvalMetrics last_eval;
  bool has_eval = false;
};

class MetricsSink {
 public:
  virtual ~MetricsSink() = default;
  // Whether OnStep wants the metrics of optimizer step `step` (1-based).
  // With device-side loss scaling the loss, scale, found_inf and grad norm
  // stay on the device, and reading them costs a host sync: the trainer reads
  // them, and calls OnStep, only for the steps a sink asks for.
  virtual bool NeedsStepMetrics(int64_t step, int64_t total_steps) const {
    (void)step;
    (void)total_steps;
    return true;
  }
  virtual void OnStep(const StepMetrics& m) = 0;
  virtual void OnEval(const EvalMetrics& m) = 0;
  virtual void OnMessage(const std::string& line) = 0;
  // Once before the first step, and once after the last (the run's summary:
  // throughput, memory by category, phases). Called by whoever drives the
  // trainer (trainer/cli), not by the Trainer itself.
  virtual void OnStart(const RunHeader& header) { (void)header; }
  virtual void OnFinish(const FinalReport& report) { (void)report; }
  // Instead of OnFinish when the run stops on an error after OnStart: a
  // reader of the log can tell an error from a kill (no record at all).
  virtual void OnError(const std::string& message) { (void)message; }
  // Not OK once the sink's output failed (a full disk, a vanished file): the
  // trainer then stops the run with this error rather than train on with a
  // log that silently ends early.
  virtual absl::Status status() const { return absl::OkStatus(); }
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CORE_METRICS_H_
