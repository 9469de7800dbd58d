// export_hf: a Mantissa gpt2 run -> a Hugging Face GPT-2 folder
// (model.safetensors + config.json) that GPT2LMHeadModel.from_pretrained
// loads, fp32 or bf16 (rounded to nearest even), with the run's tokenizer
// as the files AutoTokenizer.from_pretrained loads (hf_tokenizer.h).
//
//   export_hf --input=~/.cache/mantissa/runs/gpt2-fortunes-auto
//       --output=hf_model [--dtype=fp32|bf16] [--vocab_size=N]
//
// A LoRA run (train --lora) exports either merged, W + (alpha/r)·B·A as
// PEFT's merge_and_unload writes it (--merge_lora), or the base model in
// --output and the adapters in PEFT's format in --adapter_output
// (adapter_model.safetensors, adapter_config.json: tools/gpt2/peft_lora.h).
//
// --input is a run folder (its latest) or a checkpoint file; the real
// vocabulary and the tokenizer come from the run's folder (run_input.h).
// Every file is written atomically: a failed export leaves existing files
// as they were.
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "models/gpt2/hf_gpt2.h"
#include "tools/gpt2/hf_tokenizer.h"
#include "tools/gpt2/llmc_convert.h"
#include "tools/gpt2/peft_lora.h"
#include "tools/gpt2/run_input.h"
#include "models/gpt2/safetensors.h"
#include "tools/gpt2/sentencepiece_model.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/run_config_file.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/config/user_path.h"

ABSL_FLAG(std::string, input, "", "Mantissa run folder (its latest) or checkpoint file to read");
ABSL_FLAG(std::string, output, "",
          "folder to write model.safetensors, config.json and the tokenizer files into");
ABSL_FLAG(std::string, dtype, "fp32", "fp32 or bf16 tensors");
ABSL_FLAG(int64_t, vocab_size, 0, "real vocabulary (wte's rows); 0: from the run's folder");
ABSL_FLAG(bool, merge_lora, false,
          "a LoRA run: write W + (alpha/r)·B·A into --output (PEFT's merge_and_unload)");
ABSL_FLAG(std::string, adapter_output, "",
          "a LoRA run: folder for the adapters in PEFT's format (adapter_model.safetensors, "
          "adapter_config.json); --output gets the base model");

