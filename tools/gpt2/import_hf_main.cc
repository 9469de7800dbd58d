// import_hf: a Hugging Face GPT-2 folder (model.safetensors + config.json,
// and its tokenizer files) -> a Mantissa run folder that
// `train --resume_from=FOLDER` continues from step 0.
//
//   import_hf --input=hf_model --output=runs/x
//       [--model_options=n_layer=12,n_head=12,d_model=768,seq_len=1024]
//       [--precision=fp32] [--optimizer=adamw] [--seed=1234]
//       [--overwrite_output_dir]
//
// The folder gets checkpoint-0, latest and train_config.txtpb
// (import_tool.h). The input's tokenizer: a SentencePiece tokenizer.model
// becomes the run's (copied; train then tokenizes --text_path with it); a
// byte-level one (export_hf's) is Mantissa's bytes; any other is named in
// a note, and the run trains on token shards. A file that is not GPT-2 as
// Mantissa computes it, or that disagrees with --model_options, is refused
// with one line, and so is a folder holding another run's work; every file
// is written atomically.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "models/gpt2/hf_gpt2.h"
#include "tools/gpt2/hf_tokenizer.h"
#include "tools/gpt2/import_tool.h"
#include "tools/gpt2/llmc_convert.h"
#include "models/gpt2/safetensors.h"
#include "tools/gpt2/peft_lora.h"
#include "trainer/core/lora_flag.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/config/user_path.h"

ABSL_FLAG(std::string, input, "", "folder with model.safetensors and config.json");
ABSL_FLAG(std::string, adapter, "",
          "folder with a PEFT LoRA adapter of the model (adapter_model.safetensors, "
          "adapter_config.json): the run trains it further (train --lora), the base frozen");
ABSL_FLAG(std::string, lora, "",
          "train's --lora (r=8,alpha=16,targets=qkvw,...): the run starts LoRA adapters on the "
          "imported model, drawn as train --lora --seed draws them, the base frozen");

