// import_llmc: llm.c GPT-2 checkpoint (.bin, version 3 fp32 or 5 bf16) ->
// a Mantissa run folder that `train --resume_from=FOLDER` continues from
// step 0.
//
//   import_llmc --input=gpt2_124M.bin --output=runs/gpt2
//       [--model_options=preset=gpt2-124m] [--precision=fp32]
//       [--optimizer=adamw] [--seed=1234] [--overwrite_output_dir]
//   train --resume_from=runs/gpt2 --train_shards=...
//
// The folder gets checkpoint-0, latest and train_config.txtpb (import_tool.h).
// A malformed file or one that disagrees with --model_options is refused with
// one line, and so is a folder holding another run's work; every file is
// written atomically, so a failed import leaves existing files as they were.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "models/gpt2/llmc_format.h"
#include "tools/gpt2/import_tool.h"
#include "tools/gpt2/llmc_convert.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/config/user_path.h"

ABSL_FLAG(std::string, input, "", "llm.c checkpoint to read");

namespace {

int Fail(const std::string& message) { return mnt::trainer::ToolError("import_llmc", message); }

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "import_llmc",
          "converts an llm.c GPT-2 checkpoint to a Mantissa run folder:\n"
          "  import_llmc --input=gpt2_124M.bin --output=FOLDER "
          "[--model_options=preset=gpt2-124m] [--precision=fp32] [--optimizer=adamw] "
          "[--seed=1234] [--overwrite_output_dir]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string input = mnt::trainer::ExpandUserPath(absl::GetFlag(FLAGS_input));
  const mnt::gpt2::ImportOutput output = mnt::gpt2::ImportOutputFromFlags();
  if (input.empty() || output.dir.empty()) {
    return Fail("--input and --output are required");
  }
  std::string bytes;
  if (auto s = mnt::trainer::ReadWholeFile(input, &bytes); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  mnt::gpt2::LlmcModel model;
  if (auto s = mnt::gpt2::ParseLlmc(bytes, input, &model); !s.ok()) {
    return Fail(s.message());
  }
  const mnt::gpt2::ImportOptions options = mnt::gpt2::ImportOptionsFromFlags(model.header);
  auto ckpt = mnt::gpt2::CheckpointFromLlmc(model, options, input);
  if (!ckpt.ok()) return Fail(std::string(ckpt.status().message()));
  std::string data_note;
  const mnt::trainer::DataConfig data =
      mnt::gpt2::DefaultImportedData(model.header.vocab, &data_note);
  const mnt::trainer::TrainConfig config =
      mnt::gpt2::ImportedRunConfig(model.header, options, data, output.dir);
  if (!output.note.empty()) std::fprintf(stderr, "%s\n", output.note.c_str());
  std::vector<std::string> notes;
  if (auto s = mnt::gpt2::WriteImportedRun(output, *ckpt, config, &notes); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  for (const std::string& note : notes) std::printf("%s\n", note.c_str());
  std::printf("imported %s (llm.c version %d, L=%lld H=%lld C=%lld T=%lld vocab=%lld) -> %s "
              "(checkpoint-0, latest, train_config.txtpb: --model_options=%s --precision=%s "
              "--optimizer=%s --seed=%llu)\n",
              input.c_str(), model.header.version, (long long)model.header.n_layer,
              (long long)model.header.n_head, (long long)model.header.channels,
              (long long)model.header.max_seq_len, (long long)model.header.vocab,
              config.checkpoint_dir().c_str(), options.model_options.c_str(),
              options.precision.c_str(), options.optimizer.c_str(),
              (unsigned long long)options.seed);
  std::printf("data: %s\n", data_note.c_str());
  std::printf("continue it: train --resume_from=%s\n", config.checkpoint_dir().c_str());
  return 0;
}
