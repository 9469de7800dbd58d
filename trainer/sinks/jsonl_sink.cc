#include "trainer/sinks/jsonl_sink.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/core/stop_signals.h"
#include "trainer/sinks/json.h"

namespace mnt::trainer {
namespace {

namespace fs = std::filesystem;

double Now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Bool(bool b) { return b ? "true" : "false"; }

// "key":value pairs joined into an object body.
std::string Field(const char* key, const std::string& json_value) {
  return absl::StrCat(JsonString(key), ":", json_value);
}

}  // namespace

absl::StatusOr<std::unique_ptr<JsonlSink>> JsonlSink::Create(const std::string& path,
                                                             bool append) {
  std::string kept;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // Never rename or write into a directory, FIFO or device (/dev/full).
    return absl::FailedPreconditionError(absl::StrCat(
        "--metrics_jsonl=", path, " is ",
        fs::is_directory(st) ? "a directory" : "not a regular file",
        ", expected a file to write"));
  }
  if (!append && fs::exists(st)) {
    // An earlier run's metrics stay, under the first free numbered name.
    for (int n = 1; n < 10000 && kept.empty(); ++n) {
      const std::string candidate = absl::StrCat(path, ".", n);
      if (!fs::exists(candidate, ec)) kept = candidate;
    }
    if (kept.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--metrics_jsonl=", path, ": no free name to keep the earlier file under"));
    }
    fs::rename(path, kept, ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--metrics_jsonl=", path, ": cannot move the earlier file to ", kept, ": ",
          ec.message()));
    }
  }
  FILE* f = std::fopen(path.c_str(), append ? "a" : "w");
  if (f == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot open --metrics_jsonl=", path, " for writing: ", std::strerror(errno)));
  }
  return std::unique_ptr<JsonlSink>(new JsonlSink(f, path, kept));
}

JsonlSink::~JsonlSink() { std::fclose(file_); }

void JsonlSink::WriteLine(const std::string& body) {
  if (!status_.ok()) return;
  const std::string line = absl::StrCat("{", body, "}\n");
  // Flushed per line: a killed run keeps every record written so far.
  errno = 0;
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() ||
      std::fflush(file_) != 0) {
    const int err = errno;
    status_ = absl::DataLossError(absl::StrCat(
        "writing --metrics_jsonl=", path_, " failed after ", lines_written_, " lines: ",
        err != 0 ? std::strerror(err) : "short write",
        " (the file ends early; no summary record)"));
    return;
  }
  ++lines_written_;
}

namespace {

// Strings as a JSON array ([] for none): --precision=auto's probe lines, a
// skipped step's non-finite parameters.
std::string StringArray(const std::vector<std::string>& lines) {
  std::vector<std::string> quoted;
  for (const std::string& l : lines) quoted.push_back(JsonString(l));
  return absl::StrCat("[", absl::StrJoin(quoted, ","), "]");
}

}  // namespace

void JsonlSink::OnStart(const RunHeader& h) {
  std::vector<std::string> plugins, versions;
  for (const PluginInfo& p : h.plugins) {
    plugins.push_back(absl::StrCat(
        "{", Field("kind", JsonString(p.kind)), ",", Field("name", JsonString(p.name)),
        ",", Field("abi_version", JsonString(p.abi_version)), ",",
        Field("file", JsonString(p.origin)), ",",
        Field("description", JsonString(p.description)), "}"));
  }
  for (const auto& [component, version] : h.versions) {
    versions.push_back(Field(component.c_str(), JsonString(version)));
  }
  WriteLine(absl::StrJoin(
      {Field("type", "\"run\""), Field("time", JsonNumber(h.wall_time)),
       Field("model", JsonString(h.model)), Field("precision", JsonString(h.precision)),
       Field("device", JsonString(h.device)), Field("backend", JsonString(h.backend)),
       Field("num_parameters", absl::StrCat(h.num_parameters)),
       Field("total_steps", absl::StrCat(h.total_steps)),
       Field("start_step", absl::StrCat(h.start_step)),
       Field("resumed_from", h.resumed_from.empty() ? "null" : JsonString(h.resumed_from)),
       Field("loss_scaling", JsonString(h.loss_scaling.empty() ? "none" : h.loss_scaling)),
       Field("loss_scaling_reason", JsonString(h.loss_scaling_reason)),
       Field("precision_probe", StringArray(h.precision_probe)),
       Field("samples_per_step", absl::StrCat(h.samples_per_step)),
       Field("ranks", absl::StrCat(h.ranks)),
       Field("targets_per_example", absl::StrCat(h.targets_per_example)),
       Field("versions", absl::StrCat("{", absl::StrJoin(versions, ","), "}")),
       Field("plugins", absl::StrCat("[", absl::StrJoin(plugins, ","), "]")),
       Field("config", h.config_json.empty() ? "{}" : h.config_json)},
      ","));
}

