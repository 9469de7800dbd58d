// import_llmc: llm.c GPT-2 checkpoint (.bin, version 3 fp32 or 5 bf16) ->
// Mantissa checkpoint that `train --resume` continues from step 0.
//
//   import_llmc --input=gpt2_124M.bin --output=runs/x/latest
//       --model_options=preset=gpt2-124m [--precision=fp32] [--optimizer=adamw]
//       [--seed=1234]
//   train --model_options=preset=gpt2-124m --checkpoint_dir=runs/x --resume ...
//
// A malformed file or one that disagrees with --model_options is refused with
// one line; the output is written atomically, so a failed import leaves an
// existing file as it was.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "models/gpt2/llmc_format.h"
#include "tools/gpt2/import_tool.h"
#include "tools/gpt2/llmc_convert.h"
#include "trainer/checkpoint/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/cli/tool_command_line.h"

ABSL_FLAG(std::string, input, "", "llm.c checkpoint to read");
ABSL_FLAG(std::string, output, "", "Mantissa checkpoint to write");

namespace {

int Fail(const std::string& message) { return mnt::trainer::ToolError("import_llmc", message); }

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "import_llmc",
          "converts an llm.c GPT-2 checkpoint to a Mantissa checkpoint:\n"
          "  import_llmc --input=gpt2_124M.bin --output=runs/x/latest "
          "--model_options=preset=gpt2-124m [--precision=fp32] "
          "[--optimizer=adamw] [--seed=1234]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (input.empty() || output.empty()) {
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
  auto ckpt = mnt::gpt2::CheckpointFromLlmc(model, mnt::gpt2::ImportOptionsFromFlags(), input);
  if (!ckpt.ok()) return Fail(std::string(ckpt.status().message()));
  if (auto s = mnt::gpt2::WriteImportedCheckpoint(output, *ckpt); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  std::printf("imported %s (llm.c version %d, L=%lld H=%lld C=%lld T=%lld "
              "vocab=%lld) -> %s\n",
              input.c_str(), model.header.version,
              (long long)model.header.n_layer, (long long)model.header.n_head,
              (long long)model.header.channels,
              (long long)model.header.max_seq_len,
              (long long)model.header.vocab, output.c_str());
  return 0;
}
