// estimate: "Will it fit?" Device memory by category per precision and
// batch size, before the run, from the plugins' own plans; nothing large is
// allocated (trainer/dryrun/memory_estimate.h says where each figure comes
// from).
//
//   tools/bazel run //tools/memory:estimate -- --model=gpt2
//       --model_options=preset=gpt2-124m --batch_sizes=1,8,32
//       --precisions=fp32,tf32,bf16,fp16,fp8 --device_memory_gb=141
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "trainer/text/byte_size.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "models/gpt2/gpt2_options.h"
#include "plugins/sdk/data_kinds.h"
#include "plugins/sdk/model/lora.h"
#include "trainer/core/lora_flag.h"
#include "trainer/dryrun/memory_estimate.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/loader/plugin_registry.h"

ABSL_FLAG(std::string, model, "gpt2", "model plugin (mlp, cnn, gpt2, ...)");
ABSL_FLAG(std::string, model_options, "", "the model's options, as train's --model_options");
ABSL_FLAG(std::string, batch_sizes, "1,8,32", "comma-separated examples per micro-batch");
ABSL_FLAG(std::string, precisions, "fp32,tf32,bf16,fp16,fp8",
          "comma-separated precision plugins (fp8: bf16's plan plus the FP8 scaling state and "
          "the FP8 copies of the GEMM operands)");
ABSL_FLAG(std::string, precision_options, "",
          "the precision's options, as train's --precision_options (fp8: history=N sizes the "
          "amax history, recipe=current has none)");
ABSL_FLAG(std::string, optimizer, "adamw",
          "adamw|adam|sgd|adamw8bit|adafactor (its state per parameter: 8, 8, 4, about 2, "
          "rows + columns)");
ABSL_FLAG(std::string, optimizer_options, "",
          "as the trainer's: adafactor's beta1=... keeps a first moment, adamw8bit's "
          "min_8bit_size=N keeps smaller tensors in fp32");
ABSL_FLAG(std::string, device, "cpu",
          "backend plugin the model is created on (its op support decides fused "
          "buffers); nothing is allocated on it");
ABSL_FLAG(std::string, backend_options, "", "the backend's options");
ABSL_FLAG(std::string, data, "auto",
          "what one example is: images (f32 --input_dims, --num_classes) or tokens "
          "(--seq_len i32 ids); auto: what the model declares it takes (tokens for a model "
          "that takes token sequences only), else tokens for gpt2, images otherwise");
ABSL_FLAG(std::string, input_dims, "8,8", "images: dims of one example (digits: 8,8)");
ABSL_FLAG(int64_t, num_classes, 10, "images: number of classes");
ABSL_FLAG(int64_t, seq_len, 0, "tokens: tokens per sequence; 0 = the model's context");
ABSL_FLAG(int64_t, vocab_size, 0,
          "tokens: vocabulary; 0 = the model's vocab option, else 50257 (GPT-2's) for "
          "preset=gpt2-124m, else 256 (byte-level)");
ABSL_FLAG(double, device_memory_gb, 0,
          "device memory in GB (10^9 bytes), e.g. 141 for an H200 or 80 for an H100: "
          "adds a fits / does not fit row; 0 = none");
ABSL_FLAG(int64_t, ranks, 1,
          "data parallel: one rank's memory of this many (the trainer's padded layout)");
ABSL_FLAG(int64_t, zero_stage, 0,
          "data parallel: 0|1; 1 = ZeRO-1 (masters and optimizer state are the rank's 1/N "
          "share, plus the share's averaged gradient)");
ABSL_FLAG(double, bucket_mb, 25, "data parallel: train's --bucket_mb");
ABSL_FLAG(std::string, lora, "",
          "train's --lora (r=RANK,alpha=ALPHA,targets=GLOB,...): the adapters as parameters, "
          "every other parameter frozen");
ABSL_FLAG(std::string, freeze, "",
          "train's --freeze: globs over parameter names that take no gradient, master or "
          "optimizer state");
ABSL_FLAG(std::string, format, "table", "table, or csv (model,precision,batch_size,category,bytes)");
ABSL_FLAG(std::string, plugin_path, "", "extra plugin directories, ':'-separated");

