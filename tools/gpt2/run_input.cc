#include "tools/gpt2/run_input.h"

#include "absl/strings/str_cat.h"
#include "tools/gpt2/sentencepiece_model.h"
#include "trainer/checkpoint/run_config_file.h"

namespace mnt::gpt2 {

absl::StatusOr<RunInput> OpenRunInput(const std::string& path, const std::string& flag,
                                      int64_t vocab_flag) {
  auto folder = trainer::OpenRunFolder(path, flag);
  if (!folder.ok()) return folder.status();
  RunInput in;
  in.folder = *folder;
  in.vocab.flag = vocab_flag;
  // The folder's own copy first: it goes with these checkpoints.
  std::string model = folder->tokenizer_model;
  if (!folder->config_path.empty()) {
    auto config = trainer::ReadRunConfig(*folder);
    if (!config.ok()) return config.status();
    const trainer::DataConfig& d = config->data();
    const bool subwords = d.tokenizer() == "sentencepiece";
    if (d.dataset() == "fortunes" || (d.dataset() == "text" && !subwords)) {
      in.tokenizer = RunTokenizerKind::kBytes;
      in.vocab.run = 256;
    } else if (d.dataset() == "text") {
      model = d.tokenizer_model();  // ReadRunConfig made it the folder's copy when there is one
      if (model.empty()) {
        in.vocab.unknown = absl::StrCat("its ", trainer::kRunConfigFileName,
                                        " names no tokenizer_model");
      }
    } else if (d.dataset() == "shards") {
      in.vocab.run = d.vocab_size();
      if (d.vocab_size() == 0) {
        in.vocab.unknown = "the run trained on --dataset=shards without --vocab_size";
      }
    }
  } else if (model.empty()) {
    in.vocab.unknown = absl::StrCat(folder->dir, " has no ", trainer::kRunConfigFileName,
                                    " to say it");
  }
  if (in.tokenizer == RunTokenizerKind::kUnknown && !model.empty()) {
    auto proto = ReadSentencePieceModel(model);
    if (!proto.ok()) return proto.status();
    in.tokenizer = RunTokenizerKind::kSentencePiece;
    in.tokenizer_model = model;
    in.vocab.run = proto->pieces_size();
  }
  return in;
}

RunTokenizerKind SettledTokenizer(const RunInput& input, int64_t vocab) {
  if (input.tokenizer == RunTokenizerKind::kUnknown && vocab == 256) {
    return RunTokenizerKind::kBytes;
  }
  return input.tokenizer;
}

absl::Status CheckTokenizerFits(const RunInput& input, int64_t vocab) {
  if (input.tokenizer == RunTokenizerKind::kSentencePiece && vocab < input.vocab.run) {
    return absl::InvalidArgumentError(absl::StrCat(
        input.folder.checkpoint, ": a vocabulary of ", vocab, " is smaller than ",
        input.tokenizer_model, "'s ", input.vocab.run, " pieces"));
  }
  return absl::OkStatus();
}

}  // namespace mnt::gpt2
