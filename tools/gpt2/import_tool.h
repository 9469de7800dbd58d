// What import_llmc and import_hf share: the trainer flags the imported
// checkpoint is for (--model_options, --precision, --optimizer, --seed,
// --init_scale, defined once here) and writing the checkpoint.
#ifndef MANTISSA_TOOLS_GPT2_IMPORT_TOOL_H_
#define MANTISSA_TOOLS_GPT2_IMPORT_TOOL_H_

#include <string>

#include "absl/status/status.h"
#include "tools/gpt2/llmc_convert.h"
#include "trainer/checkpoint/checkpoint.h"

namespace mnt::gpt2 {

// The import options the command line gave.
ImportOptions ImportOptionsFromFlags();

// Writes `ckpt` to `output` atomically, creating its folder (as the
// trainer does): a failed import leaves an existing file as it was.
absl::Status WriteImportedCheckpoint(const std::string& output,
                                     const trainer::CheckpointData& ckpt);

}  // namespace mnt::gpt2

#endif  // MANTISSA_TOOLS_GPT2_IMPORT_TOOL_H_