namespace mnt::memory {
namespace {

constexpr const char* kUsage =
    "device memory by category per precision and batch size, before the run.\n"
    "  tools/bazel run //tools/memory:estimate -- --model=gpt2 --model_options=preset=gpt2-124m "
    "--batch_sizes=1,8,32 --device_memory_gb=141";

// Mixed precision is compared with fp32 up to this batch size.
constexpr int64_t kBreakEvenLimit = 4096;


absl::StatusOr<std::vector<int64_t>> ParseInts(const std::string& flag, const std::string& text,
                                               int64_t min) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    int64_t v;
    if (!absl::SimpleAtoi(part, &v) || v < min) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", text, ": '", part,
                                                     "' is not an integer >= ", min));
    }
    out.push_back(v);
  }
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat("--", flag, " is empty"));
  return out;
}

// The example the trainer's dataset would hand the model; `declared`: the
// kinds of data the model declares (ABI 1.12), empty for none.
absl::StatusOr<MNT_DataSpec> DataSpecFromFlags(const std::vector<MNT_DataKind>& declared,
                                               std::string* description) {
  MNT_DataSpec d{};
  d.struct_size = MNT_DataSpec_STRUCT_SIZE;
  const std::string model = absl::GetFlag(FLAGS_model);
  std::string kind = absl::GetFlag(FLAGS_data);
  if (kind == "auto" && !declared.empty()) {
    kind = declared == std::vector<MNT_DataKind>{MNT_DATA_KIND_TOKENS} ? "tokens" : "images";
  }
  if (kind == "auto") kind = model == "gpt2" ? "tokens" : "images";
  if (kind == "images") {
    auto dims = ParseInts("input_dims", absl::GetFlag(FLAGS_input_dims), 1);
    if (!dims.ok()) return dims.status();
    if (dims->size() > MNT_MAX_RANK) {
      return absl::InvalidArgumentError(absl::StrCat("--input_dims has more than ",
                                                     MNT_MAX_RANK, " dims"));
    }
    if (absl::GetFlag(FLAGS_num_classes) < 2) {
      return absl::InvalidArgumentError("--num_classes must be at least 2");
    }
    d.input_dtype = MNT_DTYPE_F32;
    d.input_rank = static_cast<int32_t>(dims->size());
    for (size_t i = 0; i < dims->size(); ++i) d.input_dims[i] = (*dims)[i];
    d.num_classes = absl::GetFlag(FLAGS_num_classes);
    d.targets_per_example = 1;
    *description = absl::StrCat("f32 [", absl::StrJoin(*dims, ","), "] examples, ",
                                d.num_classes, " classes");
    return d;
  }
  if (kind != "tokens") {
    return absl::InvalidArgumentError(
        absl::StrCat("--data=", kind, " is not one of auto, images, tokens"));
  }
  int64_t seq_len = absl::GetFlag(FLAGS_seq_len);
  int64_t vocab = absl::GetFlag(FLAGS_vocab_size);
  if (model == "gpt2") {  // defaults from the model's own options
    gpt2::Gpt2Config config;
    // The lora_* keys are the model layer's, not the network's (lora.h).
    models::LoraConfig lora;
    std::string options;
    if (sdk::Status s = models::TakeLoraOptions(
            "gpt2", absl::GetFlag(FLAGS_model_options).c_str(), &lora, &options);
        !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("model 'gpt2': ", s.message()));
    }
    if (sdk::Status s = gpt2::ParseGpt2Options(options.c_str(), &config); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("model 'gpt2': ", s.message()));
    }
    if (seq_len == 0) seq_len = config.seq_len;
    if (vocab == 0) vocab = config.vocab;
    // GPT-2 small is trained on GPT-2's tokens (--dataset=shards: 50257).
    if (vocab == 0 && config.preset == "gpt2-124m") vocab = 50257;
  }
  if (seq_len == 0) seq_len = 64;  // train's --seq_len default
  if (vocab == 0) vocab = 256;     // byte-level, as the main job
  if (seq_len < 1 || vocab < 2) {
    return absl::InvalidArgumentError("--seq_len must be >= 1 and --vocab_size >= 2");
  }
  d.input_dtype = MNT_DTYPE_I32;
  d.input_rank = 1;
  d.input_dims[0] = seq_len;
  d.num_classes = vocab;
  d.targets_per_example = static_cast<int32_t>(seq_len);
  *description = absl::StrCat(seq_len, " tokens per sequence, vocabulary ", vocab);
  return d;
}

