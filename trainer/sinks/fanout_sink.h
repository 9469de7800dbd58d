// One MetricsSink that forwards to several (console, JSONL, TensorBoard): the
// trainer takes one sink.
#ifndef MANTISSA_TRAINER_SINKS_FANOUT_SINK_H_
#define MANTISSA_TRAINER_SINKS_FANOUT_SINK_H_

#include <vector>

#include "trainer/core/metrics.h"

namespace mnt::trainer {

class FanoutSink : public MetricsSink {
 public:
  // Borrowed; must outlive this. Calls go out in the order added.
  void Add(MetricsSink* sink) { sinks_.push_back(sink); }

  // A step's metrics are read when any sink wants them. Every sink then sees
  // the step and keeps what it wants (a console also prints a skipped step
  // it did not ask for).
  bool NeedsStepMetrics(int64_t step, int64_t total_steps) const override {
    for (MetricsSink* s : sinks_) {
      if (s->NeedsStepMetrics(step, total_steps)) return true;
    }
    return false;
  }
  void OnStep(const StepMetrics& m) override {
    for (MetricsSink* s : sinks_) s->OnStep(m);
  }
  void OnEval(const EvalMetrics& m) override {
    for (MetricsSink* s : sinks_) s->OnEval(m);
  }
  void OnMessage(const std::string& line) override {
    for (MetricsSink* s : sinks_) s->OnMessage(line);
  }
  void OnStart(const RunHeader& h) override {
    for (MetricsSink* s : sinks_) s->OnStart(h);
  }
  void OnError(const std::string& message) override {
    for (MetricsSink* s : sinks_) s->OnError(message);
  }
  void OnFinish(const FinalReport& r) override {
    for (MetricsSink* s : sinks_) s->OnFinish(r);
  }
  // The first sink that failed.
  absl::Status status() const override {
    for (const MetricsSink* s : sinks_) {
      if (absl::Status st = s->status(); !st.ok()) return st;
    }
    return absl::OkStatus();
  }

 private:
  std::vector<MetricsSink*> sinks_;
};

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_SINKS_FANOUT_SINK_H_
