#include "trainer/cli/eval_only.h"

#include <cmath>
#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/cli/run_header.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/sinks/fanout_sink.h"
#include "trainer/sinks/jsonl_sink.h"

namespace mnt::trainer {

int EvaluateOnly(const TrainConfig& config, Trainer& trainer, const PluginRegistry& registry,
                 int targets_per_example, const std::string& checkpoint) {
  auto fail = [](const absl::Status& s) { return ToolError("mantissa", s.message()); };
  FanoutSink sinks;
  std::unique_ptr<JsonlSink> jsonl;
  if (!config.metrics_jsonl().empty()) {
    // Appended: an evaluation belongs to the run whose log this is.
    auto sink = JsonlSink::Create(config.metrics_jsonl(), /*append=*/true);
    if (!sink.ok()) return fail(sink.status());
    jsonl = std::move(*sink);
    sinks.Add(jsonl.get());
  }
  sinks.OnStart(MakeRunHeader(config, trainer, registry, targets_per_example, checkpoint));
  auto m = trainer.Evaluate();
  if (!m.ok()) {
    sinks.OnError(std::string(m.status().message()));
    return fail(m.status());
  }
  sinks.OnEval(*m);
  if (auto s = sinks.status(); !s.ok()) return fail(s);
  // Perplexity is exp(mean cross-entropy per target) for language models;
  // for a classifier it is the same formula over its classes.
  const std::string line = absl::StrFormat(
      "eval of %s (step %d): loss %.4f  perplexity %.3f  accuracy %.2f%%  (%d examples)",
      checkpoint, m->step, m->loss, std::exp(m->loss), 100.0 * m->accuracy, m->examples);
  // Printed whatever --progress says: it is the command's whole output.
  std::fprintf(stdout, "%s\n", line.c_str());
  return std::isfinite(m->loss) ? 0 : fail(absl::DataLossError(
      absl::StrCat("the evaluation loss of ", checkpoint, " is not finite")));
}

}  // namespace mnt::trainer
