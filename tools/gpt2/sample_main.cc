// sample: generates text from a Mantissa gpt2 run: byte-level runs take and
// print bytes, SentencePiece runs their tokenizer.model's pieces.
//
//   tools/bazel run //tools/gpt2:sample -- --prompt='The ' --tokens=300
//       [--checkpoint=RUN_FOLDER (its latest) or FILE; default: the newest gpt2 run's]
//       [--temperature=0.8 --top_k=40 --seed=1234]   (--temperature=0: greedy)
//
// The tokenizer and the real vocabulary come from the run's folder
// (run_input.h).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "tools/gpt2/run_input.h"
#include "tools/gpt2/sampler.h"
#include "trainer/io/atomic_file.h"
#include "trainer/checkpoint/checkpoint.h"
#include "trainer/cli/tool_command_line.h"
#include "trainer/data/sentencepiece_text.h"

ABSL_FLAG(std::string, checkpoint, "",
          "Mantissa gpt2 run folder (its latest) or checkpoint file; default: "
          "the newest <cache>/runs/gpt2-*/latest ($XDG_CACHE_HOME or ~/.cache + /mantissa), "
          "which the main job writes");
ABSL_FLAG(std::string, prompt, "\n", "text to continue");
ABSL_FLAG(int64_t, tokens, 200, "tokens to generate");
ABSL_FLAG(double, temperature, 0.8, "softmax temperature; 0 = greedy");
ABSL_FLAG(int64_t, top_k, 40, "sample among the k most likely; 0 = all");
ABSL_FLAG(uint64_t, seed, 1234, "sampling seed");
ABSL_FLAG(int64_t, vocab_size, 0, "real vocabulary; 0: from the run's folder");
ABSL_FLAG(std::string, logits_out, "",
          "instead of generating, write the logits at every position of --prompt here "
          "(NumPy .npy, float32 [prompt tokens, vocab])");

