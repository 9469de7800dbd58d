// export_llmc: Mantissa gpt2 run -> llm.c GPT-2 checkpoint (.bin), version 3
// (fp32) or 5 (bf16, rounded to nearest even).
//
//   export_llmc --input=~/.cache/mantissa/runs/gpt2-fortunes-auto
//       --output=model.bin [--dtype=fp32|bf16] [--vocab_size=N]
//
// --input is a run folder (its latest) or a checkpoint file; the header's
// real vocabulary comes from the run's folder (run_input.h). Written
// atomically: a failed export leaves an existing file as it was.
#include <cstdio>
#include <filesystem>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "models/gpt2/llmc_format.h"
#include "tools/gpt2/llmc_convert.h"
#include "tools/gpt2/run_input.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/config/user_path.h"

ABSL_FLAG(std::string, input, "", "Mantissa run folder (its latest) or checkpoint file to read");
ABSL_FLAG(std::string, output, "", "llm.c checkpoint to write");
ABSL_FLAG(std::string, dtype, "fp32", "fp32 (llm.c version 3) or bf16 (5)");
ABSL_FLAG(int64_t, vocab_size, 0,
          "real vocabulary for the header; 0: from the run's folder");

namespace {

int Fail(const std::string& message) { return mnt::trainer::ToolError("export_llmc", message); }

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "export_llmc",
          "converts a Mantissa gpt2 run to an llm.c GPT-2 checkpoint:\n"
          "  export_llmc --input=RUN_FOLDER|CHECKPOINT --output=model.bin [--dtype=fp32|bf16] "
          "[--vocab_size=N]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string input = absl::GetFlag(FLAGS_input);
  const std::string output = mnt::trainer::ExpandUserPath(absl::GetFlag(FLAGS_output));
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (input.empty() || output.empty()) {
    return Fail("--input and --output are required");
  }
  if (dtype != "fp32" && dtype != "bf16") {
    return Fail("--dtype=" + dtype + " is not fp32 or bf16");
  }
  auto in = mnt::gpt2::OpenRunInput(input, "--input", absl::GetFlag(FLAGS_vocab_size));
  if (!in.ok()) return Fail(std::string(in.status().message()));
  auto model = mnt::gpt2::LlmcFromCheckpointFile(in->folder.checkpoint, in->vocab);
  if (!model.ok()) return Fail(std::string(model.status().message()));
  std::string bytes;
  const int32_t version = dtype == "fp32" ? mnt::gpt2::kLlmcVersionF32
                                          : mnt::gpt2::kLlmcVersionBf16;
  if (auto s = mnt::gpt2::EncodeLlmc(*model, version, &bytes); !s.ok()) {
    return Fail(s.message());
  }
  // Like the trainer: the output's directory is created when missing.
  const std::string dir = std::filesystem::path(output).parent_path().string();
  if (!dir.empty()) {
    if (auto s = mnt::trainer::MakeDirectories(dir); !s.ok()) {
      return Fail(std::string(s.message()));
    }
  }
  if (auto s = mnt::trainer::WriteFileAtomic(output, bytes); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  std::printf("exported %s -> %s (llm.c version %d, vocabulary %lld, %zu bytes)\n",
              in->folder.checkpoint.c_str(), output.c_str(), version,
              static_cast<long long>(model->header.vocab), bytes.size());
  return 0;
}