void JsonlSink::OnStep(const StepMetrics& m) {
  // FP8 GEMMs: {"<tensor>": {"scale": s, "amax": a}, ...}; absent otherwise.
  std::vector<std::string> fp8;
  for (const StepMetrics::Fp8Scale& f : m.fp8_scales) {
    fp8.push_back(absl::StrCat(JsonString(f.name), ":{\"scale\":", JsonNumber(f.scale),
                               ",\"amax\":", JsonNumber(f.amax), "}"));
  }
  std::vector<std::string> fields = {
       Field("type", "\"train\""), Field("time", JsonNumber(Now())),
       Field("elapsed", JsonNumber(m.elapsed_seconds)),
       Field("step", absl::StrCat(m.step)), Field("loss", JsonNumber(m.loss)),
       Field("lr", JsonNumber(m.lr)), Field("loss_scale", JsonNumber(m.loss_scale)),
       Field("skipped", Bool(m.skipped)),
       Field("skipped_steps", absl::StrCat(m.skipped_steps)),
       Field("grad_norm", m.skipped ? "null" : JsonNumber(m.grad_norm)),
       Field("nonfinite_params", StringArray(m.nonfinite_params)),
       Field("samples_per_second", JsonNumber(m.samples_per_second)),
       Field("tokens_per_second", JsonNumber(m.tokens_per_second))};
  if (!fp8.empty()) fields.push_back(Field("fp8", absl::StrCat("{", absl::StrJoin(fp8, ","), "}")));
  WriteLine(absl::StrJoin(fields, ","));
}

void JsonlSink::OnEval(const EvalMetrics& m) {
  WriteLine(absl::StrJoin(
      {Field("type", "\"eval\""), Field("time", JsonNumber(Now())),
       Field("step", absl::StrCat(m.step)), Field("eval_loss", JsonNumber(m.loss)),
       Field("eval_accuracy", JsonNumber(m.accuracy)),
       Field("examples", absl::StrCat(m.examples))},
      ","));
}

void JsonlSink::OnMessage(const std::string& line) {
  WriteLine(absl::StrCat(Field("type", "\"message\""), ",", Field("time", JsonNumber(Now())),
                         ",", Field("text", JsonString(line))));
}

void JsonlSink::OnError(const std::string& message) {
  WriteLine(absl::StrCat(Field("type", "\"error\""), ",", Field("time", JsonNumber(Now())),
                         ",", Field("message", JsonString(message))));
}

void JsonlSink::OnFinish(const FinalReport& r) {
  std::vector<std::string> memory, phases, slow;
  for (const std::string& line : r.slow_paths) slow.push_back(JsonString(line));
  for (const MemoryLine& m : r.memory) {
    memory.push_back(Field(m.category.c_str(),
                           absl::StrCat("{", Field("current", absl::StrCat(m.current_bytes)),
                                        ",", Field("peak", absl::StrCat(m.peak_bytes)), "}")));
  }
  for (const PhaseTime& p : r.phases) {
    phases.push_back(Field(p.phase.c_str(), JsonNumber(p.seconds)));
  }
  const std::string bytes = absl::StrCat(
      "{", Field("weights", absl::StrCat(r.bytes_weights)), ",",
      Field("master_weights", absl::StrCat(r.bytes_master_weights)), ",",
      Field("gradients", absl::StrCat(r.bytes_gradients)), ",",
      Field("master_gradients", absl::StrCat(r.bytes_master_gradients)), ",",
      Field("optimizer_state", absl::StrCat(r.bytes_optimizer_state)), ",",
      Field("optimizer", JsonString(r.optimizer)), "}");
  const std::string eval =
      r.has_eval
          ? absl::StrCat("{", Field("step", absl::StrCat(r.last_eval.step)), ",",
                         Field("eval_loss", JsonNumber(r.last_eval.loss)), ",",
                         Field("eval_accuracy", JsonNumber(r.last_eval.accuracy)), ",",
                         Field("examples", absl::StrCat(r.last_eval.examples)), "}")
          : "null";
  WriteLine(absl::StrJoin(
      {Field("type", "\"summary\""), Field("time", JsonNumber(Now())),
       Field("steps", absl::StrCat(r.steps)),
       Field("stopped_by",
             r.stopped_by_signal != 0 ? JsonString(StopSignalName(r.stopped_by_signal))
             : r.stopped_early        ? std::string("\"early_stopping\"")
                                      : std::string("null")),
       Field("skipped_steps", absl::StrCat(r.skipped_steps)),
       Field("final_loss_scale", JsonNumber(r.final_loss_scale)),
       Field("samples_per_second", JsonNumber(r.samples_per_second)),
       Field("tokens_per_second", JsonNumber(r.tokens_per_second)),
       Field("train_seconds", JsonNumber(r.train_seconds)),
       Field("last_eval", eval), Field("bytes_per_parameter", bytes),
       Field("memory_bytes", absl::StrCat("{", absl::StrJoin(memory, ","), "}")),
       Field("phase_seconds", absl::StrCat("{", absl::StrJoin(phases, ","), "}")),
       Field("slow_paths", absl::StrCat("[", absl::StrJoin(slow, ","), "]")),
       Field("data_parallel",
             r.ranks > 1
                 ? absl::StrCat("{", Field("ranks", absl::StrCat(r.ranks)), ",",
                                Field("collective_seconds", JsonNumber(r.collective_seconds)),
                                ",", Field("collective_calls", absl::StrCat(r.collective_calls)),
                                ",", Field("buckets_exchanged", absl::StrCat(r.buckets_exchanged)),
                                ",",
                                Field("buckets_in_backward", absl::StrCat(r.buckets_in_backward)),
                                ",", Field("buckets_started", absl::StrCat(r.buckets_started)),
                                "}")
                 : "null")},
      ","));
}

}  // namespace mnt::trainer
