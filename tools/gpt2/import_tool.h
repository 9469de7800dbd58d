// What import_llmc and import_hf share: the trainer flags the imported run
// is for (--model_options, --precision, --optimizer, --seed, --init_scale,
// defined once here), --overwrite_output_dir, and writing the run folder
// train writes (run_folder.h): checkpoint-<step>, latest and
// train_config.txtpb describing the imported model, so that
// `train --resume_from=FOLDER` continues it with no other flag.
#ifndef MANTISSA_TOOLS_GPT2_IMPORT_TOOL_H_
#define MANTISSA_TOOLS_GPT2_IMPORT_TOOL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "models/gpt2/llmc_format.h"
#include "tools/gpt2/llmc_convert.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/config/config.h"

namespace mnt::gpt2 {

// The import options the command line gave; without --model_options, the
// file's own shape (n_layer, n_head, d_model, seq_len of `header`).
ImportOptions ImportOptionsFromFlags(const LlmcHeader& header);

// The run folder --output names: the folder itself, or, in the older form
// that named the checkpoint file in it (runs/x/latest, runs/x/checkpoint-0,
// or any existing file), the folder holding it, with a note saying so.
struct ImportOutput {
  std::string flag;  // "--output=<as typed>", for messages
  std::string dir;   // the run folder (a leading ~ expanded)
  std::string note;  // "" unless the older form was used
};
ImportOutput ImportOutputFromFlags();

// The config of the imported run: train's defaults with the model (gpt2,
// the options used), precision, optimizer, seed and fp16 initial loss
// scale the checkpoint was made for, sequences of the model's whole
// context, the checkpoints in `dir`, and `data` (how text becomes this
// model's tokens: the caller's choice, data_note says it).
trainer::TrainConfig ImportedRunConfig(const LlmcHeader& header, const ImportOptions& options,
                                       const trainer::DataConfig& data, const std::string& dir);

// The data a model of `vocab` tokens trains on when nothing else is known:
// 256 tokens are bytes (the fortunes corpus by default, --dataset=text with
// --text_path for other text); any other vocabulary needs token shards of
// it. *note says which flag train then needs.
trainer::DataConfig DefaultImportedData(int64_t vocab, std::string* note);

// Writes the imported run into output.dir: refuses in one line a folder
// holding another run's work (InspectRunFolder) unless
// --overwrite_output_dir, which removes that run's files first; holds the
// folder's lock while it writes checkpoint-<step>, latest and
// train_config.txtpb (and the tokenizer.model the config names). Each
// file is written atomically. *notes gets what was removed.
absl::Status WriteImportedRun(const ImportOutput& output, const trainer::CheckpointData& ckpt,
                              const trainer::TrainConfig& config,
                              std::vector<std::string>* notes);

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_IMPORT_TOOL_H_
