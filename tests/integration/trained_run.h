// One training run of the integration tests, kept for comparison: the loss
// of every step, the last evaluation's loss, how many steps the backend
// replayed, and the final state as the checkpoint holds it. Several tests
// compare two ways of running the same job bit for bit this way.
#ifndef MANTISSA_TESTS_INTEGRATION_TRAINED_RUN_H_
#define MANTISSA_TESTS_INTEGRATION_TRAINED_RUN_H_

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/checkpoint/checkpoint.h"
#include "trainer/config/config.h"

namespace mnt::trainer::testing {

struct TrainedRun {
  std::vector<double> losses;
  double eval_loss = NAN;  // NAN: no evaluation ran
  int64_t replayed_steps = 0;
  CheckpointData checkpoint;
};

// Trains `config` on the in-tree plugins and the digits data, then saves and
// reads back a checkpoint named `checkpoint_name` in the test's temp dir.
// Failures are recorded as test failures (the run is then partial).
TrainedRun TrainAndCheckpoint(const TrainConfig& config, const std::string& checkpoint_name);

}  // namespace mnt::trainer::testing

#endif  // MANTISSA_TESTS_INTEGRATION_TRAINED_RUN_H_
