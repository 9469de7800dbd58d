#include "tools/gpt2/import_tool.h"

#include <filesystem>

#include "absl/flags/flag.h"
#include "trainer/checkpoint/atomic_file.h"

ABSL_FLAG(std::string, model_options, "",
          "gpt2 model options the checkpoint is for (as train's --model_options); must match "
          "the file");
ABSL_FLAG(std::string, precision, "fp32", "train's --precision");
ABSL_FLAG(std::string, optimizer, "adamw", "train's --optimizer");
ABSL_FLAG(uint64_t, seed, 1234, "train's --seed (the data order)");
ABSL_FLAG(double, init_scale, 65536.0, "fp16 initial loss scale");

namespace mnt::gpt2 {

ImportOptions ImportOptionsFromFlags() {
  ImportOptions o;
  o.model_options = absl::GetFlag(FLAGS_model_options);
  o.precision = absl::GetFlag(FLAGS_precision);
  o.optimizer = absl::GetFlag(FLAGS_optimizer);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.init_scale = static_cast<float>(absl::GetFlag(FLAGS_init_scale));
  return o;
}

absl::Status WriteImportedCheckpoint(const std::string& output,
                                     const trainer::CheckpointData& ckpt) {
  const std::string dir = std::filesystem::path(output).parent_path().string();
  if (!dir.empty()) {
    if (auto s = trainer::MakeDirectories(dir); !s.ok()) return s;
  }
  return trainer::WriteCheckpointAtomic(output, ckpt);
}

}  // namespace mnt::gpt2
