// Turns the data part of a TrainConfig into training and evaluation batch
// sources (digits by default, IDX files, or byte-level text).
#ifndef MANTISSA_TRAINER_CLI_LOAD_DATASETS_H_
#define MANTISSA_TRAINER_CLI_LOAD_DATASETS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "trainer/config/config.h"
#include "trainer/core/batch_source.h"

namespace mnt::trainer {

struct LoadedDatasets {
  std::unique_ptr<BatchSource> train;
  std::unique_ptr<BatchSource> eval;
  std::string description;  // one line for the log
  // --dataset=text: where its tokens were kept as llm.c shards, one line
  // "tokens: <train shard> (<n> tokens), <validation shard> (<m>)"; else "".
  std::string shards_description;
  // --tokenizer=sentencepiece: the model the tokens came from (the trainer
  // keeps a copy beside its checkpoints), else "".
  std::string tokenizer_model;
};

// `digits_csv_hint` is where the binary's runfiles hold Debian's digits csv
// (may be empty).
absl::StatusOr<LoadedDatasets> LoadDatasets(const TrainConfig& config,
                                            const std::string& digits_csv_hint);

}  // namespace mnt::trainer

#endif  // MANTISSA_TRAINER_CLI_LOAD_DATASETS_H_
