#include "tools/gpt2/import_tool.h"

#include <filesystem>
#include <regex>
#include <system_error>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/checkpoint_history.h"
#include "trainer/checkpoint/run_config_file.h"
#include "trainer/checkpoint/run_folder.h"
#include "trainer/config/user_path.h"

ABSL_FLAG(std::string, output, "",
          "run folder to write (checkpoint-0, latest, train_config.txtpb); train "
          "--resume_from=FOLDER continues it");
ABSL_FLAG(bool, overwrite_output_dir, false,
          "replace another run's work in --output (its checkpoints, latest, saved config, "
          "tokenizer.model) instead of refusing");
ABSL_FLAG(std::string, model_options, "",
          "gpt2 model options the checkpoint is for (as train's --model_options); must match "
          "the file; default: the file's n_layer, n_head, d_model and seq_len");
ABSL_FLAG(std::string, precision, "fp32", "train's --precision");
ABSL_FLAG(std::string, optimizer, "adamw", "train's --optimizer");
ABSL_FLAG(uint64_t, seed, 1234, "train's --seed (the data order)");
ABSL_FLAG(double, init_scale, 65536.0, "fp16 initial loss scale");

namespace mnt::gpt2 {

namespace fs = std::filesystem;

ImportOptions ImportOptionsFromFlags(const LlmcHeader& header) {
  ImportOptions o;
  o.model_options = absl::GetFlag(FLAGS_model_options);
  if (o.model_options.empty()) {
    o.model_options = absl::StrCat("n_layer=", header.n_layer, ",n_head=", header.n_head,
                                   ",d_model=", header.channels, ",seq_len=", header.max_seq_len);
  }
  o.precision = absl::GetFlag(FLAGS_precision);
  o.optimizer = absl::GetFlag(FLAGS_optimizer);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.init_scale = static_cast<float>(absl::GetFlag(FLAGS_init_scale));
  return o;
}

ImportOutput ImportOutputFromFlags() {
  ImportOutput out;
  const std::string typed = absl::GetFlag(FLAGS_output);
  out.flag = "--output=" + typed;
  const std::string path = trainer::ExpandUserPath(typed);
  out.dir = path;
  std::error_code ec;
  if (path.empty() || fs::is_directory(path, ec)) return out;
  const std::string name = fs::path(path).filename().string();
  static const std::regex kStepFile("checkpoint-[0-9]+");
  if (name == "latest" || std::regex_match(name, kStepFile) || fs::exists(path, ec)) {
    out.dir = fs::path(path).parent_path().string();
    if (out.dir.empty()) out.dir = ".";
    out.note = absl::StrCat("note: ", out.flag, " names a file; the import writes the run folder ",
                            out.dir, " (checkpoint-0, latest, ", trainer::kRunConfigFileName,
                            "): give --output=", out.dir, " next time");
  }
  return out;
}

trainer::DataConfig DefaultImportedData(int64_t vocab, std::string* note) {
  trainer::DataConfig data = trainer::DefaultTrainConfig().data();
  if (vocab == 256) {
    *note = "bytes are its tokens: train continues it on the fortunes corpus, or on "
            "--dataset=text --text_path=FILE";
    return data;
  }
  data.set_dataset("shards");
  data.set_vocab_size(vocab);
  *note = absl::StrCat(
      "train continues it on token shards of its ", vocab, "-token vocabulary: give it "
      "--train_shards=GLOB",
      vocab == 50257 ? " (GPT-2's tokens, as llm.c's data scripts write them)" : "");
  return data;
}

trainer::TrainConfig ImportedRunConfig(const LlmcHeader& header, const ImportOptions& o,
                                       const trainer::DataConfig& data, const std::string& dir) {
  trainer::TrainConfig c = trainer::DefaultTrainConfig();
  c.set_model("gpt2");
  c.set_model_options(o.model_options);
  c.set_precision(o.precision);
  c.mutable_optimizer()->set_name(o.optimizer);
  c.set_seed(o.seed);
  if (o.precision == "fp16") c.mutable_loss_scale()->set_init_scale(o.init_scale);
  *c.mutable_data() = data;
  c.mutable_data()->set_seq_len(header.max_seq_len);
  c.set_checkpoint_dir(fs::absolute(dir).lexically_normal().string());
  return c;
}

absl::Status WriteImportedRun(const ImportOutput& output, const trainer::CheckpointData& ckpt,
                              const trainer::TrainConfig& config,
                              std::vector<std::string>* notes) {
  const std::string& dir = output.dir;
  const trainer::RunFolderContents held = trainer::InspectRunFolder(dir);
  const bool overwrite = absl::GetFlag(FLAGS_overwrite_output_dir);
  if (held.holds_run() && !overwrite) {
    return absl::FailedPreconditionError(absl::StrCat(
        output.flag, " holds another run's work (", held.Describe(),
        "): choose another folder, or add --overwrite_output_dir to replace it"));
  }
  auto lock = trainer::RunFolderLock::Acquire(dir);
  if (!lock.ok()) return lock.status();
  if (held.holds_run()) {
    auto removed = trainer::ClearRunFolder(dir);
    if (!removed.ok()) return removed.status();
    notes->push_back(absl::StrCat("--overwrite_output_dir: removed ", absl::StrJoin(*removed, ", "),
                                  " from ", dir));
  }
  const std::string step_file = trainer::StepCheckpointPath(dir, ckpt.step());
  if (auto s = trainer::WriteCheckpointAtomic(step_file, ckpt); !s.ok()) return s;
  std::vector<std::string> pruned;
  if (auto s = trainer::PublishCheckpoint(dir, step_file, 0, &pruned); !s.ok()) return s;
  if (auto s = trainer::SaveRunConfig(config); !s.ok()) return s.status();
  return absl::OkStatus();
}

}  // namespace mnt::gpt2
