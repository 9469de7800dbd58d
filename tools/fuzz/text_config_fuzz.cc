// libFuzzer target: a --config text proto -> MergeTextConfig, the config
// check, and the field-path scan the flags use to tell what a file set.
#include <cstddef>
#include <cstdint>
#include <string>

#include "google/protobuf/stubs/logging.h"
#include "trainer/config/config.h"
#include "trainer/config/config_fields.h"

namespace {
// Protobuf logs what it refuses; the fuzzer's output stays readable.
void Quiet(google::protobuf::LogLevel, const char*, int, const std::string&) {}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (google::protobuf::SetLogHandler(&Quiet), true);
  (void)quiet;
  const std::string text(reinterpret_cast<const char*>(data), size);
  mnt::trainer::TrainConfig config = mnt::trainer::DefaultTrainConfig();
  if (mnt::trainer::MergeTextConfig(text, "fuzz", &config).ok()) {
    (void)mnt::trainer::ValidateTrainConfig(config);
  }
  (void)mnt::trainer::FieldPathsInTextConfig(text);
  return 0;
}
