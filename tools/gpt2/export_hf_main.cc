// export_hf: Mantissa gpt2 checkpoint -> a Hugging Face GPT-2 folder
// (model.safetensors + config.json) that GPT2LMHeadModel.from_pretrained
// loads, fp32 or bf16 (rounded to nearest even).
//
//   export_hf --input=~/.cache/mantissa/runs/gpt2-fortunes-auto/latest
//       --output=hf_model [--dtype=fp32|bf16] [--vocab_size=N]
//
// Both files are written atomically: a failed export leaves existing files
// as they were.
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "tools/gpt2/hf_gpt2.h"
#include "tools/gpt2/llmc_convert.h"
#include "tools/gpt2/safetensors.h"
#include "trainer/checkpoint/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/cli/tool_command_line.h"

ABSL_FLAG(std::string, input, "", "Mantissa checkpoint to read");
ABSL_FLAG(std::string, output, "", "folder to write model.safetensors and config.json into");
ABSL_FLAG(std::string, dtype, "fp32", "fp32 or bf16 tensors");
ABSL_FLAG(int64_t, vocab_size, 0, "real vocabulary (wte's rows); 0: from the checkpoint");

namespace {

int Fail(const std::string& message) { return mnt::trainer::ToolError("export_hf", message); }

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "export_hf",
          "converts a Mantissa gpt2 checkpoint to a Hugging Face GPT-2 folder "
          "(model.safetensors, config.json):\n"
          "  export_hf --input=CHECKPOINT --output=FOLDER [--dtype=fp32|bf16] [--vocab_size=N]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string output = absl::GetFlag(FLAGS_output);
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (input.empty() || output.empty()) return Fail("--input and --output are required");
  if (dtype != "fp32" && dtype != "bf16") return Fail("--dtype=" + dtype + " is not fp32 or bf16");
  auto model = mnt::gpt2::LlmcFromCheckpointFile(input, absl::GetFlag(FLAGS_vocab_size));
  if (!model.ok()) return Fail(std::string(model.status().message()));
  const bool bf16 = dtype == "bf16";
  auto tensors = mnt::gpt2::HfTensorsFromLlmc(*model, bf16);
  if (!tensors.ok()) return Fail(std::string(tensors.status().message()));
  const std::string weights =
      mnt::gpt2::EncodeSafetensors(*tensors, {{"format", "pt"}, {"source", "mantissa"}});
  if (auto s = mnt::trainer::MakeDirectories(output); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const std::string weights_path = output + "/model.safetensors";
  const std::string config_path = output + "/config.json";
  if (auto s = mnt::trainer::WriteFileAtomic(weights_path, weights); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (auto s = mnt::trainer::WriteFileAtomic(config_path,
                                             mnt::gpt2::HfConfigJson(model->header, bf16));
      !s.ok()) {
    return Fail(std::string(s.message()));
  }
  std::printf("exported %s -> %s (%s, %zu tensors, %zu bytes) and %s\n", input.c_str(),
              weights_path.c_str(), dtype.c_str(), tensors->size(), weights.size(),
              config_path.c_str());
  return 0;
}