absl::Status Run(const std::string& argv0) {
  const std::string format = absl::GetFlag(FLAGS_format);
  if (format != "table" && format != "csv") {
    return absl::InvalidArgumentError(
        absl::StrCat("--format=", format, " is not one of table, csv"));
  }
  auto batches = ParseInts("batch_sizes", absl::GetFlag(FLAGS_batch_sizes), 1);
  if (!batches.ok()) return batches.status();
  std::vector<std::string> precisions =
      absl::StrSplit(absl::GetFlag(FLAGS_precisions), ',', absl::SkipWhitespace());
  if (precisions.empty()) return absl::InvalidArgumentError("--precisions is empty");
  const double device_gb = absl::GetFlag(FLAGS_device_memory_gb);
  if (!(device_gb >= 0)) {
    return absl::InvalidArgumentError("--device_memory_gb must be 0 or positive");
  }
  const int64_t ranks = absl::GetFlag(FLAGS_ranks);
  const int64_t zero_stage = absl::GetFlag(FLAGS_zero_stage);
  const double bucket_mb = absl::GetFlag(FLAGS_bucket_mb);
  if (ranks < 1 || ranks > 65536) {
    return absl::InvalidArgumentError(absl::StrCat("--ranks=", ranks, ": expected 1 to 65536"));
  }
  if (zero_stage != 0 && zero_stage != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--zero_stage=", zero_stage, ": expected 0 or 1"));
  }
  if (!(bucket_mb >= 0)) return absl::InvalidArgumentError("--bucket_mb must be 0 or positive");
  trainer::PluginRegistry registry(
      trainer::PluginRegistry::DefaultSearchPath(absl::GetFlag(FLAGS_plugin_path), argv0));
  std::vector<MNT_DataKind> declared;
  if (auto model = registry.Get(MNT_PLUGIN_KIND_MODEL, absl::GetFlag(FLAGS_model)); model.ok()) {
    declared = sdk::DeclaredDataKinds((*model)->api);
  }
  std::string data_description;
  auto spec = DataSpecFromFlags(declared, &data_description);
  if (!spec.ok()) return spec.status();
  EstimateSetup setup;
  setup.device = absl::GetFlag(FLAGS_device);
  setup.backend_options = absl::GetFlag(FLAGS_backend_options);
  setup.model = absl::GetFlag(FLAGS_model);
  setup.model_options = absl::GetFlag(FLAGS_model_options);
  setup.data_spec = *spec;
  setup.optimizer = absl::GetFlag(FLAGS_optimizer);
  setup.optimizer_options = absl::GetFlag(FLAGS_optimizer_options);
  setup.precision_options = absl::GetFlag(FLAGS_precision_options);
  setup.ranks = static_cast<int>(ranks);
  setup.zero_stage = static_cast<int>(zero_stage);
  setup.bucket_mb = bucket_mb;
  setup.freeze = absl::GetFlag(FLAGS_freeze);
  if (const std::string lora = absl::GetFlag(FLAGS_lora); !lora.empty()) {
    // As train does (trainer/cli/train_main.cc).
    auto options = trainer::LoraModelOptions(lora);
    if (!options.ok()) return options.status();
    setup.model_options = setup.model_options.empty()
                              ? *options
                              : absl::StrCat(setup.model_options, ",", *options);
    setup.freeze = setup.freeze.empty()
                       ? trainer::kLoraFreezePattern
                       : absl::StrCat(setup.freeze, ",", trainer::kLoraFreezePattern);
  }
  auto estimator = MemoryEstimator::Create(setup, &registry);
  if (!estimator.ok()) return estimator.status();

  // Every estimate first, so that an error prints nothing else.
  std::vector<std::vector<MemoryEstimate>> table;  // [batch][precision]
  for (int64_t b : *batches) {
    table.emplace_back();
    for (const std::string& p : precisions) {
      auto e = (*estimator)->Estimate(p, b);
      if (!e.ok()) return e.status();
      table.back().push_back(*e);
    }
  }

  std::string csv = "model,precision,batch_size,category,bytes\n";
  if (format == "csv") {
    for (const auto& row : table) {
      for (const MemoryEstimate& e : row) {
        for (const auto& [name, bytes] : e.Rows()) {
          absl::StrAppendFormat(&csv, "%s,%s,%d,%s,%d\n", setup.model, e.precision,
                                e.batch_size, name, bytes);
        }
      }
    }
  }
  const MemoryEstimate& first = table[0][0];
  std::string out;
  if (format == "table") {
    absl::StrAppendFormat(
        &out, "memory estimate: %s%s, %d parameters, %s, %s; model created on backend '%s'%s\n",
        setup.model, setup.model_options.empty() ? "" : " (" + setup.model_options + ")",
        first.num_parameters, data_description, setup.optimizer, setup.device,
        ranks > 1 ? absl::StrCat("; per rank of ", ranks, " (rank 0)",
                                 zero_stage == 1 ? ", ZeRO-1" : ", ZeRO-0")
                  : std::string());
    for (const auto& row : table) {
      absl::StrAppendFormat(&out, "\nbatch size %d\n  %-18s", row[0].batch_size, "category");
      for (const MemoryEstimate& e : row) absl::StrAppendFormat(&out, "%19s", e.precision);
      out += "\n";
      const size_t rows = row[0].Rows().size();
      for (size_t r = 0; r < rows; ++r) {
        absl::StrAppendFormat(&out, "  %-18s", row[0].Rows()[r].first);
        for (const MemoryEstimate& e : row) {
          absl::StrAppendFormat(&out, "%19s", mnt::trainer::FormatBytes(e.Rows()[r].second));
        }
        out += "\n";
      }
      if (device_gb > 0) {
        absl::StrAppendFormat(&out, "  %-18s", absl::StrFormat("%g GB device", device_gb));
        for (const MemoryEstimate& e : row) {
          const double share = e.total() / (device_gb * 1e9);
          absl::StrAppendFormat(&out, "%19s",
                                absl::StrFormat("%s %.0f%%", share <= 1 ? "fits" : "does not fit",
                                                100 * share));
        }
        out += "\n";
      }
      for (const MemoryEstimate& e : row) {
        if (!e.fp8) continue;
        absl::StrAppendFormat(
            &out,
            "  (%s: optimizer_state holds %s of FP8 scales and amax, %d slot%s x 3 roles, "
            "history %d; activations %s of FP8 GEMM inputs kept for the backward; workspace %s "
            "of FP8 GEMM operand copies%s)\n",
            e.precision, mnt::trainer::FormatBytes(e.fp8_scaling_state), e.fp8_slots, e.fp8_slots == 1 ? "" : "s",
            e.fp8_history, mnt::trainer::FormatBytes(e.fp8_kept_inputs),
            mnt::trainer::FormatBytes(e.fp8_scratch),
            e.fp8_forward_only ? ", an evaluation's: the model does not train at this batch size"
                               : "");
      }
    }
    out += "\n";
  }
  // Where mixed precision stops costing memory.
  std::vector<std::string> break_even;
  for (size_t i = 0; i < precisions.size(); ++i) {
    if (!table[0][i].mixed) continue;
    auto b = (*estimator)->BreakEvenBatch(precisions[i], kBreakEvenLimit);
    if (!b.ok()) return b.status();
    const std::string& p = precisions[i];
    if (format == "csv") {
      // batch_size left empty: the smallest batch at which it takes no more
      // than fp32 (1: any; 0: none up to the limit).
      absl::StrAppendFormat(&csv, "%s,%s,,break_even_batch,%d\n", setup.model, p, *b);
    } else if (*b == 1) {
      break_even.push_back(absl::StrCat(p, " uses no more memory than fp32 at any batch size"));
    } else if (*b == 0) {
      break_even.push_back(absl::StrCat(p, " uses more memory than fp32 at every batch size up to ",
                                        kBreakEvenLimit));
    } else {
      break_even.push_back(absl::StrCat(p, " uses more memory than fp32 below batch size ", *b));
    }
  }
  // The largest batch that fits, per precision.
  if (device_gb > 0) {
    std::vector<std::string> largest;
    for (const std::string& p : precisions) {
      auto b = (*estimator)->LargestBatch(p, static_cast<int64_t>(device_gb * 1e9),
                                          kBreakEvenLimit);
      if (!b.ok()) return b.status();
      if (format == "csv") {
        absl::StrAppendFormat(&csv, "%s,%s,,largest_batch_that_fits,%d\n", setup.model, p, *b);
      }
      largest.push_back(absl::StrCat(p, " ", *b == kBreakEvenLimit ? ">= " : "", *b));
    }
    break_even.push_back(absl::StrFormat("largest batch size that fits in %g GB: %s", device_gb,
                                         absl::StrJoin(largest, ", ")));
  }
  if (format == "table") {
    for (const std::string& line : break_even) out += line + "\n";
    out +=
        "\nCounted as the trainer's report counts it (requested bytes; master gradients are "
        "in its 'gradients').";
    if (device_gb > 0) {
      out +=
          " Not counted: the CUDA context, library workspaces and allocator rounding "
          "(leave a GB or two).";
    }
    out += "\n";
    std::fputs(out.c_str(), stdout);
  } else {
    std::fputs(csv.c_str(), stdout);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace mnt::memory

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(argc, argv, "mantissa",
                                                           mnt::memory::kUsage, &argv0);
      code >= 0)
    return code;
  if (absl::Status s = mnt::memory::Run(argv0); !s.ok()) {
    return mnt::trainer::ToolError("mantissa", s.message());
  }
  return 0;
}
