// import_hf: a Hugging Face GPT-2 folder (model.safetensors + config.json)
// -> Mantissa checkpoint that `train --resume` continues from step 0.
//
//   import_hf --input=hf_model --output=runs/x/latest
//       --model_options=n_layer=12,n_head=12,d_model=768,seq_len=1024
//       [--precision=fp32] [--optimizer=adamw] [--seed=1234]
//
// A file that is not GPT-2 as Mantissa computes it, or that disagrees with
// --model_options, is refused with one line; the output is written
// atomically.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "tools/gpt2/hf_gpt2.h"
#include "tools/gpt2/import_tool.h"
#include "tools/gpt2/llmc_convert.h"
#include "tools/gpt2/safetensors.h"
#include "trainer/checkpoint/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/cli/tool_command_line.h"

ABSL_FLAG(std::string, input, "", "folder with model.safetensors and config.json");
ABSL_FLAG(std::string, output, "", "Mantissa checkpoint to write");

namespace {

int Fail(const std::string& message) { return mnt::trainer::ToolError("import_hf", message); }

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "import_hf",
          "converts a Hugging Face GPT-2 folder (model.safetensors, config.json) to a "
          "Mantissa checkpoint:\n"
          "  import_hf --input=FOLDER --output=runs/x/latest --model_options=... "
          "[--precision=fp32] [--optimizer=adamw] [--seed=1234]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string output = absl::GetFlag(FLAGS_output);
  if (input.empty() || output.empty()) return Fail("--input and --output are required");
  const std::string weights_path = input + "/model.safetensors";
  const std::string config_path = input + "/config.json";
  std::string weights, config;
  if (auto s = mnt::trainer::ReadWholeFile(weights_path, &weights); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (auto s = mnt::trainer::ReadWholeFile(config_path, &config); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  auto tensors = mnt::gpt2::ParseSafetensors(weights, weights_path);
  if (!tensors.ok()) return Fail(std::string(tensors.status().message()));
  auto model = mnt::gpt2::LlmcFromHf(config, *tensors, input);
  if (!model.ok()) return Fail(std::string(model.status().message()));
  auto ckpt = mnt::gpt2::CheckpointFromLlmc(*model, mnt::gpt2::ImportOptionsFromFlags(), input);
  if (!ckpt.ok()) return Fail(std::string(ckpt.status().message()));
  if (auto s = mnt::gpt2::WriteImportedCheckpoint(output, *ckpt); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const mnt::gpt2::LlmcHeader& h = model->header;
  std::printf("imported %s (L=%lld H=%lld C=%lld T=%lld vocab=%lld) -> %s\n", input.c_str(),
              (long long)h.n_layer, (long long)h.n_head, (long long)h.channels,
              (long long)h.max_seq_len, (long long)h.vocab, output.c_str());
  return 0;
}