namespace {

using Kind = mnt::gpt2::HfFolderTokenizer::Kind;

int Fail(const std::string& message) { return mnt::trainer::ToolError("import_hf", message); }

// How the imported run's text becomes tokens, given the input's tokenizer;
// *note says what was done with it.
mnt::trainer::DataConfig ImportedData(const mnt::gpt2::HfFolderTokenizer& t, int64_t vocab,
                                      std::string* note) {
  std::string shards_note;
  mnt::trainer::DataConfig data = mnt::gpt2::DefaultImportedData(vocab, &shards_note);
  const int pieces = t.model.pieces_size();
  switch (t.kind) {
    case Kind::kSentencePiece:
      if (pieces <= vocab) {
        const std::string type = absl::AsciiStrToLower(
            mnt::gpt2::spm::TrainerSpec::ModelType_Name(t.model.trainer_spec().model_type()));
        data.set_dataset("text");
        data.set_tokenizer("sentencepiece");
        data.set_tokenizer_type(type);
        data.set_tokenizer_model(t.file);
        data.set_vocab_size(pieces);
        *note = absl::StrCat("its ", t.file, " (SentencePiece ", type, ", ", pieces,
                             " pieces) is the run's tokenizer, copied into the run folder: "
                             "train continues it on --text_path=FILE tokenized with it");
        return data;
      }
      *note = absl::StrCat("its ", t.file, " has ", pieces, " pieces, more than the model's ",
                           vocab, " tokens: not used; ", shards_note);
      return data;
    case Kind::kByteLevel:
      *note = absl::StrCat("its tokenizer (", t.file, ") is byte-level (id = byte), as the run's "
                           "own; ", shards_note);
      return data;
    case Kind::kOther:
      *note = absl::StrCat("its tokenizer (", t.file, ") is neither byte-level nor SentencePiece, "
                           "which are what train tokenizes text with: make token shards with "
                           "it; ", shards_note);
      return data;
    case Kind::kNone:
      break;
  }
  *note = shards_note;
  return data;
}

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "import_hf",
          "converts a Hugging Face GPT-2 folder (model.safetensors, config.json) to a "
          "Mantissa run folder:\n"
          "  import_hf --input=FOLDER [--lora=r=8,...|--adapter=PEFT_FOLDER] --output=FOLDER [--model_options=...] "
          "[--precision=fp32] [--optimizer=adamw] [--seed=1234] [--overwrite_output_dir]",
          &argv0);
      code >= 0) {
    return code;
  }
  const std::string input = mnt::trainer::ExpandUserPath(absl::GetFlag(FLAGS_input));
  const mnt::gpt2::ImportOutput output = mnt::gpt2::ImportOutputFromFlags();
  if (input.empty() || output.dir.empty()) return Fail("--input and --output are required");
  const std::string weights_path = input + "/model.safetensors";
  const std::string config_path = input + "/config.json";
  std::string weights, config_json;
  if (auto s = mnt::trainer::ReadWholeFile(weights_path, &weights); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (auto s = mnt::trainer::ReadWholeFile(config_path, &config_json); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  auto tensors = mnt::gpt2::ParseSafetensors(weights, weights_path);
  if (!tensors.ok()) return Fail(std::string(tensors.status().message()));
  auto model = mnt::gpt2::LlmcFromHf(config_json, *tensors, input);
  if (!model.ok()) return Fail(std::string(model.status().message()));
  const mnt::gpt2::ImportOptions options = mnt::gpt2::ImportOptionsFromFlags(model->header);
  auto ckpt = mnt::gpt2::CheckpointFromLlmc(*model, options, input);
  if (!ckpt.ok()) return Fail(std::string(ckpt.status().message()));
  // A PEFT adapter: the run is the one train --lora would start with it.
  const std::string adapter = mnt::trainer::ExpandUserPath(absl::GetFlag(FLAGS_adapter));
  std::string lora_flag;
  if (!adapter.empty() && !absl::GetFlag(FLAGS_lora).empty()) {
    return Fail("--adapter and --lora: the adapter is the LoRA run's start; give one");
  }
  if (!absl::GetFlag(FLAGS_lora).empty()) {
    auto lora = mnt::gpt2::FreshLora(*model, absl::GetFlag(FLAGS_lora), options.seed, "--lora");
    if (!lora.ok()) return Fail(std::string(lora.status().message()));
    if (auto s = mnt::gpt2::AddLoraToCheckpoint(*lora, options.optimizer, &*ckpt); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    lora_flag = mnt::gpt2::LoraFlagOf(*lora);
  }
  if (!adapter.empty()) {
    std::string adapter_weights, adapter_config;
    for (const auto& [name, contents] :
         {std::pair{"/adapter_model.safetensors", &adapter_weights},
          std::pair{"/adapter_config.json", &adapter_config}}) {
      if (auto s = mnt::trainer::ReadWholeFile(adapter + name, contents); !s.ok()) {
        return Fail(std::string(s.message()));
      }
    }
    auto adapter_tensors =
        mnt::gpt2::ParseSafetensors(adapter_weights, adapter + "/adapter_model.safetensors");
    if (!adapter_tensors.ok()) return Fail(std::string(adapter_tensors.status().message()));
    auto lora =
        mnt::gpt2::LoraFromPeft(adapter_config, *adapter_tensors, model->header, adapter);
    if (!lora.ok()) return Fail(std::string(lora.status().message()));
    if (auto s = mnt::gpt2::AddLoraToCheckpoint(*lora, options.optimizer, &*ckpt); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    lora_flag = mnt::gpt2::LoraFlagOf(*lora);
  }
  auto tokenizer = mnt::gpt2::InspectHfFolderTokenizer(input);
  if (!tokenizer.ok()) return Fail(std::string(tokenizer.status().message()));
  std::string data_note;
  const mnt::trainer::DataConfig data = ImportedData(*tokenizer, model->header.vocab, &data_note);
  mnt::trainer::TrainConfig config =
      mnt::gpt2::ImportedRunConfig(model->header, options, data, output.dir);
  if (!lora_flag.empty()) {
    // As train --lora saves its run (trainer/cli/train_main.cc).
    config.set_model_options(ckpt->model_options());
    config.set_lora(lora_flag);
    config.set_freeze(mnt::trainer::kLoraFreezePattern);
  }
  if (!output.note.empty()) std::fprintf(stderr, "%s\n", output.note.c_str());
  std::vector<std::string> notes;
  if (auto s = mnt::gpt2::WriteImportedRun(output, *ckpt, config, &notes); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  for (const std::string& note : notes) std::printf("%s\n", note.c_str());
  const mnt::gpt2::LlmcHeader& h = model->header;
  std::printf("imported %s (L=%lld H=%lld C=%lld T=%lld vocab=%lld) -> %s (checkpoint-0, "
              "latest, train_config.txtpb: --model_options=%s --precision=%s --optimizer=%s "
              "--seed=%llu)\n",
              input.c_str(), (long long)h.n_layer, (long long)h.n_head, (long long)h.channels,
              (long long)h.max_seq_len, (long long)h.vocab, config.checkpoint_dir().c_str(),
              options.model_options.c_str(), options.precision.c_str(),
              options.optimizer.c_str(), (unsigned long long)options.seed);
  if (!lora_flag.empty()) {
    std::printf("LoRA adapters %s: --lora=%s (the base frozen)\n",
                adapter.empty() ? "(fresh, as train draws them)" : adapter.c_str(),
                lora_flag.c_str());
  }
  std::printf("data: %s\n", data_note.c_str());
  std::printf("continue it: train --resume_from=%s\n", config.checkpoint_dir().c_str());
  return 0;
}
