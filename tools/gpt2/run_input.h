// What export_hf, export_llmc and sample read: their input flag (--input,
// --checkpoint) as a run folder (its `latest`) or a checkpoint file, through
// OpenRunFolder (a leading ~ expanded), and what the run's folder says of
// its tokenizer and real vocabulary, so that no flag the folder answers is
// needed:
//   byte-level runs (--dataset=fortunes, --dataset=text with bytes): 256;
//   SentencePiece runs: the pieces of the folder's tokenizer.model;
//   --dataset=shards runs: the saved data.vocab_size (0: unknown).
// A flag given (--vocab_size) still wins.
#ifndef MANTISSA_TOOLS_GPT2_RUN_INPUT_H_
#define MANTISSA_TOOLS_GPT2_RUN_INPUT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "tools/gpt2/llmc_convert.h"
#include "trainer/checkpoint/run_folder.h"

namespace mnt::gpt2 {

enum class RunTokenizerKind { kUnknown, kBytes, kSentencePiece };

struct RunInput {
  trainer::RunFolder folder;        // folder.checkpoint: the file to read
  RunTokenizerKind tokenizer = RunTokenizerKind::kUnknown;
  std::string tokenizer_model;      // kSentencePiece: the .model file
  VocabHint vocab;                  // for LlmcFromCheckpoint
};

// `path` as typed after `flag`; `vocab_flag`: --vocab_size (0: not given).
// One line on error: no such folder or file, a folder that is not a run,
// a saved config or tokenizer.model that does not read.
absl::StatusOr<RunInput> OpenRunInput(const std::string& path, const std::string& flag,
                                      int64_t vocab_flag);

// The tokenizer once the real vocabulary is known: a run whose folder did
// not say (no saved config, or shards without data.vocab_size) but whose
// model has 256 tokens is byte-level, the only way Mantissa makes such a
// model (fortunes, byte-level text, the `tokenize` tool's shards).
RunTokenizerKind SettledTokenizer(const RunInput& input, int64_t vocab);

// One line on a model smaller than the run's SentencePiece vocabulary (its
// ids would index past wte); OK otherwise.
absl::Status CheckTokenizerFits(const RunInput& input, int64_t vocab);

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_RUN_INPUT_H_