namespace {

using mnt::gpt2::HfTokenizerFile;
using mnt::gpt2::RunTokenizerKind;

int Fail(const std::string& message) { return mnt::trainer::ToolError("export_hf", message); }

// The run's tokenizer as HF files, and a note saying what they are (or why
// there are none).
absl::Status TokenizerFiles(const mnt::gpt2::RunInput& in, const mnt::gpt2::LlmcHeader& h,
                            std::vector<HfTokenizerFile>* files, std::string* note) {
  switch (mnt::gpt2::SettledTokenizer(in, h.vocab)) {
    case RunTokenizerKind::kBytes:
      *files = mnt::gpt2::ByteLevelTokenizerFiles(h.max_seq_len);
      *note = "byte-level (no merges, no special tokens)";
      return absl::OkStatus();
    case RunTokenizerKind::kSentencePiece: {
      auto model = mnt::gpt2::ReadSentencePieceModel(in.tokenizer_model);
      if (!model.ok()) return model.status();
      std::string bytes;
      if (auto s = mnt::trainer::ReadWholeFile(in.tokenizer_model, &bytes); !s.ok()) return s;
      auto json = mnt::gpt2::SentencePieceTokenizerFiles(*model, h.max_seq_len);
      const std::string type =
          mnt::gpt2::spm::TrainerSpec::ModelType_Name(model->trainer_spec().model_type());
      if (json.ok()) {
        *files = *json;
        *note = absl::StrCat("SentencePiece ", type, ", ", model->pieces_size(), " pieces");
      } else {
        *note = absl::StrCat("SentencePiece ", type, ", no tokenizer.json: ",
                             json.status().message(), " (tokenizer.model is copied)");
      }
      files->push_back({mnt::trainer::kTokenizerFileName, bytes});
      return absl::OkStatus();
    }
    case RunTokenizerKind::kUnknown:
      *note = absl::StrCat(
          "none written: the run's folder does not say which tokenizer made its tokens",
          h.vocab == 50257 ? " (a vocabulary of 50257 is GPT-2's: AutoTokenizer.from_pretrained"
                             "(\"gpt2\"))"
                           : "");
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "export_hf",
          "converts a Mantissa gpt2 run to a Hugging Face GPT-2 folder "
          "(model.safetensors, config.json, the tokenizer's files):\n"
          "  export_hf --input=RUN_FOLDER|CHECKPOINT --output=FOLDER [--dtype=fp32|bf16] "
          "[--vocab_size=N]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string output = mnt::trainer::ExpandUserPath(absl::GetFlag(FLAGS_output));
  const std::string dtype = absl::GetFlag(FLAGS_dtype);
  if (absl::GetFlag(FLAGS_input).empty() || output.empty()) {
    return Fail("--input and --output are required");
  }
  if (dtype != "fp32" && dtype != "bf16") return Fail("--dtype=" + dtype + " is not fp32 or bf16");
  auto in = mnt::gpt2::OpenRunInput(absl::GetFlag(FLAGS_input), "--input",
                                    absl::GetFlag(FLAGS_vocab_size));
  if (!in.ok()) return Fail(std::string(in.status().message()));
  auto ckpt = mnt::trainer::ReadCheckpoint(in->folder.checkpoint);
  if (!ckpt.ok()) return Fail(std::string(ckpt.status().message()));
  auto model = mnt::gpt2::LlmcFromCheckpoint(*ckpt, in->vocab, in->folder.checkpoint);
  if (!model.ok()) return Fail(std::string(model.status().message()));
  auto lora = mnt::gpt2::LoraFromCheckpoint(*ckpt, in->folder.checkpoint);
  if (!lora.ok()) return Fail(std::string(lora.status().message()));
  const bool merge = absl::GetFlag(FLAGS_merge_lora);
  const std::string adapter_output =
      mnt::trainer::ExpandUserPath(absl::GetFlag(FLAGS_adapter_output));
  if (lora->has_value()) {
    if (merge && !adapter_output.empty()) {
      return Fail("--merge_lora and --adapter_output: the merged weights already hold the "
                  "adapters; give one");
    }
    if (!merge && adapter_output.empty()) {
      return Fail(absl::StrCat(
          in->folder.checkpoint, " holds LoRA adapters (r=", (*lora)->rank, ", alpha=",
          (*lora)->alpha, "): --merge_lora writes W + (alpha/r)·B·A into --output, "
          "--adapter_output=DIR writes them in PEFT's format beside the base model in --output"));
    }
    if (merge) {
      if (auto s = mnt::gpt2::MergeLora(**lora, &*model); !s.ok()) {
        return Fail(std::string(s.message()));
      }
    }
  } else if (merge || !adapter_output.empty()) {
    return Fail(absl::StrCat(merge ? "--merge_lora" : "--adapter_output", ": ",
                             in->folder.checkpoint,
                             " holds no LoRA adapters (train --lora makes them)"));
  }
  if (auto s = mnt::gpt2::CheckTokenizerFits(*in, model->header.vocab); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const bool bf16 = dtype == "bf16";
  auto tensors = mnt::gpt2::HfTensorsFromLlmc(*model, bf16);
  if (!tensors.ok()) return Fail(std::string(tensors.status().message()));
  std::vector<HfTokenizerFile> files;
  std::string tokenizer_note;
  if (auto s = TokenizerFiles(*in, model->header, &files, &tokenizer_note); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  const bool writes_tokenizer = !files.empty();
  const std::string weights =
      mnt::gpt2::EncodeSafetensors(*tensors, {{"format", "pt"}, {"source", "mantissa"}});
  files.insert(files.begin(), {{"model.safetensors", weights},
                               {"config.json", mnt::gpt2::HfConfigJson(model->header, bf16)}});
  if (auto s = mnt::trainer::MakeDirectories(output); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  std::set<std::string> written;
  for (const HfTokenizerFile& f : files) {
    if (auto s = mnt::trainer::WriteFileAtomic(output + "/" + f.name, f.contents); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    written.insert(f.name);
  }
  // With this run's tokenizer written, an earlier export's other tokenizer
  // files (a byte-level vocab.json beside a SentencePiece tokenizer.json)
  // would contradict it. Without one, the folder's are left alone: they may
  // be the user's own (GPT-2's tokenizer beside a model of GPT-2 tokens).
  std::vector<std::string> removed, kept;
  for (const std::string& name : mnt::gpt2::HfTokenizerFileNames()) {
    std::error_code ec;
    if (written.count(name) || !std::filesystem::exists(output + "/" + name, ec)) continue;
    if (writes_tokenizer) {
      if (std::filesystem::remove(output + "/" + name, ec)) removed.push_back(name);
    } else {
      kept.push_back(name);
    }
  }
  if (!adapter_output.empty()) {
    std::error_code ec;
    const std::string base = std::filesystem::absolute(output, ec).lexically_normal().string();
    const std::string adapters = mnt::gpt2::EncodeSafetensors(
        mnt::gpt2::PeftAdapterTensors(**lora, bf16), {{"format", "pt"}, {"source", "mantissa"}});
    if (auto s = mnt::trainer::MakeDirectories(adapter_output); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    for (const auto& [name, contents] :
         {std::pair<std::string, std::string>{"adapter_model.safetensors", adapters},
          {"adapter_config.json", mnt::gpt2::PeftAdapterConfigJson(**lora, base)}}) {
      if (auto s = mnt::trainer::WriteFileAtomic(adapter_output + "/" + name, contents);
          !s.ok()) {
        return Fail(std::string(s.message()));
      }
    }
    std::printf("LoRA adapters (r=%lld, alpha=%g, %zu weights x %lld layers) -> %s: "
                "adapter_model.safetensors, adapter_config.json (PEFT; base model %s)\n",
                static_cast<long long>((*lora)->rank), (*lora)->alpha, (*lora)->weights.size(),
                static_cast<long long>((*lora)->n_layer), adapter_output.c_str(), base.c_str());
  }
  if (merge) {
    std::printf("merged the LoRA adapters (r=%lld, alpha=%g) into the weights\n",
                static_cast<long long>((*lora)->rank), (*lora)->alpha);
  }
  std::vector<std::string> names;
  for (const HfTokenizerFile& f : files) names.push_back(f.name);
  std::printf("exported %s -> %s (%s, %zu tensors, vocabulary %lld): %s\n",
              in->folder.checkpoint.c_str(), output.c_str(), dtype.c_str(), tensors->size(),
              static_cast<long long>(model->header.vocab), absl::StrJoin(names, ", ").c_str());
  std::printf("tokenizer: %s%s\n", tokenizer_note.c_str(),
              kept.empty() ? ""
                           : absl::StrCat("; the folder's ", absl::StrJoin(kept, ", "),
                                          " left as they were")
                                 .c_str());
  if (!removed.empty()) {
    std::printf("removed an earlier export's %s (not this run's tokenizer)\n",
                absl::StrJoin(removed, ", ").c_str());
  }
  return 0;
}