namespace {

int Fail(const std::string& message) { return mnt::trainer::ToolError("sample", message); }

// A NumPy .npy file (format 1.0) of a float32 [rows, cols] array.
std::string Npy(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
  // magic (6) + version (2) + length (2) + header + '\n', a multiple of 64.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
  return out;
}

// The newest runs/gpt2-*/latest under the cache (every train run keeps its
// checkpoints in runs/<model>-<dataset>-<precision>), or "" with *looked
// saying where it looked.
std::string NewestGpt2Run(std::string* looked) {
  namespace fs = std::filesystem;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  const std::string cache = xdg && *xdg ? std::string(xdg)
                                        : std::string(home ? home : ".") + "/.cache";
  const fs::path runs = fs::path(cache) / "mantissa" / "runs";
  *looked = (runs / "gpt2-*" / "latest").string();
  std::error_code ec;
  std::string best;
  fs::file_time_type best_time;
  for (fs::directory_iterator it(runs, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind("gpt2-", 0) != 0) continue;
    const fs::path latest = it->path() / "latest";
    std::error_code e;
    const auto t = fs::last_write_time(latest, e);
    if (e) continue;
    if (best.empty() || t > best_time) {
      best = latest.string();
      best_time = t;
    }
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string argv0;
  if (const int code = mnt::trainer::ParseToolCommandLine(
          argc, argv, "sample",
          "generates text from a Mantissa gpt2 run:\n"
          "  sample --prompt='The ' --tokens=300 [--checkpoint=RUN_FOLDER|FILE] [--temperature=0.8] "
          "[--top_k=40] [--seed=1234]",
          &argv0);
      code >= 0) {
    return code;
  }
  std::string path = absl::GetFlag(FLAGS_checkpoint);
  if (path.empty()) {
    std::string looked;
    path = NewestGpt2Run(&looked);
    if (path.empty()) {
      return Fail("no gpt2 checkpoint at " + looked +
                  " (train one: tools/bazel run //:train; or give --checkpoint=RUN_FOLDER|FILE)");
    }
  }
  const double temperature = absl::GetFlag(FLAGS_temperature);
  if (!(temperature >= 0) || absl::GetFlag(FLAGS_top_k) < 0 ||
      absl::GetFlag(FLAGS_tokens) < 0) {
    return Fail("--temperature, --top_k and --tokens must be >= 0");
  }
  // A folder (its latest) or a file, as train --resume_from takes it.
  auto in = mnt::gpt2::OpenRunInput(path, "--checkpoint", absl::GetFlag(FLAGS_vocab_size));
  if (!in.ok()) return Fail(std::string(in.status().message()));
  path = in->folder.checkpoint;
  auto ckpt = mnt::trainer::ReadCheckpoint(path);
  if (!ckpt.ok()) return Fail(std::string(ckpt.status().message()));
  auto sampler = mnt::gpt2::Gpt2Sampler::Create(*ckpt, in->vocab, path);
  if (!sampler.ok()) return Fail(std::string(sampler.status().message()));
  if (auto s = mnt::gpt2::CheckTokenizerFits(*in, (*sampler)->vocab()); !s.ok()) {
    return Fail(std::string(s.message()));
  }
  mnt::gpt2::RunTokenizerKind kind = mnt::gpt2::SettledTokenizer(*in, (*sampler)->vocab());
  // A smaller model of unknown origin: its ids are bytes as far as they go.
  if (kind == mnt::gpt2::RunTokenizerKind::kUnknown && (*sampler)->vocab() < 256) {
    kind = mnt::gpt2::RunTokenizerKind::kBytes;
  }
  const bool subwords = kind == mnt::gpt2::RunTokenizerKind::kSentencePiece;
  const std::string& tokenizer = in->tokenizer_model;
  if (kind == mnt::gpt2::RunTokenizerKind::kUnknown) {
    return Fail("this checkpoint has vocab " + std::to_string((*sampler)->vocab()) +
                " and its folder " + in->folder.dir +
                " has no tokenizer.model or saved config to say how text becomes tokens "
                "(byte-level runs have 256)");
  }
  // Which model speaks, on stderr (stdout is the text).
  std::fprintf(stderr, "sample: checkpoint %s (step %lld)\n", path.c_str(),
               static_cast<long long>(ckpt->step()));
  const std::string prompt = absl::GetFlag(FLAGS_prompt);
  if (subwords) std::fprintf(stderr, "sample: tokenizer %s\n", tokenizer.c_str());
  std::vector<int32_t> ids;
  if (subwords) {
    auto encoded = mnt::trainer::EncodeWithSentencePiece(tokenizer, prompt);
    if (!encoded.ok()) return Fail(std::string(encoded.status().message()));
    ids = *encoded;
  } else {
    for (unsigned char c : prompt) ids.push_back(c);
  }
  if (const std::string npy = absl::GetFlag(FLAGS_logits_out); !npy.empty()) {
    auto logits = (*sampler)->Logits(ids);
    if (!logits.ok()) return Fail(std::string(logits.status().message()));
    const int64_t vocab = (*sampler)->vocab();
    const int64_t rows = static_cast<int64_t>(logits->size()) / vocab;
    if (auto s = mnt::trainer::WriteFileAtomic(npy, Npy(*logits, rows, vocab)); !s.ok()) {
      return Fail(std::string(s.message()));
    }
    std::printf("wrote the logits of %lld positions x %lld tokens to %s\n",
                static_cast<long long>(rows), static_cast<long long>(vocab), npy.c_str());
    return 0;
  }
  mnt::gpt2::SampleOptions o;
  o.max_new_tokens = absl::GetFlag(FLAGS_tokens);
  o.temperature = static_cast<float>(temperature);
  o.top_k = absl::GetFlag(FLAGS_top_k);
  o.seed = absl::GetFlag(FLAGS_seed);
  auto out = (*sampler)->Generate(ids, o);
  if (!out.ok()) return Fail(std::string(out.status().message()));
  std::string text = prompt;
  if (subwords) {
    auto decoded = mnt::trainer::DecodeWithSentencePiece(tokenizer, *out);
    if (!decoded.ok()) return Fail(std::string(decoded.status().message()));
    text += *decoded;
  } else {
    for (int32_t t : *out) text.push_back(static_cast<char>(t));
  }
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fputc('\n', stdout);
  return 0;
}
