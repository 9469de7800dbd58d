// What the GPU tests that train through the real trainer share: where the
// runfiles and the test's temp dir are, a sink that keeps every step's loss,
// and a small deterministic word corpus for byte-level GPT-2.
#ifndef MANTISSA_TESTS_GPU_TRAINING_HARNESS_H_
#define MANTISSA_TESTS_GPU_TRAINING_HARNESS_H_

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "trainer/core/metrics.h"

namespace mnt::trainer::gpu_testing {

inline std::string Runfiles() {
  const char* s = std::getenv("TEST_SRCDIR");
  return std::string(s ? s : ".");
}

inline std::string TmpDir() {
  const char* t = std::getenv("TEST_TMPDIR");
  return std::string(t ? t : "/tmp");
}

class LossRecorder : public MetricsSink {
 public:
  void OnStep(const StepMetrics& m) override { losses.push_back(m.loss); }
  void OnEval(const EvalMetrics&) override {}
  void OnMessage(const std::string&) override {}
  std::vector<double> losses;
};

// 20000 words drawn from `words` by a fixed LCG from `seed`, a sentence ending
// about every seventh word; written to TmpDir()/file_name, whose path returns.
inline std::string WriteWordCorpus(const std::string& file_name,
                                   const std::vector<const char*>& words, uint32_t seed) {
  const std::string path = TmpDir() + "/" + file_name;
  std::ofstream out(path);
  uint32_t state = seed;
  for (int i = 0; i < 20000; ++i) {
    state = state * 1664525u + 1013904223u;
    out << words[(state >> 16) % words.size()] << ((state >> 8) % 7 == 0 ? ".\n" : " ");
  }
  return path;
}

}  // namespace mnt::trainer::gpu_testing

#endif  // MANTISSA_TESTS_GPU_TRAINING_HARNESS_H_
