#include "tests/integration/trained_run.h"

#include "gtest/gtest.h"
#include "tests/integration/test_env.h"

namespace mnt::trainer::testing {

TrainedRun TrainAndCheckpoint(const TrainConfig& config, const std::string& checkpoint_name) {
  PluginRegistry registry(InTreePluginDirs());
  TrainedRun r;
  auto t = MakeTrainer(config, &registry);
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return r;
  RecordingSink sink;
  EXPECT_TRUE((*t)->Train(&sink).ok());
  for (const StepMetrics& m : sink.steps) r.losses.push_back(m.loss);
  if (!sink.evals.empty()) r.eval_loss = sink.evals.back().loss;
  r.replayed_steps = (*t)->Report().replayed_steps;
  const std::string path = TempDir() + "/" + checkpoint_name;
  EXPECT_TRUE((*t)->SaveCheckpoint(path).ok());
  auto data = ReadCheckpoint(path);
  EXPECT_TRUE(data.ok()) << data.status();
  if (data.ok()) r.checkpoint = *data;
  return r;
}

}  // namespace mnt::trainer::testing
